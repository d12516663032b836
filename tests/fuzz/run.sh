#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan+UBSan), replay every saved regression input,
# then fuzz each target for a bounded time from its seed corpus.
#   tests/fuzz/run.sh OUTDIR [SECONDS]
# A crash makes this exit non-zero and leaves the input in OUTDIR/crash-*; copy it into
# tests/fuzz/regress/<target>/ with the fix so it is replayed forever after.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: run.sh OUTDIR [SECONDS]}
secs=${2:-60}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! command -v clang >/dev/null; then
	echo "fuzz: clang not found, skipping" >&2
	exit 0
fi

sources=()
while IFS= read -r f; do
	sources+=("$f")
done < <(find "$src/agent" -name '*.c' ! -path "$src/agent/main.c" | sort)
flags=(-g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-D_GNU_SOURCE -DGWSYNC_VERSION='"fuzz"' -DPKGLIBDIR='"/nonexistent"' -DSYSCONFDIR='"/etc"'
	-I"$src/include" -I"$src/agent")
libs=$(pkg-config --cflags --libs libcurl jansson yaml-0.1 libmicrohttpd)

rc=0
for target in reply config; do
	bin="$out/fuzz_$target"
	# shellcheck disable=SC2086
	clang "${flags[@]}" "${sources[@]}" "$src/tests/fuzz/fuzz_$target.c" $libs -lpthread -ldl -o "$bin"
	corpus="$out/corpus_$target"
	mkdir -p "$corpus"
	cp -n "$src/tests/fuzz/corpus/$target/"* "$corpus/" 2>/dev/null || true
	[ "$target" = config ] && cp -n "$src/etc/gwsync.yaml" "$corpus/sample.yaml"
	regress=("$src/tests/fuzz/regress/$target/"*)
	if [ -e "${regress[0]}" ]; then
		echo "fuzz_$target: replaying ${#regress[@]} regression input(s)"
		"$bin" "${regress[@]}" >"$out/replay_$target.log" 2>&1 || { cat "$out/replay_$target.log"; rc=1; }
	fi
	echo "fuzz_$target: fuzzing for ${secs}s"
	if ! (cd "$out" && "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 "$corpus" >"$out/fuzz_$target.log" 2>&1); then
		tail -n 60 "$out/fuzz_$target.log"
		rc=1
	else
		grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$out/fuzz_$target.log" || true
	fi
done
exit $rc
