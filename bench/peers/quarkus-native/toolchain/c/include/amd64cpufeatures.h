// SPDX-License-Identifier: MIT
// The CPU feature flags the builder's AMD64LibCHelper$CPUFeatures reads, one byte each (the builder requires
// byte-sized fields named f<FEATURE>; it lays its build-time mask over the same offsets). The field list is
// javap's of svm.jar 25.0.2.
#ifndef PREON_AMD64CPUFEATURES_H
#define PREON_AMD64CPUFEATURES_H
typedef struct CPUFeatures {
    unsigned char fCX8;
    unsigned char fCMOV;
    unsigned char fFXSR;
    unsigned char fHT;
    unsigned char fMMX;
    unsigned char fAMD_3DNOW_PREFETCH;
    unsigned char fSSE;
    unsigned char fSSE2;
    unsigned char fSSE3;
    unsigned char fSSSE3;
    unsigned char fSSE4A;
    unsigned char fSSE4_1;
    unsigned char fSSE4_2;
    unsigned char fPOPCNT;
    unsigned char fLZCNT;
    unsigned char fTSC;
    unsigned char fTSCINV;
    unsigned char fTSCINV_BIT;
    unsigned char fAVX;
    unsigned char fAVX2;
    unsigned char fAES;
    unsigned char fERMS;
    unsigned char fCLMUL;
    unsigned char fBMI1;
    unsigned char fBMI2;
    unsigned char fRTM;
    unsigned char fADX;
    unsigned char fAVX512F;
    unsigned char fAVX512DQ;
    unsigned char fAVX512PF;
    unsigned char fAVX512ER;
    unsigned char fAVX512CD;
    unsigned char fAVX512BW;
    unsigned char fAVX512VL;
    unsigned char fSHA;
    unsigned char fFMA;
    unsigned char fVZEROUPPER;
    unsigned char fAVX512_VPOPCNTDQ;
    unsigned char fAVX512_VPCLMULQDQ;
    unsigned char fAVX512_VAES;
    unsigned char fAVX512_VNNI;
    unsigned char fFLUSH;
    unsigned char fFLUSHOPT;
    unsigned char fCLWB;
    unsigned char fAVX512_VBMI2;
    unsigned char fAVX512_VBMI;
    unsigned char fHV;
    unsigned char fSERIALIZE;
    unsigned char fRDTSCP;
    unsigned char fRDPID;
    unsigned char fFSRM;
    unsigned char fGFNI;
    unsigned char fAVX512_BITALG;
    unsigned char fPKU;
    unsigned char fOSPKE;
    unsigned char fCET_IBT;
    unsigned char fCET_SS;
    unsigned char fF16C;
    unsigned char fAVX512_IFMA;
    unsigned char fAVX_IFMA;
    unsigned char fAPX_F;
    unsigned char fSHA512;
    unsigned char fAVX512_FP16;
    unsigned char fAVX10_1;
    unsigned char fAVX10_2;
} CPUFeatures;
#endif
