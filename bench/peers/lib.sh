# SPDX-License-Identifier: MIT
# Sourced by the peers' build.sh and run.sh: installing what is missing, telling whether a build is stale (a native
# build's too), what a native build records, building before a run, and the database URL the services get.

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

# A native peer's build.sh before it builds: true, after saying NAME is up to date (the time since START), when BIN
# is newer than the SOURCES given and, once the toolchain in GRAALVM_HOME is complete, than its .complete mark; the
# caller exits then.
peers_native_fresh() {
    local name=$1 start=$2 bin=$3
    shift 3
    local sources=("$@")
    [ -e "$GRAALVM_HOME/.complete" ] && sources+=("$GRAALVM_HOME/.complete")
    if ! peers_stale "$bin" "${sources[@]}"; then
        peers_report "$name" "$start" "up to date"
        return 0
    fi
    return 1
}

# A native peer's build.sh once built: the builder's peak RSS and time from OUT/build/native.log, and its
# configuration lines, kept in OUT/build/native-image-build.txt for the records (bench/measure/report.py reads them
# into each run's header; "Graal compiler: optimization level: 2, target machine: x86-64-v3" among them), each
# printed after "NAME: ".
peers_native_record() {
    local name=$1 out=$2
    grep -E "Peak RSS|Finished generating" "$out/build/native.log" | tail -n 2 | sed "s/^ */$name: /" || true
    grep -E "^[ -]*(Java version|Graal compiler|C compiler|Garbage collector):" "$out/build/native.log" | sed 's/^ *//' >"$out/build/native-image-build.txt" || true
    sed "s/^/$name: /" "$out/build/native-image-build.txt"
}

# What run.sh does before it execs the service in DIR: no build (a start time measures the service alone),
# only a check that ARTIFACT exists, and DATABASE_URL exported.
peers_prepare() {
    [ -e "$2" ] || { echo "$2 not built: run $1/build.sh first" >&2; exit 127; }
    DATABASE_URL=$(peers_database_url)
    export DATABASE_URL
}

# Builds the Maven project in DIR (its pom.xml pins every version) into DIR/build unless OUTPUT is newer than its
# sources and the peers' shared classes (jvm-common/, spring-common/). Installs Debian's Maven and JDK 17 first;
# resolves from Maven Central into ~/.m2 on the first build, offline (-o) from that cache once a build of this
# pom.xml has succeeded. Extra arguments go to mvn. PEER_SOURCES: more files and folders whose change makes the
# build stale (a variant built from another peer's sources: its own build.sh and pom.xml, that peer's src/).
peers_maven() {
    local name=$1 dir=$2 out=$3 start
    shift 3
    start=$(date +%s.%N)
    # shellcheck disable=SC2046,SC2086 # one file name per line, no spaces in them
    if ! peers_stale "$out" "$dir/pom.xml" "$dir/build.sh" $(find $(ls -d "$dir/src" 2>/dev/null) "$dir"/../*-common \
        ${PEER_SOURCES:-} -type f); then
        peers_report "$name" "$start" "up to date"
        return 0
    fi
    peers_need maven openjdk-17-jdk-headless
    local m2=${MAVEN_REPO:-$HOME/.m2/repository} mark
    mark="$m2/.preon-peer-$name-$(sha1sum "$dir/pom.xml" | cut -c1-12)"
    local offline=()
    [ -e "$mark" ] && offline=(-o)
    (cd "$dir" && JAVA_HOME=${PEERS_JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64} \
        mvn -B -q -Dstyle.color=never "${offline[@]}" -Dmaven.repo.local="$m2" -DskipTests package "$@")
    mkdir -p "$m2" && touch "$mark"
    [ -e "$out" ] || { echo "$name: mvn package made no $out" >&2; return 1; }
    touch "$out"
    peers_report "$name" "$start" "built"
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

# What a JVM peer's run.sh does: exec java on JAR (JAVA_OPTS: JVM flags), so that the JVM has run.sh's PID.
peers_exec_java() {
    peers_prepare "$1" "$2"
    # shellcheck disable=SC2086 # JAVA_OPTS is a list of flags
    exec java ${JAVA_OPTS:-} -jar "$2"
}

# What an image peer's run.sh does: exec docker run in the foreground on the host's network (the CLI hands SIGTERM
# to the container and exits with its status), the peer's environment passed in; DOCKER_OPTS: more docker run
# flags (e.g. --security-opt seccomp=unconfined); the arguments after IMAGE go to its entry point.
peers_exec_image() {
    local image=$1
    shift
    docker image inspect "$image" >/dev/null 2>&1 || { echo "$image not built: run its build.sh first" >&2; exit 127; }
    DATABASE_URL=$(peers_database_url)
    # shellcheck disable=SC2086 # DOCKER_OPTS is a list of flags
    exec docker run --rm --network host -e PORT="${PORT:-8080}" -e LISTEN="${LISTEN:-127.0.0.1}" \
        -e DATABASE_URL="$DATABASE_URL" -e POOL_SIZE="${POOL_SIZE:-10}" \
        ${PEER_THREAD_HEADER:+-e PEER_THREAD_HEADER="$PEER_THREAD_HEADER"} ${DOCKER_OPTS:-} "$image" "$@"
}
