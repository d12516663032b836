#!/bin/sh
# bench/gateway/run.sh BUILD_DIR [options]: figure 11, the gateway at scale (scale.py has the
# method and the options). Called by bench/run.sh; prints "ROW|..." lines for its table.
# Debian's Python: it has python3-lmdb (the stack reads the cache to know when gwsyncd
# has written it).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" "$(dirname "$0")/scale.py" "$@"
