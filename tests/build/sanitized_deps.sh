#!/bin/sh
# SPDX-License-Identifier: MIT
# The ASan build's libraries from Debian's sources (scripts/sources/build.sh --flavor sanitize) must be what they say:
# h2o and libpq instrumented by AddressSanitizer, and h2o compiled without its chunk recycling
# (scripts/sources/h2o/05-no-recycle.patch), or a use after free inside h2o would go unseen again.
# Usage: sanitized_deps.sh PREFIX
set -eu
prefix=$1
grep -q '^flavor sanitize$' "$prefix/versions.txt" || { echo "FAIL: $prefix is not the sanitize flavor"; exit 1; }
grep -q -- '-DH2O_PREON_NO_RECYCLE' "$prefix/versions.txt" || { echo "FAIL: h2o built with its recycling"; exit 1; }
for lib in libh2o-evloop.a libpq.a; do
    n=$(nm "$prefix/lib/$lib" 2>/dev/null | grep -c ' U __asan_report_' || true)
    [ "$n" -gt 0 ] || { echo "FAIL: $lib is not instrumented by ASan"; exit 1; }
    echo "ok: $lib instrumented ($n references to ASan's reports)"
done
# h2o_mem_free_recycle frees at once: its object code calls free() and keeps no free list
nm "$prefix/lib/libh2o-evloop.a" | grep -q ' T h2o_mem_free_recycle' || { echo "FAIL: no h2o_mem_free_recycle"; exit 1; }
echo "ok: h2o built without chunk recycling"
