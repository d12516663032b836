#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan+UBSan) against the agent library, replay every
# saved regression input, then fuzz each target for a bounded time from its seed corpus.
#   tests/fuzz/run.sh OUTDIR [SECONDS]
#   tests/fuzz/run.sh --list          the targets, one line (dev.sh counts them)
# A crash makes this exit non-zero and leaves the input in OUTDIR/crash-*; copy it into
# tests/fuzz/regress/<target>/ with the fix so it is replayed forever after.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
# One parser each: fuzz_<target>.c in this directory.
TARGETS="reply config ws_message reparse etcd_watch itemdec nacos_listen node_values apollo_notifications apollo_release consul_kv"
TARGETS="$TARGETS polaris_reply"
if [ "${1:-}" = --list ]; then
	echo "$TARGETS"
	exit 0
fi
out=${1:?usage: run.sh OUTDIR [SECONDS]}
secs=${2:-60}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ! command -v clang >/dev/null; then
	echo "fuzz: clang not found, skipping" >&2
	exit 0
fi

# The targets link against the agent library of a build configured for fuzzing (clang,
# ASan+UBSan, coverage for libFuzzer), in OUTDIR/build; make keeps it up to date.
build="$out/build"
mkdir -p "$build"
if [ ! -f "$build/Makefile" ]; then
	(cd "$build" && CC=clang CFLAGS='-g -O1' "$src/configure" -q --enable-fuzzers \
		--enable-sanitizers=address)
fi
# shellcheck disable=SC2046
make -C "$build" -s -j"$(nproc 2>/dev/null || echo 2)" $(printf 'tests/fuzz/fuzz_%s ' $TARGETS) \
	2>"$out/build.log" || { cat "$out/build.log" >&2; exit 1; }
cat "$out/build.log" >&2
# configure gives clang only the warning flags it has (issue 21: GCC's -Wno-format-truncation
# made every file warn); a warning flag clang does not know fails the pass
if grep -q "unknown warning option" "$out/build.log"; then
	echo "fuzz: the build gave clang warning flags it does not know (configure.ac)" >&2
	exit 1
fi

rc=0
for target in $TARGETS; do
	bin="$build/tests/fuzz/fuzz_$target"
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
	# a target's dictionary (the words of its format), when it has one
	dict=()
	[ -f "$src/tests/fuzz/$target.dict" ] && dict=(-dict="$src/tests/fuzz/$target.dict")
	if ! (cd "$out" && "$bin" -max_total_time="$secs" -max_len=65536 -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" "$corpus" >"$out/fuzz_$target.log" 2>&1); then
		tail -n 60 "$out/fuzz_$target.log"
		rc=1
	else
		grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$out/fuzz_$target.log" || true
	fi
done
exit $rc
