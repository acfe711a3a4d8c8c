// SPDX-License-Identifier: MIT
// The container queries of the builder's ContainerLibrary (javap of svm.jar 25.0.2), as HotSpot answers them
// on Linux: limits of the process's own cgroup (v1 or v2, the lowest along the path up to the mount's root),
// -1 for "no limit", -2 when the value cannot be read.
#ifndef PREON_SVM_CONTAINER_H
#define PREON_SVM_CONTAINER_H
#include <stddef.h>
#define SVM_CONTAINER_VERSION 240100 // what Container.initialize passes; another value is refused
#define SVM_CONTAINER_NOT_CONTAINERIZED 0
#define SVM_CONTAINER_CONTAINERIZED 1
#define SVM_CONTAINER_TOO_OLD 2
#define SVM_CONTAINER_TOO_NEW 3
int svm_container_initialize(int version);
size_t svm_container_physical_memory(void);
long long svm_container_memory_limit_in_bytes(void);
long long svm_container_memory_and_swap_limit_in_bytes(void);
long long svm_container_memory_soft_limit_in_bytes(void);
long long svm_container_memory_usage_in_bytes(void);
long long svm_container_memory_max_usage_in_bytes(void);
long long svm_container_rss_usage_in_bytes(void);
long long svm_container_cache_usage_in_bytes(void);
int svm_container_active_processor_count(void);
#endif
