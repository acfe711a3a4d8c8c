// SPDX-License-Identifier: MIT
// libsvm_container.a: the container limits a SubstrateVM executable sizes itself by (processor count for its
// thread pools and Runtime.availableProcessors(); the memory limit for its default heap). Written for preon
// from the signatures in svm.jar (ContainerLibrary) and HotSpot's documented behaviour: the process's own
// cgroup, v1 (per-controller mounts) or v2 (the unified mount), found through /proc/self/mountinfo and
// /proc/self/cgroup; a limit is the lowest one on the path from that cgroup up to the mount's root (a
// parent's limit caps its children). -1 means no limit, -2 that the value could not be read.
#define _GNU_SOURCE
#include "svm_container.h"
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NO_LIMIT (-1)
#define UNREADABLE (-2)

typedef struct st_controller_t {
    char dir[PATH_MAX];   // this process's cgroup folder for the controller; "" when none was found
    char mount[PATH_MAX]; // the mount point: the walk up for limits stops there
    int read_only;
} controller_t;

static int version;            // 1 or 2 once found, 0 when the process has no readable cgroup
static controller_t mem, cpu;  // for v2 both name the same folder
static int containerized = -1; // decided by svm_container_initialize

// True when the comma-separated LIST holds WORD (cgroup v1's "cpu,cpuacct" holds "cpu", not "cpuset").
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
            return 1;
    return 0;
}

// The folder of cgroup PATH (from /proc/self/cgroup) under a mount of hierarchy ROOT at MOUNT. Inside a
// container the mount's root is often the container's own cgroup and PATH the same or "/": then it is MOUNT.
static void join(controller_t *c, const char *root, const char *mount, const char *path, int read_only)
{
    struct stat st;
    size_t rl = strlen(root);
    const char *rest = path;
    if (strcmp(root, "/") != 0) {
        if (strncmp(path, root, rl) == 0 && (path[rl] == '/' || path[rl] == '\0'))
            rest = path + rl;
        else
            rest = "";
    }
    snprintf(c->mount, sizeof(c->mount), "%s", mount);
    snprintf(c->dir, sizeof(c->dir), "%s%s", mount, strcmp(rest, "/") == 0 ? "" : rest);
    if (stat(c->dir, &st) != 0 || !S_ISDIR(st.st_mode))
        snprintf(c->dir, sizeof(c->dir), "%s", mount);
    c->read_only = read_only;
}

// Reads /proc/self/cgroup's path for a v1 CONTROLLER ("memory", "cpu") or, with NULL, the v2 one ("0::").
static int cgroup_path(const char *controller, char *out, size_t size)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (f == NULL)
        return 0;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        if (controller == NULL ? strcmp(line, "0") == 0 && c2 == c1 + 1 : has_word(c1 + 1, controller)) {
            c2[1 + strcspn(c2 + 1, "\n")] = '\0';
            snprintf(out, size, "%s", c2 + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

static void discover(void)
{
    char line[4096], path[PATH_MAX];
    char v2_root[PATH_MAX] = "", v2_mount[PATH_MAX] = "";
    int v2_ro = 0, have_mem = 0, have_cpu = 0;
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        // id parent major:minor root mountpoint options [optional fields] - fstype source superoptions
        char root[PATH_MAX], mount[PATH_MAX], opts[256], fstype[64], super[1024];
        char *sep = strstr(line, " - ");
        if (sep == NULL || sscanf(line, "%*s %*s %*s %4095s %4095s %255s", root, mount, opts) != 3 ||
            sscanf(sep + 3, "%63s %*s %1023s", fstype, super) != 2)
            continue;
        int ro = has_word(opts, "ro");
        if (strcmp(fstype, "cgroup2") == 0 && v2_mount[0] == '\0') {
            snprintf(v2_root, sizeof(v2_root), "%s", root);
            snprintf(v2_mount, sizeof(v2_mount), "%s", mount);
            v2_ro = ro;
        } else if (strcmp(fstype, "cgroup") == 0) {
            if (!have_mem && has_word(super, "memory") && cgroup_path("memory", path, sizeof(path))) {
                join(&mem, root, mount, path, ro);
                have_mem = 1;
            }
            if (!have_cpu && has_word(super, "cpu") && cgroup_path("cpu", path, sizeof(path))) {
                join(&cpu, root, mount, path, ro);
                have_cpu = 1;
            }
        }
    }
    fclose(f);
    if (have_mem || have_cpu) {
        version = 1;
    } else if (v2_mount[0] != '\0' && cgroup_path(NULL, path, sizeof(path))) {
        join(&mem, v2_root, v2_mount, path, v2_ro);
        cpu = mem;
        version = 2;
    }
}

// Reads the first number of DIR/FILE: its value, NO_LIMIT for "max", UNREADABLE when missing.
static long long read_number(const char *dir, const char *file)
{
    char p[PATH_MAX + 64], buf[64];
    long long v = UNREADABLE;
    snprintf(p, sizeof(p), "%s/%s", dir, file);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return UNREADABLE;
    if (fscanf(f, "%63s", buf) == 1)
        v = strcmp(buf, "max") == 0 ? NO_LIMIT : strtoll(buf, NULL, 10);
    fclose(f);
    return v;
}

// The value of KEY in DIR/memory.stat, UNREADABLE when missing.
static long long read_stat(const char *dir, const char *key)
{
    char p[PATH_MAX + 64], k[128];
    long long v, found = UNREADABLE;
    snprintf(p, sizeof(p), "%s/memory.stat", dir);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return UNREADABLE;
    while (fscanf(f, "%127s %lld", k, &v) == 2)
        if (strcmp(k, key) == 0) {
            found = v;
            break;
        }
    fclose(f);
    return found;
}

static long long host_memory(void)
{
    return (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE);
}

// A v1 memory limit at or above the host's memory (the kernel's "unlimited" is 2^63 rounded to pages) is none.
static long long as_limit(long long v)
{
    if (v == UNREADABLE || v == NO_LIMIT)
        return v;
    if (v <= 0 || (version == 1 && v >= host_memory()))
        return NO_LIMIT;
    return v;
}

// The lowest limit in FILE from C's folder up to its mount: NO_LIMIT when none is set, UNREADABLE when the
// process's own folder has no such file.
static long long lowest_limit(const controller_t *c, const char *file)
{
    char dir[PATH_MAX];
    long long best = NO_LIMIT, v = as_limit(read_number(c->dir, file));
    if (v == UNREADABLE)
        return UNREADABLE;
    snprintf(dir, sizeof(dir), "%s", c->dir);
    for (;;) {
        if (v > 0 && (best == NO_LIMIT || v < best))
            best = v;
        if (strlen(dir) <= strlen(c->mount))
            break;
        char *slash = strrchr(dir, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
        v = as_limit(read_number(dir, file));
    }
    return best;
}

long long svm_container_memory_limit_in_bytes(void)
{
    if (version == 0 || mem.dir[0] == '\0')
        return UNREADABLE;
    return lowest_limit(&mem, version == 2 ? "memory.max" : "memory.limit_in_bytes");
}

long long svm_container_memory_and_swap_limit_in_bytes(void)
{
    long long limit = svm_container_memory_limit_in_bytes(), swap;
    if (limit < 0)
        return limit;
    if (version == 2) {
        swap = lowest_limit(&mem, "memory.swap.max");
        if (swap == UNREADABLE) // no swap accounting: memory alone is the limit
            return limit;
        return swap == NO_LIMIT ? NO_LIMIT : limit + swap;
    }
    swap = lowest_limit(&mem, "memory.memsw.limit_in_bytes");
    return swap == UNREADABLE ? limit : swap;
}

long long svm_container_memory_soft_limit_in_bytes(void)
{
    if (version == 0 || mem.dir[0] == '\0')
        return UNREADABLE;
    long long v = read_number(mem.dir, version == 2 ? "memory.low" : "memory.soft_limit_in_bytes");
    return v == 0 && version == 2 ? NO_LIMIT : as_limit(v);
}

long long svm_container_memory_usage_in_bytes(void)
{
    if (version == 0 || mem.dir[0] == '\0')
        return UNREADABLE;
    return read_number(mem.dir, version == 2 ? "memory.current" : "memory.usage_in_bytes");
}

long long svm_container_memory_max_usage_in_bytes(void)
{
    if (version == 0 || mem.dir[0] == '\0')
        return UNREADABLE;
    return read_number(mem.dir, version == 2 ? "memory.peak" : "memory.max_usage_in_bytes");
}

long long svm_container_rss_usage_in_bytes(void)
{
    if (version == 0 || mem.dir[0] == '\0')
        return UNREADABLE;
    return read_stat(mem.dir, version == 2 ? "anon" : "rss");
}

long long svm_container_cache_usage_in_bytes(void)
{
    if (version == 0 || mem.dir[0] == '\0')
        return UNREADABLE;
    return read_stat(mem.dir, version == 2 ? "file" : "cache");
}

size_t svm_container_physical_memory(void)
{
    long long host = host_memory(), limit = svm_container_memory_limit_in_bytes();
    return (size_t)(limit > 0 && limit < host ? limit : host);
}

// The CPU quota as a processor count, rounded up (HotSpot's rule: quota 150000 / period 100000 is 2), the
// lowest along the path; 0 when there is none.
static int quota_processors(void)
{
    char dir[PATH_MAX];
    int best = 0;
    if (version == 0 || cpu.dir[0] == '\0')
        return 0;
    snprintf(dir, sizeof(dir), "%s", cpu.dir);
    for (;;) {
        long long quota, period;
        if (version == 2) {
            char p[PATH_MAX + 16], q[32];
            quota = NO_LIMIT, period = 0;
            snprintf(p, sizeof(p), "%s/cpu.max", dir);
            FILE *f = fopen(p, "r");
            if (f != NULL) {
                if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0)
                    quota = strtoll(q, NULL, 10);
                fclose(f);
            }
        } else {
            quota = read_number(dir, "cpu.cfs_quota_us");
            period = read_number(dir, "cpu.cfs_period_us");
        }
        if (quota > 0 && period > 0) {
            int n = (int)((quota + period - 1) / period);
            if (best == 0 || n < best)
                best = n;
        }
        if (strlen(dir) <= strlen(cpu.mount))
            break;
        char *slash = strrchr(dir, '/');
        if (slash == NULL)
            break;
        *slash = '\0';
    }
    return best;
}

// The processors this process may run on: its affinity mask (taskset, docker --cpuset-cpus), capped by the
// cgroup's CPU quota (docker --cpus). Shared with the stand-in libjvm.so's JVM_ActiveProcessorCount.
int svm_container_active_processor_count(void)
{
    cpu_set_t set;
    int n = 0, quota = quota_processors();
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = CPU_COUNT(&set);
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0)
        n = 1;
    return quota > 0 && quota < n ? quota : n;
}

int svm_container_initialize(int wanted)
{
    if (wanted > SVM_CONTAINER_VERSION)
        return SVM_CONTAINER_TOO_OLD;
    if (wanted < SVM_CONTAINER_VERSION)
        return SVM_CONTAINER_TOO_NEW;
    if (containerized < 0) {
        discover();
        // As HotSpot: a process is "containerized" when its cgroup sets a limit or the cgroup file system is
        // mounted read-only (as container runtimes mount it).
        containerized =
            version != 0 && (svm_container_memory_limit_in_bytes() > 0 || quota_processors() > 0 || mem.read_only || cpu.read_only);
    }
    return containerized ? SVM_CONTAINER_CONTAINERIZED : SVM_CONTAINER_NOT_CONTAINERIZED;
}
