/* SPDX-License-Identifier: MIT */
#ifndef PREON_CPUS_H
#define PREON_CPUS_H

/**
 * CPUs this process may use: its affinity mask, lowered by its cgroup's CPU quota (v2 cpu.max, v1
 * cpu.cfs_quota_us / cpu.cfs_period_us, rounded up), e.g. docker --cpus. At least 1. Start-up only: it reads a few
 * small files synchronously.
 */
unsigned preon__usable_cpus(void);

#endif
