#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs preon on :8080 against a private PostgreSQL kept in .pgdata/ (git-ignored): installs what is missing
# (apt-get), builds, creates the cluster and loads sql/ the first time (later runs reuse it), starts it, and
# runs preon in the foreground. Ctrl-C stops preon, then the cluster.
# Env: PREON_DEV_PG_PORT (default 25432: below Linux's ephemeral port range, so no client socket holds it) for the
# cluster's port; any PREON_* key overrides config/preon.yaml.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"

"$REPO/scripts/deps.sh" run
echo "==> building (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" >/dev/null

# PostgreSQL runs as the postgres user, which must reach the folder. Where it cannot (a clone under /root,
# say), the cluster lives in /var/lib/preon instead and .pgdata points there.
PGDIR=$REPO/.pgdata
if [ ! -e "$PGDIR" ]; then
    if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$REPO" 2>/dev/null; then
        target=/var/lib/preon/pgdata-$(printf '%s' "$REPO" | cksum | cut -d' ' -f1)
        mkdir -p "$target"
        ln -s "$target" "$PGDIR"
    else
        mkdir -p "$PGDIR"
    fi
fi
PGDIR=$(readlink -f "$PGDIR")
chmod 755 "$PGDIR"
port=${PREON_DEV_PG_PORT:-25432}
[ -f "$PGDIR/port" ] && port=$(cat "$PGDIR/port")
echo "==> PostgreSQL in $PGDIR on 127.0.0.1:$port"
"$REPO/scripts/pg.sh" init "$PGDIR" "$port"
"$REPO/scripts/pg.sh" start "$PGDIR"

pid=
stop_all() {
    trap - INT TERM EXIT
    [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    echo "==> stopping PostgreSQL"
    "$REPO/scripts/pg.sh" stop "$PGDIR"
}
trap stop_all INT TERM EXIT

export PREON_DATABASE_URL=${PREON_DATABASE_URL:-$("$REPO/scripts/pg.sh" url "$PGDIR")}
http_port=${PREON_SERVER_PORT:-8080}
cat <<MSG
==> preon on http://localhost:$http_port (Ctrl-C stops preon and PostgreSQL). Try:
    curl -i http://localhost:$http_port/hello
    curl -i http://localhost:$http_port/fruits
    curl -i http://localhost:$http_port/fruits/1
    psql: $REPO/scripts/pg.sh psql $PGDIR
MSG
# preon gets a process group of its own (set -m), so that Ctrl-C reaches it once, forwarded by the trap,
# rather than twice (a second signal means "exit at once").
set -m
"$REPO/build/preon" --config "$REPO/config/preon.yaml" &
pid=$!
set +m
wait "$pid" || true
pid=
