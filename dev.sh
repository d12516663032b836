#!/usr/bin/env bash
# dev.sh: the two-command quick start and the developer loop.
#   ./dev.sh demo    build, start the admin emulator and gwsyncd (Ctrl-C stops both)
#   ./dev.sh check   build, then every test: unit + integration, an ASan+UBSan pass,
#                    the integration tests under TSan, and a bounded libFuzzer run
#   ./dev.sh build   just (re)build into ./build
#   ./dev.sh bench   optimised build, then the benchmarks (bench/README.md)
#   ./dev.sh deps    install missing build dependencies (Debian/Ubuntu, as root)
# Builds are out of tree (build/, build-asan/, build-tsan/) so they never step on each other.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
jobs=$(nproc 2>/dev/null || echo 2)

# What building and running needs, and what only the test suite adds.
BUILD_PACKAGES=(build-essential autoconf automake libtool pkg-config python3 curl
	libcurl4-openssl-dev libjansson-dev libyaml-dev check libmicrohttpd-dev liblmdb-dev
	libwebsockets-dev libssl-dev)
# The gateway tests run a real nginx with the Lua module (contrib/nginx) and read the LMDB
# cache from Python; wrk drives the gateway benchmark.
GATEWAY_PACKAGES=(nginx-light libnginx-mod-http-lua lua-resty-core lua-cjson luajit2
	python3-lmdb lmdb-utils wrk)
TEST_PACKAGES=(openssl clang clang-format valgrind "${GATEWAY_PACKAGES[@]}")

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

# deps [PACKAGE...]: install those of the build packages (and the given ones) not yet here.
deps() {
	local missing=()
	for p in "${BUILD_PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing missing packages: ${missing[*]}"
	local sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	# Packaged servers (nginx) must not start system-wide services on install: the tests
	# start their own, on free ports. A policy-rc.d saying "no" is Debian's way to ask.
	local policy=/usr/sbin/policy-rc.d added_policy=
	if [ ! -e $policy ] && [ -w /usr/sbin ]; then
		printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && added_policy=1
	fi
	local rc=0
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null || rc=$?
	[ -z "$added_policy" ] || rm -f $policy
	return $rc
}

bootstrap() {
	if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
		log "autoreconf"
		autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
	fi
}

# The tests' Python: Debian's own, whose modules (python3-lmdb) `deps` installs; a python3
# earlier on PATH (pyenv, a venv) would not see them.
PYTHON_ARG=()
[ -x /usr/bin/python3 ] && PYTHON_ARG=(PYTHON=/usr/bin/python3)

# configure_in DIR [configure args...]: configure once per DIR (again if the args change).
configure_in() {
	local dir=$1
	shift
	set -- "$@" "${PYTHON_ARG[@]}"
	mkdir -p "$dir"
	local want="$*"
	if [ ! -f "$dir/Makefile" ] || [ "$(cat "$dir/.configure-args" 2>/dev/null)" != "$want" ]; then
		log "configure $dir $want"
		(cd "$dir" && "$here/configure" -q "$@") || return 1
		printf '%s' "$want" >"$dir/.configure-args"
	fi
}

build() {
	deps
	bootstrap
	configure_in build --enable-werror CFLAGS="-g -O2"
	log "make"
	make -s -C build -j"$jobs"
}

# Prints automake's test summary and a closing "N passed, N failed" line.
summarize() {
	local dir=$1 pass fail
	pass=$(awk '/^# PASS:/ {print $3}' "$dir/test-suite.log" 2>/dev/null || echo 0)
	fail=$(awk '/^# (FAIL|ERROR|XPASS):/ {s += $3} END {print s + 0}' "$dir/test-suite.log" 2>/dev/null || echo 0)
	echo "$dir: ${pass:-0} passed, ${fail:-0} failed"
}

run_checks() {
	local dir=$1
	shift
	local rc=0
	make -s -C "$dir" -j"$jobs" check "$@" || rc=$?
	if [ $rc -ne 0 ] && [ -f "$dir/test-suite.log" ]; then
		cat "$dir/test-suite.log" >&2
	fi
	summarize "$dir"
	return $rc
}

check() {
	deps "${TEST_PACKAGES[@]}"
	build
	local rc=0 results=()
	if command -v clang-format >/dev/null; then
		log "clang-format"
		if git ls-files '*.c' '*.h' | xargs clang-format --dry-run -Werror 2>/dev/null; then
			results+=("format: 1 passed, 0 failed")
		else
			git ls-files '*.c' '*.h' | xargs clang-format --dry-run 2>&1 | head -20
			results+=("format: 0 passed, 1 failed")
			rc=1
		fi
	fi

	log "tests (unit + integration)"
	run_checks build || rc=1
	results+=("$(summarize build)")

	log "ASan+UBSan build and tests"
	configure_in build-asan --enable-werror --enable-sanitizers=address CFLAGS="-g -O1"
	make -s -C build-asan -j"$jobs"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_checks build-asan || rc=1
	results+=("$(summarize build-asan)")

	log "TSan build and integration tests"
	configure_in build-tsan --enable-werror --enable-sanitizers=thread CFLAGS="-g -O1"
	make -s -C build-tsan -j"$jobs"
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		run_checks build-tsan TESTS="\$(INTEGRATION_TESTS)" || rc=1
	results+=("$(summarize build-tsan)")

	log "fuzzing (libFuzzer, ${GWSYNC_FUZZ_SECONDS:-45}s per target)"
	if tests/fuzz/run.sh build-fuzz "${GWSYNC_FUZZ_SECONDS:-45}"; then
		results+=("fuzz: 2 passed, 0 failed")
	else
		results+=("fuzz: 0 passed, 2 failed")
		rc=1
	fi

	log "summary"
	local p=0 f=0
	for r in "${results[@]}"; do
		echo "$r"
		p=$((p + $(sed -E 's/.*: ([0-9]+) passed.*/\1/' <<<"$r")))
		f=$((f + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$r")))
	done
	echo "$p passed, $f failed"
	return $rc
}

demo() {
	deps "${GATEWAY_PACKAGES[@]}"
	build
	exec "$here/tests/admin/demo.sh" "$here/build"
}

bench() {
	deps
	bootstrap
	configure_in build-bench CFLAGS="-O2 -g -DNDEBUG"
	make -s -C build-bench -j"$jobs"
	exec "$here/bench/run.sh" "$here/build-bench"
}

case "${1:-}" in
deps) deps "${TEST_PACKAGES[@]}" ;;
build) build ;;
check) check ;;
demo) demo ;;
bench) bench ;;
*)
	sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
