#!/usr/bin/env bash
# bench/build.sh BUILD_DIR: compile the benchmark tools into BUILD_DIR/bench/ against an
# already built tree (libgwagent.a and the plugins come from `make` in BUILD_DIR).
# Plain cc, not automake: the tools are never installed and never part of `make check`,
# and this keeps the benchmarks usable on any build directory, optimised or not.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: bench/build.sh BUILD_DIR}" && pwd)
out=$build/bench
mkdir -p "$out"

cc=${CC:-cc}
cflags=(-std=c11 -O2 -g -D_GNU_SOURCE -pthread -Wall -Wextra ${BENCH_CFLAGS:-})

if [ ! -f "$build/libgwagent.la" ] || [ ! -x "$build/gwsyncd" ]; then
	echo "bench/build.sh: $build has no libgwagent.la or gwsyncd: run make there first" >&2
	exit 1
fi
# The libraries the agent's convenience library needs, from libtool's own record.
deps=$(. "$build/libgwagent.la" && echo "$dependency_libs")

"$cc" "${cflags[@]}" -I"$src/include" -fPIC -shared -fvisibility=hidden -o "$out/bench_sub.so" \
	"$src/bench/plugins/bench_sub.c"
"$cc" "${cflags[@]}" -DBENCH_SUB_FLAGS=0 -I"$src/include" -fPIC -shared -fvisibility=hidden \
	-o "$out/bench_sub_typed.so" "$src/bench/plugins/bench_sub.c"
"$cc" "${cflags[@]}" -o "$out/fastadmin" "$src/bench/fastadmin.c" "$src/bench/benchdata.c"
# shellcheck disable=SC2046
"$cc" "${cflags[@]}" -o "$out/floorclient" "$src/bench/floorclient.c" \
	"$src/bench/benchdata.c" $(pkg-config --cflags --libs libcurl)
# Agent headers are included by their path under agent/ ("config/config.h").
# shellcheck disable=SC2086
"$cc" "${cflags[@]}" -I"$src/agent" -I"$src/include" -o "$out/bench_inproc" \
	"$src/bench/bench_inproc.c" "$src/bench/benchdata.c" "$build/.libs/libgwagent.a" \
	$deps -ldl -lm
# shellcheck disable=SC2086
"$cc" "${cflags[@]}" -I"$src/agent" -I"$src/include" -o "$out/bench_cache" \
	"$src/bench/bench_cache.c" "$src/bench/benchdata.c" "$build/.libs/libgwagent.a" \
	$deps -ldl -lm
# figure 11 (bench/gateway/): the cache writer drives the lmdb plugin as the dispatcher does;
# the paced keep-alive load generator
# shellcheck disable=SC2086
"$cc" "${cflags[@]}" -I"$src/agent" -I"$src/include" -o "$out/cachewriter" \
	"$src/bench/cachewriter.c" "$src/bench/benchdata.c" "$build/.libs/libgwagent.a" \
	$deps -ldl -lm
"$cc" "${cflags[@]}" -o "$out/pacedload" "$src/bench/pacedload.c"
