#!/usr/bin/env bash
# dev.sh: the two-command quick start and the developer loop.
#   ./dev.sh demo    build, start the admin emulator and gwsyncd (Ctrl-C stops both);
#                    GWSYNC_DEMO_SOURCE=nacos|apollo|consul|polaris: that emulator instead
#   ./dev.sh test    build, then the unit and integration tests once: the everyday loop,
#                    ~5 minutes on 2 cores (check is the whole of it, what CI runs)
#   ./dev.sh check   build, then every test: unit + integration, an ASan+UBSan pass,
#                    the integration tests under TSan, the Debian packages (built, then
#                    installed, run and purged on THIS machine, as root) and a bounded
#                    libFuzzer run: ~25-30 minutes on 2 cores. It installs missing build and
#                    test packages (kept), and otherwise leaves the machine as it found it
#   ./dev.sh build   just (re)build into ./build
#   ./dev.sh bench   optimised build, then the benchmarks (bench/README.md)
#   ./dev.sh package build the Debian packages gwsync and gwsync-dev into dist/ (lintian-checked)
#   ./dev.sh deps    install missing build and test dependencies (Debian/Ubuntu, as root),
#                    the ZooKeeper C client and the test servers (zookeeper, a JRE, kazoo) too
# Builds are out of tree (build/, build-asan/, build-tsan/) so they never step on each other.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
jobs=$(nproc 2>/dev/null || echo 2)

# What building and running needs, and what only the test suite adds.
BUILD_PACKAGES=(build-essential autoconf automake libtool pkg-config python3 curl
	libcurl4-openssl-dev libjansson-dev libyaml-dev check liblmdb-dev
	libwebsockets-dev libssl-dev libzookeeper-mt-dev)
# The gateway tests run a real nginx with the Lua module (contrib/nginx) and read the LMDB
# cache from Python; wrk drives the gateway benchmark.
GATEWAY_PACKAGES=(nginx-light libnginx-mod-http-lua lua-resty-core lua-cjson luajit2 libxxhash0
	python3-lmdb lmdb-utils wrk)
# Building and checking the Debian packages (debian/control's Build-Depends are the
# BUILD_PACKAGES above).
PACKAGE_TOOLS=(dpkg-dev debhelper fakeroot lintian)
# The path-store sources' tests start real servers from Debian's packages: ZooKeeper (a
# standalone server and an ensemble; a Java runtime) and etcd (one member and a cluster),
# and publish to them as ShenYu's admin writes (kazoo for ZooKeeper).
KV_TEST_PACKAGES=(zookeeper default-jre-headless python3-kazoo etcd-server etcd-client)
# promtool (Debian's prometheus package) checks and unit-tests contrib/prometheus's alerting
# rules; the server it also brings is never started (policy-rc.d in deps()).
MONITORING_TEST_PACKAGES=(prometheus)
# The status page is tested in a real browser: headless Chromium driven through chromedriver
# (tests/integration/test_status_page.py).
BROWSER_TEST_PACKAGES=(chromium chromium-driver)
TEST_PACKAGES=(openssl clang clang-format valgrind "${GATEWAY_PACKAGES[@]}" "${PACKAGE_TOOLS[@]}"
	"${KV_TEST_PACKAGES[@]}" "${MONITORING_TEST_PACKAGES[@]}" "${BROWSER_TEST_PACKAGES[@]}")

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
	# An in-tree ./configure (the classic bootstrap) makes every out-of-tree build fail
	# with "source directory already configured": builds here are out of tree, so undo it.
	if [ -f config.status ]; then
		log "the source directory was configured in place: make distclean (builds go to build/)"
		make -s distclean >/dev/null 2>&1 || rm -f config.status config.log Makefile libtool gwsync.pc
	fi
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

# Each pass of `check` adds one line "NAME: N passed, N skipped, N failed (TIME)[; NOTE]".
results=()
elapsed() { local s=$(($(date +%s) - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
record() { # record NAME PASSED SKIPPED FAILED START [NOTE]
	results+=("$1: $2 passed, $3 skipped, $4 failed ($(elapsed "$5"))${6:+; $6}")
}

# record_suite NAME DIR START: automake's counts from DIR/test-suite.log, plus the test cases
# that Python files skipped inside (a file counts once in automake's figures).
record_suite() {
	local name=$1 dir=$2 start=$3 pass=0 skip=0 fail=0 inner=0 log=$2/test-suite.log
	if [ -f "$log" ]; then
		pass=$(awk '/^# PASS:/ {print $3}' "$log")
		skip=$(awk '/^# SKIP:/ {print $3}' "$log")
		fail=$(awk '/^# (FAIL|ERROR|XPASS):/ {s += $3} END {print s + 0}' "$log")
		inner=$(find "$dir/tests" -name '*.log' -exec grep -ho 'skipped=[0-9]*' {} + 2>/dev/null |
			awk -F= '{s += $2} END {print s + 0}')
	else
		fail=1
	fi
	local note=
	[ "${inner:-0}" -gt 0 ] && note="$inner test cases skipped inside passing files"
	if [ -n "$(ls -A "$dir/test-tmp" 2>/dev/null)" ]; then
		fail=$((fail + 1)) # run_checks listed them
		note="${note:+$note; }files left behind in $dir/test-tmp"
	fi
	record "$name" "${pass:-0}" "${skip:-0}" "${fail:-0}" "$start" "$note"
}

run_checks() {
	local dir=$1
	shift
	local rc=0
	# A private TMPDIR per pass: a test run must leave nothing behind, and this is where
	# anything it left would be found (and reported as a failure).
	local tmp="$here/$dir/test-tmp"
	rm -rf "$tmp" && mkdir -p "$tmp"
	TMPDIR=$tmp make -s -C "$dir" -j"$jobs" check "$@" || rc=$?
	if [ $rc -ne 0 ] && [ -f "$dir/test-suite.log" ]; then
		cat "$dir/test-suite.log" >&2
	fi
	if [ -n "$(ls -A "$tmp")" ]; then
		echo "$dir: the tests left files behind in $tmp:" >&2
		ls -A "$tmp" | head -20 >&2
		rc=1
	fi
	return $rc
}

# package: the Debian packages from the sources git knows (edits included, never a build's
# products), built once in a temporary copy, into dist/; then lintian. DEB_BUILD_OPTIONS
# defaults to nocheck (the unit tests are ./dev.sh check's first pass).
have_package_tools() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null &&
		command -v dpkg-parsechangelog >/dev/null
}
package() {
	local version tmp src rc=0
	version=$(dpkg-parsechangelog -l debian/changelog -S Version)
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/gwsync-package.XXXXXX")
	src=$tmp/gwsync-$version
	mkdir -p "$src"
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files -z | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src"
	else
		tar --exclude='./build*' --exclude=./dist --exclude=./debian/build --exclude=./.git \
			-cf - . | tar -xf - -C "$src"
	fi
	log "dpkg-buildpackage -us -uc -b (log: dist/build.log)"
	mkdir -p dist
	rm -f dist/gwsync_*.deb dist/gwsync-dev_*.deb
	(cd "$src" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-nocheck} parallel=$jobs noautodbgsym" \
		nice dpkg-buildpackage -us -uc -b) >dist/build.log 2>&1 || rc=$?
	if [ $rc -eq 0 ]; then
		mv "$tmp"/gwsync_*.deb "$tmp"/gwsync-dev_*.deb dist/
		ls dist/*.deb
		if command -v lintian >/dev/null; then
			log "lintian"
			local out
			local lrc=0
			out=$(lintian --fail-on error,warning dist/gwsync_*.deb dist/gwsync-dev_*.deb 2>&1) || lrc=$?
			out=$(grep -v 'running with root privileges' <<<"$out" || true)
			if [ $lrc -ne 0 ]; then
				printf '%s\n' "$out"
				rc=$lrc
			elif [ -n "$out" ]; then
				printf '%s\n' "$out"
				echo "lintian: passed (the notes above are below warning)"
			else
				echo "lintian: clean"
			fi
		fi
	else
		tail -n 40 dist/build.log >&2
	fi
	rm -rf "$tmp"
	return $rc
}

# Fuzzing is time-boxed as a whole (GWSYNC_FUZZ_BUDGET seconds, default 210, shared by the
# targets, at least 10 s each; GWSYNC_FUZZ_SECONDS sets a per-target time instead): a new
# parser adds a target, not minutes to every CI run. fuzz_start runs it in the background
# (output in build-fuzz/run.out), fuzz_finish waits for it, shows its output and records it.
fuzz_pid= fuzz_t= fuzz_per= fuzz_targets=
fuzz_start() {
	fuzz_t=$(date +%s)
	fuzz_targets=$(tests/fuzz/run.sh --list)
	local n
	n=$(wc -w <<<"$fuzz_targets")
	fuzz_per=${GWSYNC_FUZZ_SECONDS:-$((${GWSYNC_FUZZ_BUDGET:-210} / n))}
	[ "$fuzz_per" -ge 10 ] || fuzz_per=10
	command -v clang >/dev/null || return 0
	mkdir -p build-fuzz
	tests/fuzz/run.sh build-fuzz "$fuzz_per" >build-fuzz/run.out 2>&1 &
	fuzz_pid=$!
}
fuzz_finish() {
	local n frc=0
	n=$(wc -w <<<"$fuzz_targets")
	log "fuzzing (libFuzzer, ${fuzz_per}s per target, $n targets, beside the TSan pass)"
	if [ -z "$fuzz_pid" ]; then
		record fuzz 0 "$n" 0 "$fuzz_t" "clang not installed"
		return 0
	fi
	wait "$fuzz_pid" || frc=$?
	cat build-fuzz/run.out
	if [ $frc -eq 0 ]; then
		record fuzz "$n" 0 0 "$fuzz_t" "$(sed 's/\([a-z_]*\)/fuzz_\1/g; s/ /, /g' <<<"$fuzz_targets")"
		return 0
	fi
	local bad
	bad=$(grep -l -E '^==[0-9]+==ERROR|^SUMMARY: ' build-fuzz/fuzz_*.log build-fuzz/replay_*.log 2>/dev/null |
		sed -E 's#.*/(fuzz|replay)_([a-z_]+)\.log#\2#' | sort -u | wc -l)
	[ "$bad" -ge 1 ] || bad=1
	record fuzz $((n - bad)) 0 "$bad" "$fuzz_t"
	return 1
}

check() {
	deps "${TEST_PACKAGES[@]}"
	local rc=0 t
	t=$(date +%s)
	build
	record build 1 0 0 "$t"
	if command -v clang-format >/dev/null; then
		log "clang-format"
		t=$(date +%s)
		if git ls-files '*.c' '*.h' | xargs clang-format --dry-run -Werror 2>/dev/null; then
			record format 1 0 0 "$t"
		else
			git ls-files '*.c' '*.h' | xargs clang-format --dry-run 2>&1 | head -20
			record format 0 0 1 "$t"
			rc=1
		fi
	else
		record format 0 1 0 "$(date +%s)" "clang-format not installed"
	fi

	log "tests (unit + integration)"
	t=$(date +%s)
	run_checks build || rc=1
	record_suite tests build "$t"

	log "ASan+UBSan build and tests"
	t=$(date +%s)
	configure_in build-asan --enable-werror --enable-sanitizers=address CFLAGS="-g -O1"
	make -s -C build-asan -j"$jobs"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_checks build-asan || rc=1
	record_suite asan build-asan "$t"

	log "TSan build and integration tests"
	t=$(date +%s)
	configure_in build-tsan --enable-werror --enable-sanitizers=thread CFLAGS="-g -O1"
	make -s -C build-tsan -j"$jobs"
	# The fuzzing runs beside the TSan pass and the packages (its output kept apart and
	# shown after them): one libFuzzer process on one core while the integration tests
	# mostly wait on their servers, so CI's time is not the sum of the two.
	fuzz_start
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
		run_checks build-tsan TESTS="\$(INTEGRATION_TESTS)" || rc=1
	record_suite tsan build-tsan "$t"

	# The packages: built once (dist/), then installed, run and purged on this machine by
	# tests/package/test_package.py (root only; it skips, saying why, where a gwsync is
	# installed already). It puts the machine back as it found it, the system user gwsync
	# and its lock file included, and fails naming anything it could not
	# (tests/package/machine.py says why on the machine itself and not in a throwaway root).
	t=$(date +%s)
	if have_package_tools; then
		log "Debian packages: build, lintian, install, run, remove"
		if package; then
			local out prc=0
			out=$(GWSYNC_DEB_DIR="$here/dist" GWSYNC_SRCDIR="$here" /usr/bin/python3 \
				tests/package/test_package.py 2>&1) || prc=$?
			printf '%s\n' "$out" | tail -n 40
			local ran skipped
			ran=$(sed -nE 's/^Ran ([0-9]+) tests?.*/\1/p' <<<"$out" | tail -1)
			skipped=$(sed -nE 's/.*skipped=([0-9]+).*/\1/p' <<<"$out" | tail -1)
			ran=${ran:-0} skipped=${skipped:-0}
			if [ $prc -eq 0 ]; then
				record packages $((1 + ran - skipped)) "$skipped" 0 "$t" "the build + lintian, then the install test's cases"
			else
				record packages $((1 + ran - skipped - 1)) "$skipped" 1 "$t"
				rc=1
			fi
		else
			record packages 0 0 1 "$t" "dpkg-buildpackage or lintian failed (dist/build.log)"
			rc=1
		fi
	else
		log "Debian packages: skipped (no dpkg-buildpackage/debhelper; ./dev.sh deps installs them)"
		record packages 0 1 0 "$t" "no dpkg-buildpackage/debhelper"
	fi

	fuzz_finish || rc=1

	summary
	return $rc
}

summary() {
	log "summary"
	local p=0 f=0 r
	for r in "${results[@]}"; do
		echo "$r"
		p=$((p + $(sed -E 's/^[^:]*: ([0-9]+) passed.*/\1/' <<<"$r")))
		f=$((f + $(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$r")))
	done
	echo "$p passed, $f failed"
}

# test: the everyday loop, check's first two passes only (no sanitizers, packages or fuzzing).
quick_test() {
	deps "${TEST_PACKAGES[@]}"
	local rc=0 t
	t=$(date +%s)
	build
	record build 1 0 0 "$t"
	log "tests (unit + integration)"
	t=$(date +%s)
	run_checks build || rc=1
	record_suite tests build "$t"
	summary
	return $rc
}

demo() {
	# GWSYNC_DEMO_SOURCE=consul: the same demo against the Consul KV emulator
	if [ "${GWSYNC_DEMO_SOURCE:-}" = consul ]; then build && exec "$here/tests/consul/demo.sh" "$here/build"; fi
	deps "${GATEWAY_PACKAGES[@]}"
	build
	# GWSYNC_DEMO_SOURCE=apollo: the same demo against the Apollo config service emulator
	[ "${GWSYNC_DEMO_SOURCE:-}" != apollo ] || exec "$here/tests/apollo/demo.sh" "$here/build"
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
package)
	deps "${PACKAGE_TOOLS[@]}"
	package
	;;
build) build ;;
check) check ;;
test) quick_test ;;
demo) demo ;;
bench) bench ;;
*)
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
	;;
esac
