/* SPDX-License-Identifier: MIT */
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "cpus.h"

/* How many event loops server.threads: 0 means: the CPUs this process may really use, which in a container is
 * less than the machine has (docker --cpus sets a CFS quota, not an affinity mask). */

/* Opens FILE of the cgroup CG under the hierarchy mounted at DIR ("/sys/fs/cgroup" or "/sys/fs/cgroup/cpu").
 * Inside a container without a cgroup namespace (Docker on cgroup v1), /proc/self/cgroup names the host's path
 * (/docker/<id>) while the container sees its own cgroup mounted at the hierarchy's root: then the root's file. */
static FILE *open_cgroup_file(const char *dir, const char *cg, const char *file)
{
    char path[768];
    FILE *f = NULL;
    if (strcmp(cg, "/") != 0) {
        snprintf(path, sizeof(path), "%s%s/%s", dir, cg, file);
        f = fopen(path, "r");
    }
    if (f == NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, file);
        f = fopen(path, "r");
    }
    return f;
}

/* Reads "quota period" CPU limits of the calling process's cgroup: v2 cpu.max, or v1 cpu.cfs_quota_us and
 * cpu.cfs_period_us. Returns the limit rounded up, or 0 for none. Start-up only (small synchronous reads). */
static unsigned cgroup_cpu_limit(void)
{
    char line[512], dir[600];
    long quota = -1, period = 0;
    FILE *fp = fopen("/proc/self/cgroup", "r");
    if (fp == NULL)
        return 0;
    while (fgets(line, sizeof(line), fp) != NULL && quota < 0) {
        line[strcspn(line, "\n")] = '\0';
        char *ctrl = strchr(line, ':'), *cg = ctrl != NULL ? strchr(ctrl + 1, ':') : NULL;
        if (cg == NULL)
            continue;
        *cg++ = '\0';
        ctrl++;
        FILE *f;
        if (*ctrl == '\0') { /* v2 */
            if ((f = open_cgroup_file("/sys/fs/cgroup", cg, "cpu.max")) != NULL) {
                if (fscanf(f, "%ld %ld", &quota, &period) != 2)
                    quota = -1;
                fclose(f);
            }
        } else if (strcmp(ctrl, "cpu") == 0 || strcmp(ctrl, "cpu,cpuacct") == 0 || strcmp(ctrl, "cpuacct,cpu") == 0) {
            snprintf(dir, sizeof(dir), "/sys/fs/cgroup/%s", ctrl);
            if ((f = open_cgroup_file(dir, cg, "cpu.cfs_quota_us")) != NULL) {
                if (fscanf(f, "%ld", &quota) != 1)
                    quota = -1;
                fclose(f);
            }
            if ((f = open_cgroup_file(dir, cg, "cpu.cfs_period_us")) != NULL) {
                if (fscanf(f, "%ld", &period) != 1)
                    period = 0;
                fclose(f);
            }
        }
    }
    fclose(fp);
    return quota > 0 && period > 0 ? (unsigned)((quota + period - 1) / period) : 0;
}

unsigned preon__usable_cpus(void)
{
    unsigned n = 1, q;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        n = (unsigned)CPU_COUNT(&set);
    if ((q = cgroup_cpu_limit()) != 0 && q < n)
        n = q;
    return n < 1 ? 1 : n;
}
