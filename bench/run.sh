#!/usr/bin/env bash
# bench/run.sh BUILD_DIR: run every benchmark against an (optimised) build and print ONE
# table: figure, value, floor, ratio, target, met. `./dev.sh bench` builds build-bench/
# with -O2 and calls this. The figures are measurements, never pass/fail: the exit status
# only says whether every benchmark could run. See bench/README.md.
#
# Knobs (environment): BENCH_CHANGES (propagation rounds, 1000), BENCH_IDLE_SECONDS (60),
# BENCH_PROPAGATION_SECONDS (its time budget, 330), BENCH_ROUNDS (full-sync repetitions,
# 3), BENCH_ONE_CHANGES (figure 5 repetitions, 10),
# BENCH_CACHE_ROUNDS (figure 7 repetitions, 200),
# BENCH_CHANGES_100K (figure 1 with 100k rules, 100), BENCH_CHANGES_1K (figure 10's 1k
# rules, 300), BENCH_ONLY (a space-separated subset of: inproc growth propagation
# propagation100k propagation1k memory idle shutdown cache gateway fanout gatewayscale
# gatewaybounds events revoke resyncidle nacos apollo consul polaris),
# BENCH_CONSUL_CHANGES (issue 28's Consul figures: changes per variant and size, 20),
# GWSYNC_FANOUT (figure 9's number of agents, 100), BENCH_EVENT_CHANGES (figure 12's
# changes per source and size, 30); figure 11 (gatewayscale):
# BENCH_SCALE_SIZES (50x4,1000x10,10000x10), BENCH_SCALE_WORKERS (1,2), BENCH_SCALE_SECONDS
# (each paced run, 30), BENCH_SCALE_LUA (the router's Lua directory), BENCH_SCALE_WRITER
# (the build whose lmdb plugin and gwsyncd write the cache), BENCH_SCALE_ARGS (more
# options of bench/gateway/scale.py); figure 13 (revoke): BENCH_REVOKE_ARGS (options of
# bench/gateway/revoke.py: --size, --apps, --changes...).
set -uo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: bench/run.sh BUILD_DIR}" && pwd)
only=${BENCH_ONLY:-inproc growth idle propagation propagation100k propagation1k memory shutdown cache gateway fanout gatewayscale gatewaybounds events revoke resyncidle nacos apollo consul polaris}
results=$build/bench-results.txt

say() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

start=$(date +%s)
say "building the benchmark tools"
"$src/bench/build.sh" "$build" || exit 1

wants() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }

# Datasets are regenerated only when their generator changed (figures 8, 9 and 11 use none).
data=$build/bench-data
if [ -n "$(echo " $only " | sed 's/ gateway / /g; s/ fanout / /g; s/ gatewayscale / /g; s/ gatewaybounds / /g; s/ //g')" ] && {
	[ ! -f "$data/big/manifest" ] || [ "$src/bench/gendata.py" -nt "$data/big/manifest" ] ||
		[ "$src/tests/admin/dataset.py" -nt "$data/big/manifest" ]
}; then
	say "generating datasets into $data"
	python3 "$src/bench/gendata.py" "$data" || exit 1
fi

rc=0
: >"$results"
daemon_bench() {
	python3 "$src/bench/daemon.py" "$build" "$1" --changes "${BENCH_CHANGES:-1000}" \
		--budget "${BENCH_PROPAGATION_SECONDS:-330}" \
		--window "${BENCH_IDLE_SECONDS:-60}"
}

# The idle window (figure 4) is a minute of sleeping; the daemon it measures uses
# milliseconds of CPU, so it runs beside the in-process benchmarks instead of after them
# (CPU seconds of an idle process do not depend on what else runs; latencies would, so
# nothing else overlaps).
idle_pid=
if wants idle; then
	say "daemon benchmark: idle (in the background)"
	daemon_bench idle >"$results.idle" &
	idle_pid=$!
fi
if wants inproc; then
	say "figures 2 and 5: in-process full sync and one change (big dataset)"
	"$build/bench/bench_inproc" "$data/big" "$build/bench/bench_sub.so" \
		"${BENCH_ROUNDS:-3}" "${BENCH_ONE_CHANGES:-10}" | tee -a "$results" || rc=1
fi
if wants growth; then
	# figure 10 (the growth curve): the full sync of the 10k-rule dataset beside the big
	# one's above; only its "10." rows are kept. 1M items are not generated (see README).
	say "figure 10: full sync of 11,040 items (prop dataset)"
	"$build/bench/bench_inproc" "$data/prop" "$build/bench/bench_sub.so" \
		"${BENCH_ROUNDS:-3}" 1 | grep '^ROW|10\.' | tee -a "$results" || rc=1
fi
if [ -n "$idle_pid" ]; then
	wait "$idle_pid" || rc=1
	tee -a "$results" <"$results.idle"
	rm -f "$results.idle"
fi
for what in propagation memory shutdown; do
	wants "$what" || continue
	say "daemon benchmark: $what"
	daemon_bench "$what" | tee -a "$results" || rc=1
done
# figure 1 with 100,000 rules and figure 10's 1,000 rules: fewer rounds (a 100k round moves
# 51 MB twice), each within its own budget
if wants propagation100k; then
	say "daemon benchmark: propagation, 100,000 rules"
	BENCH_CHANGES=${BENCH_CHANGES_100K:-100} daemon_bench propagation100k |
		tee -a "$results" || rc=1
fi
if wants propagation1k; then
	say "daemon benchmark: propagation, 1,000 rules"
	BENCH_CHANGES=${BENCH_CHANGES_1K:-300} daemon_bench propagation1k | tee -a "$results" || rc=1
fi

if wants cache; then
	say "figure 7: the lmdb subscriber against the file subscriber (10k and 100k rules)"
	for set in prop:10k big:100k; do
		work=$(mktemp -d "$build/bench-cache.XXXXXX")
		"$build/bench/bench_cache" "$data/${set%%:*}" "$build/plugins/lmdb/.libs/lmdb.so" \
			"$build/plugins/file/.libs/file.so" "$work" "${BENCH_CACHE_ROUNDS:-200}" \
			"${set##*:}" | tee -a "$results" || rc=1
		rm -rf "$work"
	done
fi
if wants gateway; then
	say "figure 8: nginx routing from the cache against nginx proxying a fixed upstream"
	if [ -x "$src/bench/nginx/run.sh" ]; then
		"$src/bench/nginx/run.sh" "$build" | tee -a "$results" || rc=1
	else
		echo "figure 8 skipped: bench/nginx/run.sh missing" >&2
	fi
fi

if wants fanout; then
	# Debian's python3: the ZooKeeper writer is python3-kazoo (dist-packages)
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	say "figure 9: fan-out, ${GWSYNC_FANOUT:-100} agents on one admin emulator, one etcd, one ZooKeeper"
	"$py" "$src/bench/fanout.py" "$build" --agents "${GWSYNC_FANOUT:-100}" |
		tee -a "$results" || rc=1
fi

if wants gatewayscale; then
	say "figure 11: the gateway at scale (${BENCH_SCALE_SIZES:-50x4,1000x10,10000x10}, workers ${BENCH_SCALE_WORKERS:-1,2})"
	# shellcheck disable=SC2086
	"$src/bench/gateway/run.sh" "$build" --sizes "${BENCH_SCALE_SIZES:-50x4,1000x10,10000x10}" \
		--workers "${BENCH_SCALE_WORKERS:-1,2}" --seconds "${BENCH_SCALE_SECONDS:-30}" \
		${BENCH_SCALE_LUA:+--lua "$BENCH_SCALE_LUA"} \
		${BENCH_SCALE_WRITER:+--writer "$BENCH_SCALE_WRITER"} ${BENCH_SCALE_ARGS:-} |
		tee -a "$results" || rc=1
fi

if wants revoke; then
	say "figure 13: an app disabled or its secret rotated -> refused by every nginx worker"
	# shellcheck disable=SC2086
	/usr/bin/python3 "$src/bench/gateway/revoke.py" "$build" ${BENCH_REVOKE_ARGS:-} |
		tee -a "$results" || rc=1
	/usr/bin/python3 "$src/bench/gateway/signcatchup.py" | tee -a "$results" || rc=1
fi

if wants gatewaybounds; then
	# figure 11b: one request's worst case (a catastrophic regex, Ant pattern, large input,
	# a million conditions, the environment replaced) beside an ordinary routed request
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	say "figure 11b: what one request can cost the gateway"
	"$py" "$src/bench/gateway/bounds.py" ${BENCH_SCALE_LUA:+--lua "$BENCH_SCALE_LUA"} |
		tee -a "$results" || rc=1
fi

if wants resyncidle; then
	say "figure 14: what a short anti-entropy interval costs an idle agent"
	/usr/bin/python3 "$src/bench/resync_idle.py" "$build" | tee -a "$results" || rc=1
fi

if wants events; then
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	say "figure 12: a one-item change among 1k, 10k and 100k rules over WebSocket, ZooKeeper and etcd"
	"$py" "$src/bench/events.py" "$build" | tee -a "$results" || rc=1
fi

if wants nacos; then
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	say "figure 12, Nacos: a one-rule change among 1k, 10k and 100k rules against the Nacos emulator"
	"$py" "$src/bench/nacos.py" "$build" | tee -a "$results" || rc=1
	say "figure 9, Nacos: fan-out to ${GWSYNC_FANOUT:-100} agents from the Nacos emulator"
	"$py" "$src/bench/nacos.py" "$build" --fanout --agents "${GWSYNC_FANOUT:-100}" |
		tee -a "$results" || rc=1
fi

if wants apollo; then
	say "figure 12, Apollo: a one-rule change among 1k, 10k and 100k rules (full replies, then incremental)"
	"${py:-python3}" "$src/bench/apollo.py" "$build" | tee -a "$results" || rc=1
	"${py:-python3}" "$src/bench/apollo.py" "$build" --incremental | tee -a "$results" || rc=1
	say "figure 9, Apollo: fan-out to ${GWSYNC_FANOUT:-100} agents from the Apollo emulator"
	"${py:-python3}" "$src/bench/apollo.py" "$build" --fanout --agents "${GWSYNC_FANOUT:-100}" |
		tee -a "$results" || rc=1
fi

if wants consul; then
	say "issue 28: the Consul source at 1k, 10k and 100k rules (one recursive query, or the RULE directory's)"
	python3 "$src/bench/consul.py" "$build" | tee -a "$results" || rc=1
	say "issue 28: figure 9's fan-out row for Consul (${GWSYNC_FANOUT:-100} agents, the Consul KV emulator)"
	python3 "$src/bench/fanout_consul.py" "$build" | tee -a "$results" || rc=1
fi

if wants polaris; then
	py=python3
	[ -x /usr/bin/python3 ] && py=/usr/bin/python3
	say "figure 12, Polaris: a one-rule change among 1k, 10k and 100k rules against the Polaris emulator"
	"$py" "$src/bench/polaris.py" "$build" | tee -a "$results" || rc=1
	say "figure 9, Polaris: fan-out to ${GWSYNC_FANOUT:-100} agents from the Polaris emulator"
	"$py" "$src/bench/polaris.py" "$build" --fanout --agents "${GWSYNC_FANOUT:-100}" |
		tee -a "$results" || rc=1
fi

say "results"
echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo "took:    $(($(date +%s) - start)) s"
echo
python3 "$src/bench/table.py" <"$results"
exit $rc
