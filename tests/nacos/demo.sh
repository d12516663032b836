#!/usr/bin/env bash
# The quick-start demo against Nacos (GWSYNC_DEMO_SOURCE=nacos ./dev.sh demo): the Nacos
# emulator (tests/nacos/nacos_emulator.py) on 127.0.0.1:8848 holding a ShenYu 2.7 dataset as
# the admin publishes it (list keys and item keys, user nacos), and gwsyncd with a nacos:
# section, its log and file subscribers, both in the foreground. Press Enter (or wait
# GWSYNC_DEMO_WAIT seconds without a terminal) and the admin makes one random edit: watch it
# arrive in the log lines and in /tmp/gwsync-demo-nacos/out/*.json. Ctrl-C stops both.
#   tests/nacos/demo.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
port=8848
demo_dir=/tmp/gwsync-demo-nacos
export GWSYNC_PLUGIN_PATH="$build/plugins/log/.libs:$build/plugins/file/.libs:$build/plugins/lmdb/.libs"
export GWSYNC_NACOS_PASSWORD=${GWSYNC_NACOS_PASSWORD:-nacos-demo}

say() { printf '\033[1;36m[demo] %s\033[0m\n' "$*" >&2; }

pids=()
cleanup() {
	trap - INT TERM EXIT
	say "stopping gwsyncd and the Nacos emulator"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	say "stopped; $demo_dir kept (its configuration, state and output, to look at; the next demo starts it afresh)"
}
trap cleanup INT TERM EXIT

if curl -s -o /dev/null "http://127.0.0.1:$port/" 2>/dev/null; then
	say "something already listens on 127.0.0.1:$port; stop it first"
	exit 1
fi
rm -rf "$demo_dir"
mkdir -p "$demo_dir/out"
cat >"$demo_dir/gwsync.yaml" <<YAML
nacos:
  servers: ["http://127.0.0.1:$port"]
  username: nacos
  password: \${GWSYNC_NACOS_PASSWORD}
  groups: [PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA, PROXY_SELECTOR, DISCOVER_UPSTREAM]
state_dir: $demo_dir/state
status:
  listen: 127.0.0.1:9200
subscribers:
  - name: log
    library: log
  - name: files
    library: file
    config:
      dir: $demo_dir/out
YAML

say "starting the Nacos emulator on 127.0.0.1:$port (user nacos, ShenYu 2.7 node layout)"
python3 "$src/tests/nacos/nacos_emulator.py" --port "$port" --username nacos \
	--password "$GWSYNC_NACOS_PASSWORD" &
pids+=($!)
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	sleep 0.1
done
say "starting gwsyncd -c $demo_dir/gwsync.yaml (status: http://127.0.0.1:9200/status)"
"$build/gwsyncd" -c "$demo_dir/gwsync.yaml" &
pids+=($!)
sleep 2
while :; do
	if [ -t 0 ]; then
		say "press Enter for an admin edit (Ctrl-C stops)"
		read -r || break
	else
		sleep "${GWSYNC_DEMO_WAIT:-30}"
	fi
	say "admin edit: $(curl -s -X POST "http://127.0.0.1:$port/_control/edit")"
	[ -t 0 ] || break
done
