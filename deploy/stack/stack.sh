#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# preon past one process, on loopback, from Debian 12 packages: etcd, a Patroni cluster of three PostgreSQL 15
# nodes (one leader, two streaming replicas, synchronous_mode), HAProxy in front of PostgreSQL as Patroni's
# documentation does it (read-write port checked against Patroni's REST /primary, read-only port against /replica),
# PgBouncer (transaction mode) in front of HAProxy, and N preon replicas behind an HAProxy HTTP frontend that
# checks /health/ready. Every process is started by this script, its PID kept in STATE/pids/, and stopped by it.
#
# Usage: deploy/stack/stack.sh up [N]            start everything (N preon replicas, default 2) and print the URLs
#        deploy/stack/stack.sh down              stop everything it started (by PID) and remove STATE
#        deploy/stack/stack.sh status            every process, alive or not; the Patroni cluster; HAProxy's servers
#        deploy/stack/stack.sh urls              print the URLs (also as shell variables: `eval "$(stack.sh urls)"`)
#        deploy/stack/stack.sh preon-start I     start preon replica I (1..8; HAProxy already knows all 8 slots)
#        deploy/stack/stack.sh preon-stop I      SIGTERM preon replica I and wait until it has exited
#        deploy/stack/stack.sh patroni-start I   start Patroni node I (1..3) again (it rejoins, rewound if need be)
#        deploy/stack/stack.sh patroni-stop I    stop Patroni node I (SIGTERM: PostgreSQL shuts down fast)
#
# Environment: PREON_STACK_DIR (state folder, default /tmp/preon-stack), PREON_STACK_BASE (first of the ports,
# default 27100, below the kernel's ephemeral ports; the stack uses BASE .. BASE+60), PREON_BIN (default build/preon, built if missing),
# PREON_STACK_THREADS (event loops per preon replica, default 1), PREON_STACK_DRAIN_MS (server.drain_delay_ms,
# default 1500), PREON_STACK_FSYNC (PostgreSQL's fsync, default on). As root, PostgreSQL, Patroni and PgBouncer
# run as the `postgres` user (both refuse root); etcd, HAProxy and preon as the caller.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
S=${PREON_STACK_DIR:-/tmp/preon-stack}
B=${PREON_STACK_BASE:-27100}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
MAX_PREON=8

ETCD=$((B + 0)) ETCD_PEER=$((B + 1))
pg_port() { echo $((B + 10 + $1)); }      # node 1..3
rest_port() { echo $((B + 20 + $1)); }    # Patroni REST API of node 1..3
RW=$((B + 30)) RO=$((B + 31)) STATS=$((B + 32))
BOUNCER=$((B + 40))
HTTP=$((B + 50)) HTTP_NORETRY=$((B + 49))
preon_port() { echo $((B + 50 + $1)); }   # replica 1..8

log() { printf '%s stack: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

# --- processes, each known by the PID and start time recorded when it was started ---------------------------------

start_time() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }

# start NAME AS_POSTGRES(0|1) COMMAND...: in the background, output to STATE/log/NAME.log, PID to STATE/pids/NAME
start() {
    local name=$1 as_pg=$2
    shift 2
    local pre=()
    if [ "$as_pg" = 1 ] && [ "$(id -u)" -eq 0 ]; then
        pre=(setpriv --reuid=postgres --regid=postgres --init-groups --)  # execs: the PID is the program's own
    fi
    (cd / && exec "${pre[@]}" "$@" >>"$S/log/$name.log" 2>&1 </dev/null) &
    local pid=$!
    echo "$pid $(start_time "$pid")" >"$S/pids/$name"
}

# pid NAME: its PID if the process we started is still running (same PID and start time), else nothing
pid_of() {
    [ -f "$S/pids/$1" ] || return 0
    local pid st
    read -r pid st <"$S/pids/$1"
    [ -n "$pid" ] && [ "$(start_time "$pid")" = "$st" ] && echo "$pid"
    return 0
}

# stop NAME [SECONDS]: SIGTERM, wait, then SIGKILL; by PID only
stop() {
    local name=$1 wait_s=${2:-30} pid
    pid=$(pid_of "$name")
    if [ -n "$pid" ]; then
        kill -TERM "$pid" 2>/dev/null || true
        local end=$((SECONDS + wait_s))
        while [ -n "$(pid_of "$name")" ] && [ $SECONDS -lt $end ]; do sleep 0.1; done
        if [ -n "$(pid_of "$name")" ]; then
            log "$name (pid $pid) still running after ${wait_s} s: SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
        fi
    fi
    rm -f "$S/pids/$name"
}

# wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds
wait_for() {
    local end=$((SECONDS + $1)) what=$2
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || die "timed out waiting for $what (logs in $S/log)"
        sleep 0.2
    done
}

http_ok() { [ "$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1")" = 200 ]; }

# --- configuration files ----------------------------------------------------------------------------------------

write_patroni() {
    local i=$1 d=$S/pg$1
    mkdir -p "$d"
    cat >"$d/patroni.yml" <<EOF
scope: preon
name: pg$i
log: {level: WARNING}
restapi:
  listen: 127.0.0.1:$(rest_port "$i")
  connect_address: 127.0.0.1:$(rest_port "$i")
etcd3:
  hosts: 127.0.0.1:$ETCD
bootstrap:
  dcs:
    # A leader that stops renewing its key is replaced within ttl: 10 s (Patroni needs loop_wait + 2 x
    # retry_timeout <= ttl). synchronous_mode: a commit is acknowledged only once a standby has it, and only that
    # standby may be promoted, so an acknowledged write survives a failover.
    ttl: 10
    loop_wait: 1
    retry_timeout: 3
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_level: replica
        hot_standby: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_log_hints: "on"
        fsync: "${PREON_STACK_FSYNC:-on}"
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth: trust
postgresql:
  listen: 127.0.0.1:$(pg_port "$i")
  connect_address: 127.0.0.1:$(pg_port "$i")
  data_dir: $d/data
  bin_dir: $PGBIN
  pgpass: $d/pgpass
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
    rewind: {username: postgres}
  parameters:
    unix_socket_directories: $d
    max_connections: 200
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
EOF
}

write_haproxy() {
    local f=$S/haproxy.cfg i
    cat >"$f" <<EOF
global
    maxconn 4000
    stats socket $S/haproxy.sock mode 600 level admin

defaults
    mode tcp
    timeout connect 1s
    timeout client 30m
    timeout server 30m
    timeout check 1s

# PostgreSQL, as Patroni's documentation does it: the node whose REST API answers /primary 200 takes the writes,
# those answering /replica the reads; connections to a node marked down are cut, so that clients reconnect.
EOF
    local port role
    for role in primary replica; do
        port=$RW && [ $role = primary ] || port=$RO
        printf 'listen postgres_%s\n    bind 127.0.0.1:%s\n    balance roundrobin\n    option httpchk OPTIONS /%s\n' \
            "$role" "$port" "$role" >>"$f"
        printf '    http-check expect status 200\n    default-server inter 500ms fall 2 rise 1 on-marked-down shutdown-sessions\n' >>"$f"
        for i in 1 2 3; do echo "    server pg$i 127.0.0.1:$(pg_port $i) maxconn 100 check port $(rest_port $i)" >>"$f"; done
        echo >>"$f"
    done
    cat >>"$f" <<EOF
# preon replicas: a replica is taken out at its first failed readiness check (preon turns /health/ready 503 at
# SIGTERM and keeps accepting for server.drain_delay_ms, longer than inter + timeout), back in at its first good
# one. A connection refused (a replica that has just gone) is retried on another replica; nothing else is retried,
# so no request is sent twice. Readiness also fails while preon has no connection to the primary: during a
# failover every replica is unready at once, and then the live ones still take the requests (backend preon_live),
# so that reads are served from the standbys and writes get preon's own 503, instead of HAProxy's for everything.
frontend preon_http
    bind 127.0.0.1:$HTTP
    mode http
    timeout client 30s
    use_backend preon_live if { nbsrv(preon) lt 1 }
    default_backend preon

# The same replicas with no retry at all, as a Kubernetes Service (kube-proxy) would route: what
# server.drain_delay_ms alone does for a load balancer that does not retry (tests/integration/test_stack.py).
frontend preon_http_noretry
    bind 127.0.0.1:$HTTP_NORETRY
    mode http
    timeout client 30s
    default_backend preon_noretry

EOF
    local backend check
    for backend in preon preon_live preon_noretry; do
        check=/health/ready && [ $backend != preon_live ] || check=/health/live
        printf 'backend %s\n    mode http\n    balance roundrobin\n    timeout server 30s\n    option httpchk GET %s\n' \
            "$backend" "$check" >>"$f"
        if [ $backend = preon_noretry ]; then
            printf '    http-check expect status 200\n    retries 0\n' >>"$f"
        else
            printf '    http-check expect status 200\n    option redispatch 1\n    retries 3\n    retry-on conn-failure\n' >>"$f"
        fi
        printf '    default-server inter 500ms fall 1 rise 1\n' >>"$f"
        for i in $(seq 1 $MAX_PREON); do echo "    server preon$i 127.0.0.1:$(preon_port "$i") check" >>"$f"; done
        echo >>"$f"
    done
    cat >>"$f" <<EOF
listen stats
    bind 127.0.0.1:$STATS
    mode http
    stats enable
    stats uri /
EOF
}

write_pgbouncer() {
    mkdir -p "$S/pgbouncer"
    echo '"postgres" ""' >"$S/pgbouncer/users.txt"
    cat >"$S/pgbouncer/pgbouncer.ini" <<EOF
[databases]
preon = host=127.0.0.1 port=$RW dbname=preon user=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $BOUNCER
unix_socket_dir =
auth_type = trust
auth_file = $S/pgbouncer/users.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 20
max_client_conn = 1000
server_connect_timeout = 2
; after a failover the new primary is tried again within a second (default 15 s), and a client is not kept waiting
; for a server longer than preon's own deadlines would
server_login_retry = 1
query_wait_timeout = 5
logfile = $S/pgbouncer/pgbouncer.log
EOF
}

# --- the pieces ---------------------------------------------------------------------------------------------------

preon_bin() {
    local bin=${PREON_BIN:-$REPO/build/preon}
    if [ ! -x "$bin" ]; then
        log "building $bin"
        cmake -S "$REPO" -B "$REPO/build" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$REPO/build" -j2 --target preon >/dev/null
    fi
    echo "$bin"
}

preon_start() {
    local i=$1 port
    [ "$i" -ge 1 ] && [ "$i" -le $MAX_PREON ] || die "replica $i: 1 .. $MAX_PREON"
    [ -z "$(pid_of "preon$i")" ] || die "preon$i is already running"
    port=$(preon_port "$i")
    start "preon$i" 0 env PREON_SERVER_LISTEN=127.0.0.1 PREON_SERVER_PORT="$port" \
        PREON_SERVER_THREADS="${PREON_STACK_THREADS:-1}" PREON_SERVER_DRAIN_DELAY_MS="${PREON_STACK_DRAIN_MS:-1500}" \
        PREON_DATABASE_URL="postgresql://postgres@127.0.0.1:$BOUNCER/preon" PREON_DATABASE_POOLER=transaction \
        PREON_DATABASE_READ_URL="postgresql://postgres@127.0.0.1:$RO/preon" \
        PREON_DATABASE_CLIENT_CHECK_MS=0 PREON_DATABASE_CONNECTIONS_PER_THREAD=2 \
        PREON_DATABASE_RECONNECT_MAX_MS=250 PREON_DATABASE_CONNECT_TIMEOUT_MS=1000 \
        PREON_DATABASE_QUERY_TIMEOUT_MS=2000 PREON_SERVER_REQUEST_TIMEOUT_MS=3000 \
        "$(preon_bin)"
    wait_for 30 "preon$i ready" http_ok "http://127.0.0.1:$port/health/ready"
}

preon_stop() {
    stop "preon$1" 30
}

leader_port() {
    local i
    for i in 1 2 3; do
        if http_ok "http://127.0.0.1:$(rest_port $i)/primary"; then pg_port $i; return 0; fi
    done
    return 1
}

replicas_streaming() {
    local i n=0
    for i in 1 2 3; do http_ok "http://127.0.0.1:$(rest_port $i)/replica" && n=$((n + 1)); done
    [ $n -eq 2 ]
}

sync_standby() {
    local i
    for i in 1 2 3; do http_ok "http://127.0.0.1:$(rest_port $i)/sync" && return 0; done
    return 1
}

load_schema() {
    local q=("$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$RW" -U postgres)
    [ "$("${q[@]}" -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'preon'")" = 1 ] ||
        "${q[@]}" -d postgres -c "CREATE DATABASE preon" >/dev/null
    local f
    for f in "$REPO"/sql/*.sql; do "${q[@]}" -d preon <"$f" >/dev/null; done
}

need() {
    local missing=()
    for c in etcd patroni haproxy pgbouncer setpriv curl; do command -v "$c" >/dev/null || missing+=("$c"); done
    [ -x "$PGBIN/postgres" ] || missing+=(postgresql)
    if [ ${#missing[@]} -ne 0 ]; then
        log "missing: ${missing[*]}; installing (scripts/deps.sh stack)"
        "$REPO/scripts/deps.sh" stack
        PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
    fi
}

urls() {
    cat <<EOF
PREON_STACK_HTTP=http://127.0.0.1:$HTTP
PREON_STACK_HTTP_NORETRY=http://127.0.0.1:$HTTP_NORETRY
PREON_STACK_RW=postgresql://postgres@127.0.0.1:$RW/preon
PREON_STACK_RO=postgresql://postgres@127.0.0.1:$RO/preon
PREON_STACK_PGBOUNCER=postgresql://postgres@127.0.0.1:$BOUNCER/preon
PREON_STACK_HAPROXY_STATS=http://127.0.0.1:$STATS/
PREON_STACK_ETCD=http://127.0.0.1:$ETCD
PREON_STACK_PATRONI="http://127.0.0.1:$(rest_port 1) http://127.0.0.1:$(rest_port 2) http://127.0.0.1:$(rest_port 3)"
PREON_STACK_DIR=$S
EOF
}

up() {
    local n=${1:-2} i t0=$SECONDS
    [ "$n" -ge 1 ] && [ "$n" -le $MAX_PREON ] || die "N: 1 .. $MAX_PREON"
    need
    [ ! -d "$S/pids" ] || [ -z "$(ls "$S/pids")" ] || die "$S holds a running stack: stack.sh down first"
    mkdir -p "$S/pids" "$S/log"
    chmod 755 "$S"
    for i in 1 2 3; do write_patroni "$i"; done
    write_haproxy
    write_pgbouncer
    [ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$S/pg1" "$S/pg2" "$S/pg3" "$S/pgbouncer" "$S/log"
    preon_bin >/dev/null

    log "etcd on 127.0.0.1:$ETCD"
    start etcd 0 etcd --name stack --data-dir "$S/etcd" --listen-client-urls "http://127.0.0.1:$ETCD" \
        --advertise-client-urls "http://127.0.0.1:$ETCD" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "stack=http://127.0.0.1:$ETCD_PEER" \
        --log-level warn
    wait_for 30 etcd http_ok "http://127.0.0.1:$ETCD/health"

    log "Patroni: 3 PostgreSQL nodes on $(pg_port 1)-$(pg_port 3), REST on $(rest_port 1)-$(rest_port 3)"
    for i in 1 2 3; do start "patroni$i" 1 patroni "$S/pg$i/patroni.yml"; done
    wait_for 120 "a Patroni leader" leader_port
    wait_for 180 "two streaming replicas" replicas_streaming
    wait_for 60 "a synchronous standby" sync_standby

    log "HAProxy: PostgreSQL rw $RW, ro $RO; preon $HTTP; stats $STATS"
    start haproxy 0 haproxy -db -f "$S/haproxy.cfg"
    wait_for 30 "HAProxy's read-write port" "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$RW"
    load_schema

    log "PgBouncer (transaction mode) on $BOUNCER"
    start pgbouncer 1 pgbouncer "$S/pgbouncer/pgbouncer.ini"
    wait_for 30 PgBouncer "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$BOUNCER" -d preon

    for i in $(seq 1 "$n"); do
        log "preon$i on $(preon_port "$i")"
        preon_start "$i"
    done
    wait_for 30 "/fruits through HAProxy" http_ok "http://127.0.0.1:$HTTP/fruits"
    log "up in $((SECONDS - t0)) s"
    urls
}

down() {
    local i
    [ -d "$S" ] || { log "nothing at $S"; return 0; }
    for i in $(seq 1 $MAX_PREON); do stop "preon$i" 30; done
    stop pgbouncer 10
    stop haproxy 10
    for i in 3 2 1; do stop "patroni$i" 60; done
    stop etcd 10
    # a postmaster whose Patroni was killed (a fault test) is ours too: it holds STATE/pgI/data/postmaster.pid
    for i in 1 2 3; do
        local pm=$S/pg$i/data/postmaster.pid
        if [ -f "$pm" ]; then
            local pid
            pid=$(head -n 1 "$pm")
            if [ -n "$pid" ] && [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$S/pg$i/data" ]; then
                log "postmaster of pg$i (pid $pid) outlived its Patroni: SIGQUIT"
                kill -QUIT "$pid" 2>/dev/null || true
            fi
        fi
    done
    rm -rf "$S"
    log "down"
}

status() {
    local f name pid
    for f in "$S"/pids/*; do
        [ -e "$f" ] || continue
        name=$(basename "$f")
        pid=$(pid_of "$name")
        if [ -n "$pid" ]; then printf '%-10s pid %s\n' "$name" "$pid"; else printf '%-10s not running\n' "$name"; fi
    done
    if [ -n "$(pid_of patroni1)$(pid_of patroni2)$(pid_of patroni3)" ]; then
        patronictl -c "$S/pg1/patroni.yml" list 2>/dev/null || true
    fi
    if [ -n "$(pid_of haproxy)" ]; then
        echo "HAProxy (proxy, server, status):"
        curl -s -m 2 "http://127.0.0.1:$STATS/;csv" | cut -d, -f1,2,18 | grep -v -e '^#' -e FRONTEND -e BACKEND -e '^stats' -e '^preon_live' -e '^preon_noretry' || true
    fi
}

case "${1:-}" in
    up) up "${2:-2}" ;;
    down) down ;;
    status) status ;;
    urls) urls ;;
    preon-start) preon_start "${2:?replica number}" ;;
    preon-stop) preon_stop "${2:?replica number}" ;;
    patroni-start) start "patroni${2:?node number}" 1 patroni "$S/pg$2/patroni.yml" ;;
    patroni-stop) stop "patroni${2:?node number}" 60 ;;
    *) sed -n '3,23p' "$0" >&2; exit 2 ;;
esac
