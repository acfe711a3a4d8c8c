#!/bin/sh
# SPDX-License-Identifier: MIT
# The sanitizer build's preon must take the place of h2o's chunk recycling (src/server/norecycle.c): libh2o-evloop's
# calls to h2o_mem_alloc_recycle and h2o_mem_free_recycle bind to the executable, not to the library's own
# copies, or a write into a recycled chunk is invisible to ASan again. Usage: norecycle.sh PREON_BINARY
set -eu
bin=$1
out=$(LD_DEBUG=bindings "$bin" --version 2>&1)
status=0
for sym in h2o_mem_alloc_recycle h2o_mem_free_recycle; do
    if printf '%s\n' "$out" | grep -q "libh2o-evloop[^ ]* \[0\] to $bin \[0\]: normal symbol \`$sym'"; then
        echo "ok: libh2o-evloop's $sym binds to $bin"
    else
        echo "FAIL: libh2o-evloop's $sym does not bind to $bin:"
        printf '%s\n' "$out" | grep "symbol \`$sym'" || echo "  (no binding of $sym at all)"
        status=1
    fi
done
exit $status
