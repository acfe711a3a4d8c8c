// SPDX-License-Identifier: MIT
// The CPU feature flags the builder's RISCV64LibCHelper$CPUFeatures reads, one byte each (the builder requires
// byte-sized fields named f<FEATURE>; it lays its build-time mask over the same offsets). The field list is
// javap's of svm.jar 25.0.2.
#ifndef PREON_RISCV64CPUFEATURES_H
#define PREON_RISCV64CPUFEATURES_H
typedef struct CPUFeatures {
    unsigned char fI;
    unsigned char fM;
    unsigned char fA;
    unsigned char fF;
    unsigned char fD;
    unsigned char fC;
    unsigned char fV;
} CPUFeatures;
#endif
