// SPDX-License-Identifier: MIT
// The CPU feature flags the builder's AArch64LibCHelper$CPUFeatures reads, one byte each (the builder requires
// byte-sized fields named f<FEATURE>; it lays its build-time mask over the same offsets). The field list is
// javap's of svm.jar 25.0.2.
#ifndef PREON_AARCH64CPUFEATURES_H
#define PREON_AARCH64CPUFEATURES_H
typedef struct CPUFeatures {
    unsigned char fFP;
    unsigned char fASIMD;
    unsigned char fEVTSTRM;
    unsigned char fAES;
    unsigned char fPMULL;
    unsigned char fSHA1;
    unsigned char fSHA2;
    unsigned char fCRC32;
    unsigned char fLSE;
    unsigned char fDCPOP;
    unsigned char fSHA3;
    unsigned char fSHA512;
    unsigned char fSVE;
    unsigned char fSVE2;
    unsigned char fSTXR_PREFETCH;
    unsigned char fA53MAC;
    unsigned char fDMB_ATOMICS;
    unsigned char fPACA;
    unsigned char fSVEBITPERM;
    unsigned char fFPHP;
    unsigned char fASIMDHP;
} CPUFeatures;
#endif
