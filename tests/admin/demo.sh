#!/usr/bin/env bash
# The quick-start demo (./dev.sh demo): the bundled admin emulator as documented (a ShenYu 2.7
# admin on 127.0.0.1:9095, user admin, the eight groups) and gwsyncd with etc/gwsync.yaml,
# both in the foreground. gwsyncd also fills the gateway's LMDB cache, and when nginx with its
# Lua module is installed the demo starts the gateway on it (tests/e2e/demo_gateway.py):
# nginx on 127.0.0.1:9080 routing /demo/** to small upstream servers. Its route is published
# before gwsyncd starts, so the agent's first sync holds it and nothing is removed under it.
# Then the demo waits for you: try the status endpoint and the gateway, press Enter, and a
# rule is edited and the route moved through the admin, so you watch one change arrive in
# the log subscriber's lines, the file subscriber's RULE.json and the gateway's answers.
# Without a terminal (a script, CI) it waits GWSYNC_DEMO_WAIT seconds (30) instead.
# Everything the demo writes stays under /tmp/gwsync-demo (its configuration is the sample
# etc/gwsync.yaml with the lmdb subscriber added; GWSYNC_DEMO_DIR names another directory).
# Ctrl-C, at any point, stops everything cleanly: gwsyncd first, with one SIGTERM (it runs in
# a session of its own, so the terminal's SIGINT does not reach it too), then the gateway,
# then the emulator (stopped before gwsyncd, it would make a normal stop log a failed poll).
# A clean stop removes the directory; when something failed it is kept, for its logs.
# GWSYNC_DEMO_GATEWAY=0 skips the gateway even when nginx is installed.
#   tests/admin/demo.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$src/build}
# GWSYNC_DEMO_SOURCE=nacos: the same demo against the Nacos emulator (tests/nacos/demo.sh)
if [ "${GWSYNC_DEMO_SOURCE:-admin}" = nacos ]; then
	exec "$src/tests/nacos/demo.sh" "$build"
fi
# GWSYNC_DEMO_SOURCE=polaris: the same against the Polaris emulator (tests/polaris/demo.py)
if [ "${GWSYNC_DEMO_SOURCE:-admin}" = polaris ]; then
	exec /usr/bin/python3 "$src/tests/polaris/demo.py" "$build"
fi
port=9095
admin="http://127.0.0.1:$port"
demo_dir=${GWSYNC_DEMO_DIR:-/tmp/gwsync-demo}
config="$demo_dir/gwsync.yaml"
out_dir=$demo_dir/gateway
cache_dir=$demo_dir/cache
gateway_port=9080

export GWSYNC_PLUGIN_PATH="$build/plugins/log/.libs:$build/plugins/file/.libs:$build/plugins/lmdb/.libs"
export GWSYNC_ADMIN_PASSWORD=${GWSYNC_ADMIN_PASSWORD:-123456}

say() { printf '\033[1;36m[demo] %s\033[0m\n' "$*" >&2; }

pids=() # gwsyncd, the gateway, the emulator: the order they are stopped in
made_dir=
# stop STATUS: one SIGTERM each, in turn, each waited for; then the directory. Exits.
stop() {
	local status=$1 rc failed=
	trap - INT TERM HUP EXIT
	say "stopping gwsyncd, then the gateway and the emulator"
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || continue
		rc=0
		wait "$p" 2>/dev/null || rc=$?
		[ "$rc" -eq 0 ] || [ "$rc" -eq 143 ] || failed=1 # 143: ended by our SIGTERM
	done
	if [ -n "$made_dir" ] && [ "$status" -le 0 ] && [ -z "$failed" ]; then
		rm -rf "$demo_dir"
		say "stopped; $demo_dir removed"
	elif [ -n "$made_dir" ]; then
		say "stopped; $demo_dir kept (something failed: its logs and state are there)"
	else
		say "stopped"
	fi
	[ "$status" -ge 0 ] || status=0
	exit "$status"
}
# Ctrl-C (or a TERM) is the normal way to end the demo: a clean stop, exit status 0.
trap 'stop -1' INT TERM HUP
trap 'stop $?' EXIT

if curl -s -o /dev/null "$admin/" 2>/dev/null; then
	say "something already listens on 127.0.0.1:$port; stop it first"
	exit 1
fi

# The demo's own configuration: the sample (whose state_dir and file output are under
# $demo_dir already: a demo must not leave snapshots in /var/lib/gwsync for a real agent to
# find), plus the gateway's cache.
rm -rf "$demo_dir"
mkdir -p "$demo_dir"
made_dir=1
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

# The emulator exactly as tests/admin/README.md documents it (its default mode: ShenYu 2.7,
# login, eight groups), which is what etc/gwsync.yaml is written for.
say "starting the admin emulator on $admin (ShenYu 2.7: user admin, eight groups)"
python3 "$src/tests/admin/emulator.py" --port "$port" --password "$GWSYNC_ADMIN_PASSWORD" &
pids+=($!)
for _ in $(seq 50); do
	curl -s -o /dev/null "$admin/_control/state" && break
	sleep 0.1
done

# wait_for FILE PID SECONDS: until FILE exists, PID has exited, or the time is up.
wait_for() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's: python3-lmdb is installed for it
gateway=
if [ "${GWSYNC_DEMO_GATEWAY:-1}" != 0 ] && command -v nginx >/dev/null; then
	"$py" "$src/tests/e2e/demo_gateway.py" "$admin" "$cache_dir" "$gateway_port" "$demo_dir" &
	gateway=$!
	pids=("$gateway" "${pids[@]}")
	# the route first, so the agent's first sync already holds it
	wait_for "$demo_dir/route-published" "$gateway" 30 || true
else
	say "no nginx: the gateway part is skipped (./dev.sh deps installs nginx and its Lua module)"
fi

say "starting gwsyncd -c $config (files in $out_dir, LMDB cache in $cache_dir)"
say "the log subscriber prints one line per item it receives (added, updated, removed) and one per version"
# In a session of its own: the terminal's Ctrl-C reaches the demo alone, which then stops
# gwsyncd with one SIGTERM (setsid execs in place here, so $! is gwsyncd).
setsid "$build/gwsyncd" -c "$config" &
gw=$!
pids=("$gw" "${pids[@]}")
for _ in $(seq 300); do
	curl -s -o /dev/null -f localhost:9196/healthz && break
	kill -0 "$gw" 2>/dev/null || break
	sleep 0.1
done
[ -z "$gateway" ] || wait_for "$demo_dir/gateway-ready" "$gateway" 60 || true

say "synced. Open the status page, http://127.0.0.1:9196/, or try, in another terminal:"
say "  curl -s localhost:9196/status            every server, group and subscriber (also /metrics, /healthz)"
[ -z "$gateway" ] || say "  curl -i localhost:$gateway_port/demo/hello         the gateway: answered by up-a"
say "  ls $out_dir          the file subscriber's GROUP.json files"
if [ -t 0 ]; then
	say "press Enter to edit a rule and move the route through the admin (Ctrl-C stops the demo)"
	read -r _ || true
else
	say "no terminal: changing a rule and moving the route in ${GWSYNC_DEMO_WAIT:-30} s"
	sleep "${GWSYNC_DEMO_WAIT:-30}"
fi
[ -z "$gateway" ] || kill -USR1 "$gateway" 2>/dev/null || true
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
[ -z "$gateway" ] || say "gateway: curl -i localhost:$gateway_port/demo/hello (now up-b)   cache: $cache_dir"
say "running: the status page is http://127.0.0.1:9196/; Ctrl-C to stop"
wait "$gw" || true
