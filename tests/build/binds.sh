#!/bin/sh
# SPDX-License-Identifier: MIT
# Whether a shared library's calls bind to the executable's own definitions (the dynamic linker's own account:
# LD_DEBUG=bindings, LD_BIND_NOW so that every binding is made at start-up). Usage: binds.sh BINARY LIBRARY:SYMBOL...
# Prints ok or FAIL for each; exit 1 if any fails.
set -eu
bin=$1
shift
out=$(LD_BIND_NOW=1 LD_DEBUG=bindings "$bin" --version 2>&1)
status=0
for pair in "$@"; do
    lib=${pair%%:*}
    sym=${pair#*:}
    if printf '%s\n' "$out" | grep -q "$lib[^ ]* \[0\] to $bin \[0\]: normal symbol \`$sym'"; then
        echo "ok: $lib's $sym binds to $bin"
    else
        echo "FAIL: $lib's $sym does not bind to $bin:"
        printf '%s\n' "$out" | grep "$lib.*symbol \`$sym'" || echo "  (no binding of $sym from $lib at all)"
        status=1
    fi
done
exit $status
