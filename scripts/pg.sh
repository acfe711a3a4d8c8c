#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A private PostgreSQL cluster in a folder: its own port, its own socket directory, trust auth on loopback.
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
#
# Usage: scripts/pg.sh init DIR PORT    create the cluster (if DIR has none) and database "preon" with sql/ loaded
#        scripts/pg.sh start DIR         start it and wait until it accepts connections
#        scripts/pg.sh stop DIR [MODE]   stop it (MODE: fast, the default, or immediate)
#        scripts/pg.sh url DIR           print the libpq URL of database "preon"
#        scripts/pg.sh psql DIR [ARGS]   run psql on database "preon"
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}

# Runs a command as the server's user, from / (the caller's folder may be closed to that user).
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi
}

cmd=${1:?usage: pg.sh init|start|stop|url|psql DIR ...}
dir=${2:?DIR missing}

port_of() { cat "$dir/port"; }

case "$cmd" in
init)
    port=${3:?PORT missing}
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        mkdir -p "$dir/data" "$dir/sock"
        [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"
        as_pg "$PGBIN/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
            { cat "$dir/initdb.log" >&2; exit 1; }
        cat >>"$dir/data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir/sock'
max_connections = 200
${PREON_PG_EXTRA_CONF:-}
CONF
        echo "$port" >"$dir/port"
    fi
    "$0" start "$dir"
    # Loading is idempotent and marked done only at the end, so an interrupted first run is completed later.
    # The SQL goes through stdin: the repository may be closed to the postgres user.
    if [ ! -f "$dir/loaded" ]; then
        port=$(port_of)
        q() { as_pg "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/sock" -p "$port" -U postgres "$@"; }
        [ "$(q -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'preon'")" = 1 ] ||
            q -d postgres -c "CREATE DATABASE preon" >/dev/null
        for f in "$REPO"/sql/*.sql; do
            q -d preon <"$f" >/dev/null
        done
        touch "$dir/loaded"
    fi
    ;;
start)
    if ! as_pg "$PGBIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        as_pg "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/data/server.log" -w -t 60 start >/dev/null
    fi
    ;;
stop)
    as_pg "$PGBIN/pg_ctl" -D "$dir/data" -m "${3:-fast}" -w stop >/dev/null 2>&1 || true
    ;;
url)
    echo "postgresql://postgres@127.0.0.1:$(port_of)/preon"
    ;;
psql)
    shift 2
    as_pg "$PGBIN/psql" -X -q -h "$dir/sock" -p "$(port_of)" -U postgres -d preon "$@"
    ;;
*)
    echo "unknown command $cmd" >&2
    exit 2
    ;;
esac
