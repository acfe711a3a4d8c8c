#!/bin/sh
# SPDX-License-Identifier: MIT
# The interposed libc calls (src/interpose/, include/preon/interpose.h) must really be where h2o's and libpq's calls
# land: libh2o-evloop's writev, close, epoll_create, epoll_ctl and epoll_wait and libpq's send bind to the executable,
# not to libc. And they must be in preon alone: a unit test binary defines none of them.
# Usage: interpose.sh PREON_BINARY UNIT_TEST_BINARY
set -eu
status=0
"$(dirname "$0")/binds.sh" "$1" libh2o-evloop:writev libh2o-evloop:close libh2o-evloop:epoll_create \
    libh2o-evloop:epoll_ctl libh2o-evloop:epoll_wait libpq:send || status=1
defined=$(nm -D --defined-only "$2" | awk '{print $3}' | grep -xE 'writev|close|epoll_create|epoll_ctl|epoll_wait|send' || true)
if [ -n "$defined" ]; then
    echo "FAIL: $2 defines $(echo $defined): the interposed calls belong to preon and its drivers alone"
    status=1
else
    echo "ok: $2 defines none of the interposed calls"
fi
exit $status
