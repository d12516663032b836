#!/bin/sh
# bench/nginx/run.sh BUILD_DIR [options]: figure 8, nginx requests/s routing from the LMDB
# cache against the same nginx proxying a fixed upstream (bench_nginx.py has the method).
# Called by bench/run.sh; prints "ROW|..." lines for its table. Debian's Python first: it
# has python3-lmdb (the stack reads the cache to know when gwsyncd has written it).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$(dirname "$0")/bench_nginx.py" "$@"
