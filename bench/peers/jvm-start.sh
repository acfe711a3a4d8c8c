#!/bin/sh
# SPDX-License-Identifier: MIT
# The JVM peers' image entry point: starts java with the memory settings the stack's own container images give,
# then the image's JAVA_OPTS (a user's flags, which win), exec'd so that the JVM is PID 1 and gets SIGTERM.
# JVM_MEMORY names whose settings (the image sets it per peer; bench/peers/README.md, "Images"):
#   run-java  Quarkus's generated Dockerfile.jvm starts Java through the UBI OpenJDK images' run-java.sh, whose
#             java-default-options give -XX:MaxRAMPercentage=${JAVA_MAX_MEM_RATIO:-50} (0: none) and the Parallel
#             collector with its heap-shrinking ratios, and exit on OutOfMemoryError.
#   paketo    Spring Boot's buildpack images size the JVM to the container's limit with Paketo's memory calculator:
#             heap = limit - head room (0 %) - direct memory (10M) - metaspace (14,000,000 B + 5,800 B per loaded
#             class, 35 % of the JVM's and the application's classes) - reserved code cache (240M) - thread stacks
#             (1M x BPL_JVM_THREAD_COUNT: 250 for a servlet application, 50 for a reactive one); when the fixed
#             regions exceed the limit, the container does not start ("fixed memory regions require ...").
#   none      no memory setting (the JVM's own defaults: a quarter of the limit as heap, G1 or Serial).
# With PRINT=1, prints the flags instead of starting java (tests/bench/test_jvm_memory.py). MEMORY_LIMIT_FILE,
# MEMINFO: other files than the cgroup's limit and /proc/meminfo (the tests').
set -eu

limit_bytes() { # the cgroup's memory limit (v2, else v1), else MemAvailable as Paketo's calculator falls back to
    for f in ${MEMORY_LIMIT_FILE:-/sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes}; do
        if [ -r "$f" ]; then
            v=$(cat "$f")
            if [ "$v" != max ] && [ "$v" -lt 9223372036854771712 ]; then
                echo "$v"
                return
            fi
        fi
    done
    echo $(($(awk '/^MemAvailable:/ { print $2 }' "${MEMINFO:-/proc/meminfo}") * 1024))
}

paketo() {
    # the counts measured when the image was built (jvm.Dockerfile), unless given
    if [ -z "${JVM_CLASS_COUNT:-}" ] && [ -n "${CLASS_COUNTS:-}" ] && [ -r "$CLASS_COUNTS" ]; then
        . "$CLASS_COUNTS"
    fi
    total=$(limit_bytes)
    threads=${BPL_JVM_THREAD_COUNT:-${PAKETO_THREAD_COUNT:-250}}
    loaded=${BPL_JVM_LOADED_CLASS_COUNT:-$(((${JVM_CLASS_COUNT:?} + ${APP_CLASS_COUNT:?}) * 35 / 100))}
    head_room=$((total * ${BPL_JVM_HEAD_ROOM:-0} / 100))
    mib=1048576
    direct=$((10 * mib)) code=$((240 * mib)) stack=$mib
    metaspace=$((14000000 + 5800 * loaded))
    fixed=$((direct + metaspace + code + stack * threads))
    if [ "$fixed" -gt "$total" ]; then
        echo "jvm-start (paketo's memory calculator): fixed memory regions require $((fixed / 1024))K which is" \
            "greater than $((total / 1024))K available for allocation: -XX:MaxDirectMemorySize=10M," \
            "-XX:MaxMetaspaceSize=$((metaspace / 1024))K, -XX:ReservedCodeCacheSize=240M, -Xss1M * $threads threads" >&2
        exit 1
    fi
    heap=$((total - head_room - fixed))
    # and its active processor count helper: the CPUs of the affinity mask (Go's runtime.NumCPU), not the quota
    echo "-XX:MaxDirectMemorySize=10M -Xmx$((heap / 1024))K -XX:MaxMetaspaceSize=$((metaspace / 1024))K" \
        "-XX:ReservedCodeCacheSize=240M -Xss1M -XX:ActiveProcessorCount=$(nproc)"
}

run_java() {
    ratio=${JAVA_MAX_MEM_RATIO:-50}
    max=
    [ "$ratio" != 0 ] && max="-XX:MaxRAMPercentage=$(printf '%.0f' "$ratio").0"
    echo "$max -XX:+UseParallelGC -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=20 -XX:GCTimeRatio=4" \
        "-XX:AdaptiveSizePolicyWeight=90 -XX:+ExitOnOutOfMemoryError"
}

case "${JVM_MEMORY:-none}" in
    paketo) flags=$(paketo) ;;
    run-java) flags=$(run_java) ;;
    none) flags= ;;
    *) echo "jvm-start: JVM_MEMORY=$JVM_MEMORY: expected run-java, paketo or none" >&2; exit 2 ;;
esac
if [ -n "${PRINT:-}" ]; then
    echo $flags
    exit 0
fi
# shellcheck disable=SC2086 # lists of flags
exec java $flags ${JAVA_OPTS:-} -jar "$PEER_JAR"
