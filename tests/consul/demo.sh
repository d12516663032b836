#!/usr/bin/env bash
# The quick-start demo against Consul (GWSYNC_DEMO_SOURCE=consul ./dev.sh demo): the Consul
# KV emulator on 127.0.0.1:8500 (tests/consul/emulator.py), a dataset published into it as
# ShenYu's admin with `shenyu.sync.consul` writes it (publish.py), and gwsyncd with a
# consul: section and the sample's log and file subscribers, both in the foreground. Then
# a rule is edited through Consul (after Enter, or GWSYNC_DEMO_WAIT seconds without a
# terminal) and the change arrives through the blocking query. Everything stays under
# /tmp/gwsync-demo-consul. Ctrl-C stops everything cleanly.
#   tests/consul/demo.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
port=8500
consul="http://127.0.0.1:$port"
ns=649330b6-c2d7-4edc-be8e-8a54df9eb385
demo_dir=/tmp/gwsync-demo-consul
config="$demo_dir/gwsync.yaml"
out_dir=$demo_dir/gateway
export GWSYNC_PLUGIN_PATH="$build/plugins/log/.libs:$build/plugins/file/.libs"

say() { printf '\033[1;36m[demo] %s\033[0m\n' "$*" >&2; }

pids=()
cleanup() {
	trap - INT TERM EXIT
	say "stopping gwsyncd and the Consul emulator"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	say "stopped; $demo_dir kept (its configuration, state and output, to look at; the next demo starts it afresh)"
}
trap cleanup INT TERM EXIT

if curl -s -o /dev/null "$consul/" 2>/dev/null; then
	say "something already listens on 127.0.0.1:$port; stop it first"
	exit 1
fi
rm -rf "$demo_dir"
mkdir -p "$demo_dir"
cat >"$config" <<YAML
# gwsyncd following the Consul KV store ShenYu's admin writes to (docs/configuration.md#consul)
consul:
  servers: ["$consul"]
  namespace: $ns          # the root is {namespace}/shenyu, as the 2.7 admin writes it
  groups: [PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA, PROXY_SELECTOR, DISCOVER_UPSTREAM]
state_dir: $demo_dir/state
status:
  listen: 127.0.0.1:9196
subscribers:
  - name: log               # logs every change it receives
    library: log
  - name: gateway-files     # writes each group as a JSON file for the gateway to read
    library: file
    config:
      dir: $out_dir
YAML

say "starting the Consul KV emulator on $consul"
python3 "$src/tests/consul/emulator.py" --port "$port" &
pids+=($!)
for _ in $(seq 50); do
	curl -s -o /dev/null "$consul/v1/kv/x" && break
	sleep 0.1
done
python3 "$src/tests/consul/publish.py" load "$consul" "$ns"

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
say "  curl -s localhost:9196/status            the source (its revision is the Consul index)"
say "  curl -s '$consul/v1/kv/$ns/shenyu/?keys'   what the admin wrote"
say "  ls $out_dir          the file subscriber's GROUP.json files"
if [ -t 0 ]; then
	say "press Enter to edit a rule in Consul (Ctrl-C stops the demo)"
	read -r _ || true
else
	say "no terminal: changing a rule in ${GWSYNC_DEMO_WAIT:-30} s"
	sleep "${GWSYNC_DEMO_WAIT:-30}"
fi
python3 "$src/tests/consul/publish.py" edit "$consul" "$ns"
sleep 1
if grep -q "demo: edited at runtime" "$out_dir/RULE.json" 2>/dev/null; then
	say "the change arrived: $out_dir/RULE.json now holds the edited rule"
else
	say "the change has not reached $out_dir/RULE.json yet; watch the log lines"
fi
say "running; Ctrl-C to stop"
wait "$gw" || true
