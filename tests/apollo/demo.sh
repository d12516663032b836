#!/usr/bin/env bash
# The demo with the Apollo source (GWSYNC_DEMO_SOURCE=apollo ./dev.sh demo): the Apollo
# config service emulator (tests/apollo/demo.py: ShenYu's data published into app shenyu,
# namespace application, with an access key) on 127.0.0.1:8080, and gwsyncd following it
# through an apollo: section, with the log and file subscribers, in the foreground. Then it
# waits for you (Enter; without a terminal GWSYNC_DEMO_WAIT seconds, 30), edits one rule in
# Apollo and shows it arriving. Everything stays under /tmp/gwsync-demo-apollo. Ctrl-C stops.
#   tests/apollo/demo.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
port=8080
demo_dir=/tmp/gwsync-demo-apollo
config="$demo_dir/gwsync.yaml"
out_dir=$demo_dir/gateway
secret_file=$demo_dir/apollo-secret

export GWSYNC_PLUGIN_PATH="$build/plugins/log/.libs:$build/plugins/file/.libs"
say() { printf '\033[1;36m[demo] %s\033[0m\n' "$*" >&2; }

pids=()
cleanup() {
	trap - INT TERM EXIT
	say "stopping gwsyncd and the emulator"
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
mkdir -p "$demo_dir"
head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret_file"
chmod 600 "$secret_file"
cat >"$config" <<EOF2
apollo:
  servers: [ "http://127.0.0.1:$port" ]
  app_id: shenyu
  cluster: default
  namespace: application
  secret_file: $secret_file   # the app's access key: every request is signed
  groups: [ PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA, PROXY_SELECTOR, DISCOVER_UPSTREAM ]
state_dir: $demo_dir/state
log: { level: info }
status: { listen: "127.0.0.1:9196" }
subscribers:
  - name: log
    library: log
  - name: gateway-files
    library: file
    config: { dir: $out_dir }
EOF2

say "starting the Apollo config service emulator on 127.0.0.1:$port"
python3 "$src/tests/apollo/demo.py" "$port" "$(cat "$secret_file")" &
emu=$!
pids+=("$emu")
for _ in $(seq 100); do
	curl -s -o /dev/null "http://127.0.0.1:$port/services/config" && break
	sleep 0.1
done

say "starting gwsyncd -c $config (files in $out_dir)"
"$build/gwsyncd" -c "$config" &
gw=$!
pids=("$gw" "${pids[@]}")
for _ in $(seq 300); do
	curl -s -o /dev/null -f localhost:9196/healthz && break
	kill -0 "$gw" 2>/dev/null || break
	sleep 0.1
done
say "synced. Try, in another terminal:"
say "  curl -s localhost:9196/status      the Apollo connection (notification id as revision), groups, subscribers"
say "  ls $out_dir          the file subscriber's GROUP.json files"
if [ -t 0 ]; then
	say "press Enter to edit a rule in Apollo (Ctrl-C stops the demo)"
	read -r _ || true
else
	say "no terminal: changing a rule in ${GWSYNC_DEMO_WAIT:-30} s"
	sleep "${GWSYNC_DEMO_WAIT:-30}"
fi
kill -USR1 "$emu"
sleep 1.5
if grep -q "demo: edited at runtime" "$out_dir/RULE.json" 2>/dev/null; then
	say "the change arrived: $out_dir/RULE.json now holds the edited rule"
else
	say "the change has not reached $out_dir/RULE.json yet; watch the log lines"
fi
say "running; Ctrl-C to stop"
wait "$gw" || true
