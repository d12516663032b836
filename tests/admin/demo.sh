#!/usr/bin/env bash
# The quick-start demo (./dev.sh demo): the bundled admin emulator on 127.0.0.1:9095 with a
# realistic dataset, and gwsyncd with etc/gwsync.yaml, both in the foreground. A few seconds
# in, a rule is changed through the emulator's control interface so you can watch it
# arrive: in the log subscriber's lines and in the file subscriber's RULE.json.
# Ctrl-C stops both cleanly.
#   tests/admin/demo.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
port=9095
admin="http://127.0.0.1:$port"
config="$src/etc/gwsync.yaml"
out_dir=/tmp/gwsync-demo/gateway

export GWSYNC_PLUGIN_PATH="$build/plugins/log/.libs:$build/plugins/file/.libs"
export GWSYNC_ADMIN_PASSWORD=${GWSYNC_ADMIN_PASSWORD:-123456}

say() { printf '\033[1;36m[demo] %s\033[0m\n' "$*" >&2; }

pids=()
cleanup() {
	trap - INT TERM EXIT
	say "stopping gwsyncd and the emulator"
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	say "stopped"
}
trap cleanup INT TERM EXIT

if curl -s -o /dev/null "$admin/" 2>/dev/null; then
	say "something already listens on 127.0.0.1:$port; stop it first"
	exit 1
fi

say "starting the admin emulator on $admin (ShenYu mode, user admin)"
python3 "$src/tests/admin/emulator.py" --port "$port" --mode shenyu-legacy \
	--password "$GWSYNC_ADMIN_PASSWORD" &
pids+=($!)
for _ in $(seq 50); do
	curl -s -o /dev/null "$admin/_control/state" && break
	sleep 0.1
done

say "starting gwsyncd -c etc/gwsync.yaml (file subscriber writes to $out_dir)"
"$build/gwsyncd" -c "$config" &
gw=$!
pids=("$gw" "${pids[@]}")

sleep 3
say "changing a rule through the emulator..."
python3 - "$admin" <<'PY'
import json, sys, urllib.request
admin = sys.argv[1]
rules = json.load(urllib.request.urlopen(admin + "/_control/data?group=RULE"))["data"]
rule = dict(rules[0])
rule["name"] = "demo: edited at runtime"
rule["sort"] = (rule.get("sort") or 0) + 1
req = urllib.request.Request(admin + "/_control/upsert", method="POST",
                             data=json.dumps({"group": "RULE", "item": rule}).encode(),
                             headers={"Content-Type": "application/json"})
v = json.load(urllib.request.urlopen(req))
print("[demo] RULE %s is now '%s' (version %s)" % (rule["id"], rule["name"], v["md5"]),
      file=sys.stderr)
PY
sleep 1
if grep -q "demo: edited at runtime" "$out_dir/RULE.json" 2>/dev/null; then
	say "the change arrived: $out_dir/RULE.json now holds the edited rule"
else
	say "the change has not reached $out_dir/RULE.json yet; watch the log lines"
fi
say "status: curl -s localhost:9196/status   metrics: curl -s localhost:9196/metrics"
say "running; Ctrl-C to stop"
wait "$gw" || true
