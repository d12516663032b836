#!/usr/bin/env bash
# bench/run.sh BUILD_DIR: run every benchmark against an (optimised) build and print ONE
# table: figure, value, floor, ratio, target, met. `./dev.sh bench` builds build-bench/
# with -O2 and calls this. The figures are measurements, never pass/fail: the exit status
# only says whether every benchmark could run. See bench/README.md.
#
# Knobs (environment): BENCH_CHANGES (propagation rounds, 1000), BENCH_IDLE_SECONDS (60),
# BENCH_ROUNDS (full-sync repetitions, 3), BENCH_ONE_CHANGES (figure 5 repetitions, 10),
# BENCH_ONLY (a space-separated subset of: inproc propagation memory idle).
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: bench/run.sh BUILD_DIR}" && pwd)
only=${BENCH_ONLY:-inproc propagation memory idle}
results=$build/bench-results.txt

say() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

start=$(date +%s)
say "building the benchmark tools"
"$src/bench/build.sh" "$build" || exit 1

# Datasets are regenerated only when their generator changed.
data=$build/bench-data
if [ ! -f "$data/big/manifest" ] || [ "$src/bench/gendata.py" -nt "$data/big/manifest" ] ||
	[ "$src/tests/admin/dataset.py" -nt "$data/big/manifest" ]; then
	say "generating datasets into $data"
	python3 "$src/bench/gendata.py" "$data" || exit 1
fi

rc=0
: >"$results"
for what in $only; do
	case $what in
	inproc)
		say "figures 2 and 5: in-process full sync and one change (big dataset)"
		"$build/bench/bench_inproc" "$data/big" "$build/bench/bench_sub.so" \
			"${BENCH_ROUNDS:-3}" "${BENCH_ONE_CHANGES:-10}" | tee -a "$results" || rc=1
		;;
	propagation | memory | idle)
		say "daemon benchmark: $what"
		python3 "$src/bench/daemon.py" "$build" "$what" --changes "${BENCH_CHANGES:-1000}" \
			--window "${BENCH_IDLE_SECONDS:-60}" | tee -a "$results" || rc=1
		;;
	*)
		echo "bench/run.sh: unknown benchmark '$what'" >&2
		rc=1
		;;
	esac
done

say "results"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "took:    $(($(date +%s) - start)) s"
echo
python3 "$src/bench/table.py" <"$results"
exit $rc
