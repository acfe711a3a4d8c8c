#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every test: installs what is missing (apt-get), builds preon four times — release with -Werror and ASan+UBSan
# (h2o and libpq from Debian's sources with preon's patches, scripts/sources/; built once, then cached), the libFuzzer
# targets, and the stock build on Debian's own h2o and libpq —, starts a private PostgreSQL in a temp folder on its
# own port, runs each build's tests with ctest, stops PostgreSQL, and ends with "N passed, N failed".
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
JOBS=$(nproc 2>/dev/null || echo 2)

"$REPO/scripts/deps.sh" test

echo "==> building release (build/) and ASan+UBSan (build-asan/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$JOBS" >/dev/null
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPREON_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$JOBS" >/dev/null
echo "==> building the libFuzzer targets with clang (build-fuzz/)"
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DPREON_FUZZ=ON \
    -DPREON_FUZZ_SECONDS="${PREON_FUZZ_SECONDS:-30}" >/dev/null
cmake --build build-fuzz -j"$JOBS" >/dev/null
echo "==> building the stock build on Debian's h2o and libpq as shipped (build-stock/)"
cmake -S . -B build-stock -DCMAKE_BUILD_TYPE=Release -DPREON_DEPS=system >/dev/null
cmake --build build-stock -j"$JOBS" >/dev/null

PGDIR=$(mktemp -d /tmp/preon-test-pg.XXXXXX)
chmod 755 "$PGDIR"
cleanup() { "$REPO/scripts/pg.sh" stop "$PGDIR" immediate; rm -rf "$PGDIR"; }
trap cleanup EXIT
PGPORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "==> PostgreSQL for the tests: $PGDIR, port $PGPORT"
PREON_PG_EXTRA_CONF="fsync = off" "$REPO/scripts/pg.sh" init "$PGDIR" "$PGPORT"
export PREON_TEST_PGDIR=$PGDIR
# The load and fault tests write what they measured here (python3 bench/reliability.py FILE prints it as a table).
export PREON_RECORD=$REPO/build/reliability.jsonl
rm -f "$PREON_RECORD"

# Any sanitizer report makes the process fail, and the harness also looks for reports in preon's output.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export LSAN_OPTIONS=suppressions=$REPO/tests/lsan.supp:print_suppressions=0

passed=0 failed=0 status=0
for dir in build build-asan build-fuzz build-stock; do
    echo "==> ctest in $dir"
    log=$(mktemp)
    (cd "$dir" && ctest --output-on-failure --timeout 300) 2>&1 | tee "$log" || status=1
    line=$(grep -E '[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
    if [ -n "$line" ]; then
        total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$line")
        nfail=$(sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/' <<<"$line")
        passed=$((passed + total - nfail))
        failed=$((failed + nfail))
    else
        failed=$((failed + 1))
        status=1
    fi
    rm -f "$log"
done
[ "$failed" -eq 0 ] || status=1
echo "==> measured by the load and fault tests: $PREON_RECORD (python3 bench/reliability.py $PREON_RECORD)"
echo "$passed passed, $failed failed"
exit $status
