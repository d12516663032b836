#!/usr/bin/env bash
# The quick-start demo (./dev.sh demo): the bundled admin emulator on 127.0.0.1:9095 with a
# realistic dataset, and gwsyncd with etc/gwsync.yaml, both in the foreground. A few seconds
# in, a rule is changed through the emulator's control interface so you can watch it
# arrive: in the log subscriber's lines and in the file subscriber's RULE.json.
# gwsyncd also fills the gateway's LMDB cache, and when nginx with its Lua module is installed
# the demo starts the gateway on it (tests/e2e/demo_gateway.py): nginx on 127.0.0.1:9080
# routing /demo/** to small upstream servers, and one route moved through the admin.
# Everything the demo writes stays under /tmp/gwsync-demo (its configuration is the sample
# etc/gwsync.yaml with state_dir moved there and the lmdb subscriber added).
# Ctrl-C stops everything cleanly.
#   tests/admin/demo.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
port=9095
admin="http://127.0.0.1:$port"
demo_dir=/tmp/gwsync-demo
config="$demo_dir/gwsync.yaml"
out_dir=$demo_dir/gateway
cache_dir=$demo_dir/cache
gateway_port=9080

export GWSYNC_PLUGIN_PATH="$build/plugins/log/.libs:$build/plugins/file/.libs:$build/plugins/lmdb/.libs"
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

# The demo's own configuration: the sample, with its state and the gateway's cache under
# $demo_dir (a demo must not leave snapshots in /var/lib/gwsync for a real agent to find).
rm -rf "$demo_dir"
mkdir -p "$demo_dir"
sed -e "s|^state_dir: .*|state_dir: $demo_dir/state|" "$src/etc/gwsync.yaml" >"$config"
cat >>"$config" <<EOF

  - name: gateway-cache     # the LMDB cache nginx routes from (contrib/nginx)
    library: lmdb
    config:
      path: $cache_dir
EOF
# Started as root, nginx runs its workers as nobody: give the cache directory their group
# (setgid, so gwsyncd's files inherit it), as contrib/nginx/README.md tells operators to.
if [ "$(id -u)" -eq 0 ] && getent group nogroup >/dev/null; then
	mkdir -p "$cache_dir" && chgrp nogroup "$cache_dir" && chmod 2750 "$cache_dir"
fi

say "starting the admin emulator on $admin (ShenYu mode, user admin)"
python3 "$src/tests/admin/emulator.py" --port "$port" --mode shenyu-legacy \
	--password "$GWSYNC_ADMIN_PASSWORD" &
pids+=($!)
for _ in $(seq 50); do
	curl -s -o /dev/null "$admin/_control/state" && break
	sleep 0.1
done

say "starting gwsyncd -c $config (files in $out_dir, LMDB cache in $cache_dir)"
"$build/gwsyncd" -c "$config" &
gw=$!
pids=("$gw" "${pids[@]}")

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's: python3-lmdb is installed for it
if command -v nginx >/dev/null; then
	"$py" "$src/tests/e2e/demo_gateway.py" "$admin" "$cache_dir" "$gateway_port" "$demo_dir" &
	pids=("$!" "${pids[@]}")
else
	say "no nginx: the gateway part is skipped (./dev.sh deps installs nginx and its Lua module)"
fi

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
say "gateway: curl -i localhost:$gateway_port/demo/hello   cache: $cache_dir"
say "running; Ctrl-C to stop"
wait "$gw" || true
