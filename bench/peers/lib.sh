# SPDX-License-Identifier: MIT
# Sourced by the peers' build.sh and run.sh: installing what is missing, telling whether a build is stale,
# building before a run, and the database URL the services get.

# Installs, with apt-get, whichever of the Debian packages given is missing.
peers_need() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "==> installing: ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
        echo "missing packages and not root: apt-get install ${missing[*]}" >&2
        return 1
    fi
    # Other apt-get runs (scripts/deps.sh, another build) may hold the lock for a while: wait for it.
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
            "${missing[@]}" >/dev/null
}

# True when OUTPUT is missing or older than any of the other files.
peers_stale() {
    local out=$1 f
    shift
    [ -e "$out" ] || return 0
    for f in "$@"; do
        [ "$f" -nt "$out" ] && return 0
    done
    return 1
}

# Prints "NAME: built in S s" or "NAME: up to date", the time since START (from date +%s.%N).
peers_report() {
    local name=$1 start=$2 what=$3
    echo "$name: $what in $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }') s"
}

# What run.sh does before it execs the service in DIR: build it if needed (to stderr, so that stdout stays the
# service's), and export DATABASE_URL.
peers_prepare() {
    "$1/build.sh" >&2
    DATABASE_URL=$(peers_database_url)
    export DATABASE_URL
}

# DATABASE_URL for the services: as given; else built from libpq's PGHOST/PGPORT/PGUSER/PGPASSWORD/PGDATABASE
# when PGHOST is set (bench/run.py gives a started target those); else the cluster of scripts/run.sh.
peers_database_url() {
    if [ -n "${DATABASE_URL:-}" ]; then
        echo "$DATABASE_URL"
    elif [ -n "${PGHOST:-}" ]; then
        echo "postgresql://${PGUSER:-postgres}${PGPASSWORD:+:$PGPASSWORD}@$PGHOST:${PGPORT:-5432}/${PGDATABASE:-preon}"
    else
        echo "postgresql://postgres@127.0.0.1:25432/preon"
    fi
}
