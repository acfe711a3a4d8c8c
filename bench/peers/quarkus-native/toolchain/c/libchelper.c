// SPDX-License-Identifier: MIT
// liblibchelper.a: the small C functions a SubstrateVM executable calls through @CLibrary("libchelper")
// (javap of svm.jar 25.0.2: LibCHelper, AMD64LibCHelper, LocaleCHelper, LinuxLibCHelper, CSunMiscSignal,
// AttachHelper, CodeSynchronizationOperations), written for preon. What they do is what the Java side needs,
// as far as javap and the builder's behaviour tell: the CPU features by cpuid, the time zone and locale from
// the environment, the thread id and CPU time, a semaphore for sun.misc.Signal. The attach listener (jcmd)
// is not provided: its functions report failure (see README.md).
#define _GNU_SOURCE
#include "include/amd64cpufeatures.h"
#include "include/svm_locale.h"
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

char **getEnviron(void)
{
    return environ;
}

// ---- CPU features ------------------------------------------------------------------------------------------

static unsigned long long xcr0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

// Fills F from cpuid, 1 for present, 0 for absent; AVX and AVX-512 count only when the OS saves their
// registers (XCR0), as HotSpot's VM_Version does.
void determineCPUFeatures(CPUFeatures *f)
{
    unsigned int a, b, c, d, max, ext;
    memset(f, 0, sizeof(*f));
    max = __get_cpuid_max(0, NULL);
    if (max < 1)
        return;
    __cpuid(1, a, b, c, d);
    f->fCX8 = (d >> 8) & 1, f->fCMOV = (d >> 15) & 1, f->fFXSR = (d >> 24) & 1, f->fHT = (d >> 28) & 1;
    f->fMMX = (d >> 23) & 1, f->fSSE = (d >> 25) & 1, f->fSSE2 = (d >> 26) & 1, f->fTSC = (d >> 4) & 1;
    f->fFLUSH = (d >> 19) & 1;
    f->fSSE3 = c & 1, f->fCLMUL = (c >> 1) & 1, f->fSSSE3 = (c >> 9) & 1, f->fFMA = (c >> 12) & 1;
    f->fSSE4_1 = (c >> 19) & 1, f->fSSE4_2 = (c >> 20) & 1, f->fPOPCNT = (c >> 23) & 1, f->fAES = (c >> 25) & 1;
    f->fF16C = (c >> 29) & 1, f->fHV = (c >> 31) & 1;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    unsigned long long xcr = osxsave ? xcr0() : 0;
    int os_avx = (xcr & 0x6) == 0x6, os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;
    f->fAVX = avx && os_avx;
    f->fVZEROUPPER = f->fAVX;
    if (max >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f->fBMI1 = (b >> 3) & 1, f->fAVX2 = ((b >> 5) & 1) && os_avx, f->fBMI2 = (b >> 8) & 1;
        f->fERMS = (b >> 9) & 1, f->fRTM = (b >> 11) & 1, f->fADX = (b >> 19) & 1, f->fSHA = (b >> 29) & 1;
        f->fFLUSHOPT = (b >> 23) & 1, f->fCLWB = (b >> 24) & 1;
        if (os_avx512) {
            f->fAVX512F = (b >> 16) & 1, f->fAVX512DQ = (b >> 17) & 1, f->fAVX512_IFMA = (b >> 21) & 1;
            f->fAVX512PF = (b >> 26) & 1, f->fAVX512ER = (b >> 27) & 1, f->fAVX512CD = (b >> 28) & 1;
            f->fAVX512BW = (b >> 30) & 1, f->fAVX512VL = (b >> 31) & 1;
            f->fAVX512_VBMI = (c >> 1) & 1, f->fAVX512_VBMI2 = (c >> 6) & 1, f->fAVX512_VNNI = (c >> 11) & 1;
            f->fAVX512_BITALG = (c >> 12) & 1, f->fAVX512_VPOPCNTDQ = (c >> 14) & 1;
            f->fAVX512_VAES = (c >> 9) & 1, f->fAVX512_VPCLMULQDQ = (c >> 10) & 1;
            f->fAVX512_FP16 = (d >> 23) & 1;
        }
        f->fPKU = (c >> 3) & 1, f->fOSPKE = (c >> 4) & 1, f->fGFNI = (c >> 8) & 1, f->fRDPID = (c >> 22) & 1;
        f->fCET_SS = (c >> 7) & 1, f->fFSRM = (d >> 4) & 1, f->fSERIALIZE = (d >> 14) & 1;
        f->fCET_IBT = (d >> 20) & 1;
        if (a >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f->fSHA512 = a & 1 && os_avx, f->fAVX_IFMA = (a >> 23) & 1 && os_avx;
            // APX and AVX10 need OS state this helper does not check: left absent.
        }
    }
    ext = __get_cpuid_max(0x80000000, NULL);
    if (ext >= 0x80000001) {
        __cpuid(0x80000001, a, b, c, d);
        f->fLZCNT = (c >> 5) & 1, f->fSSE4A = (c >> 6) & 1, f->fAMD_3DNOW_PREFETCH = (c >> 8) & 1;
        f->fRDTSCP = (d >> 27) & 1;
    }
    if (ext >= 0x80000007) {
        __cpuid(0x80000007, a, b, c, d);
        f->fTSCINV_BIT = (d >> 8) & 1;
        f->fTSCINV = f->fTSCINV_BIT;
    }
}

// MASK is the builder's: one byte per feature at the struct's offsets, 0xFE where the executable was compiled
// to need the feature, 0xFF elsewhere; a needed feature this CPU lacks leaves a byte not 0xFF. 0 when all are here.
int checkCPUFeatures(const unsigned char *mask)
{
    CPUFeatures f;
    const unsigned char *have = (const unsigned char *)&f;
    determineCPUFeatures(&f);
    for (size_t i = 0; i < sizeof(f); i++)
        if ((unsigned char)(have[i] | mask[i]) != 0xff)
            return 1;
    return 0;
}

int checkCPUFeaturesOrExit(const unsigned char *mask, const char *message)
{
    if (checkCPUFeatures(mask) == 0)
        return 0;
    fputs(message, stderr);
    fputc('\n', stderr);
    exit(1);
}

// ---- time zone and locale ----------------------------------------------------------------------------------

// The time zone ID (e.g. "Europe/Paris"), malloc'd, or NULL for GMT: TZ, else the zoneinfo file that
// /etc/localtime links to, else /etc/timezone. (JAVA_HOME_DIR is not needed: no tzmappings on Linux.)
char *SVM_FindJavaTZmd(const char *java_home_dir, int len)
{
    char buf[PATH_MAX];
    const char *tz = getenv("TZ");
    (void)java_home_dir, (void)len;
    if (tz != NULL && *tz != '\0') {
        if (*tz == ':')
            tz++;
        const char *z = strstr(tz, "zoneinfo/");
        return strdup(z ? z + 9 : tz);
    }
    ssize_t n = readlink("/etc/localtime", buf, sizeof(buf) - 1);
    if (n > 0) {
        buf[n] = '\0';
        const char *z = strstr(buf, "zoneinfo/");
        if (z != NULL)
            return strdup(z + 9);
    }
    FILE *f = fopen("/etc/timezone", "r");
    if (f != NULL) {
        char *r = NULL;
        if (fgets(buf, sizeof(buf), f) != NULL) {
            buf[strcspn(buf, " \t\n")] = '\0';
            if (buf[0] != '\0')
                r = strdup(buf);
        }
        fclose(f);
        if (r != NULL)
            return r;
    }
    return n > 0 ? NULL : strdup("UTC"); // no /etc/localtime at all (a slim image): UTC, as glibc assumes
}

static svm_locale_props_t props;

// Splits a POSIX locale name "ll_CC.codeset@modifier" into language, country and variant, as the JDK does
// for user.language / user.country: "C" and "POSIX" are en (no country).
static int split_locale(const char *name, char **language, char **country, char **variant)
{
    char *copy, *at, *dot, *under;
    if (name == NULL || strcmp(name, "C") == 0 || strcmp(name, "POSIX") == 0 || strncmp(name, "C.", 2) == 0)
        name = "en";
    copy = strdup(name);
    if (copy == NULL)
        return -1;
    at = strchr(copy, '@');
    if (at != NULL)
        *at++ = '\0';
    dot = strchr(copy, '.');
    if (dot != NULL)
        *dot = '\0';
    under = strchr(copy, '_');
    if (under != NULL)
        *under++ = '\0';
    *language = copy;
    *country = under != NULL && *under != '\0' ? under : NULL;
    *variant = at != NULL && *at != '\0' ? at : NULL;
    return 0;
}

int svm_initialize_locale(void)
{
    // The environment's locale, read as setlocale reads it, without changing the process's locale.
    const char *all = getenv("LC_ALL"), *lang = getenv("LANG");
    const char *ctype = all && *all ? all : getenv("LC_CTYPE"), *messages = all && *all ? all : getenv("LC_MESSAGES");
    if (ctype == NULL || *ctype == '\0')
        ctype = lang;
    if (messages == NULL || *messages == '\0')
        messages = lang;
    if (split_locale(messages, &props.display_language, &props.display_country, &props.display_variant) != 0 ||
        split_locale(ctype, &props.format_language, &props.format_country, &props.format_variant) != 0)
        return SVM_LOCALE_INITIALIZATION_OUT_OF_MEMORY;
    props.display_script = props.format_script = NULL;
    return SVM_LOCALE_INITIALIZATION_SUCCEEDED;
}

svm_locale_props_t *svm_get_locale(void)
{
    return &props;
}

// ---- threads and memory ------------------------------------------------------------------------------------

int getThreadId(void)
{
    return (int)syscall(SYS_gettid);
}

// Thread TID's user CPU time in nanoseconds from /proc (utime, field 14, in clock ticks); -1 if unreadable.
long long getThreadUserTimeSlow(int tid)
{
    char path[64], buf[1024];
    unsigned long long utime;
    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); // the command name may hold spaces and parentheses
    if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu", &utime) != 1)
        return -1;
    return (long long)(utime * (1000000000ULL / (unsigned long long)sysconf(_SC_CLK_TCK)));
}

void *mremapP(void *old, size_t old_size, size_t new_size, int flags, void *new_address)
{
    return mremap(old, old_size, new_size, flags, new_address);
}

void codeSynchronization_clearCache(long start, long size)
{
    __builtin___clear_cache((char *)start, (char *)start + size);
}

// ---- sun.misc.Signal ---------------------------------------------------------------------------------------
// The handler counts each signal and posts a semaphore (both async-signal-safe); a Java thread waits on the
// semaphore and takes the pending signals one by one.

static sem_t semaphore;
static atomic_int pending[NSIG];
static int opened;

int cSunMiscSignal_open(void)
{
    if (opened)
        return -1;
    if (sem_init(&semaphore, 0, 0) != 0)
        return -1;
    opened = 1;
    return 0;
}

int cSunMiscSignal_close(void)
{
    if (!opened)
        return -1;
    opened = 0;
    return sem_destroy(&semaphore);
}

int cSunMiscSignal_awaitSemaphore(void)
{
    int r;
    while ((r = sem_wait(&semaphore)) != 0 && errno == EINTR)
        ;
    return r;
}

int cSunMiscSignal_signalSemaphore(void)
{
    return sem_post(&semaphore);
}

int cSunMiscSignal_signalRangeCheck(int sig)
{
    return sig > 0 && sig < NSIG;
}

// A signal that arrived and was not yet taken, or -1.
int cSunMiscSignal_checkPendingSignal(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        int n = atomic_load(&pending[sig]);
        while (n > 0)
            if (atomic_compare_exchange_weak(&pending[sig], &n, n - 1))
                return sig;
    }
    return -1;
}

static void dispatch(int sig)
{
    if (sig > 0 && sig < NSIG) {
        atomic_fetch_add(&pending[sig], 1);
        sem_post(&semaphore);
    }
}

void (*cSunMiscSignal_signalHandlerFunctionPointer(void))(int)
{
    return dispatch;
}

// ---- attach listener (jcmd): not provided ------------------------------------------------------------------

void svm_attach_startup(const char *path)
{
    (void)path;
}

void svm_attach_listener_cleanup(int fd, const char *path)
{
    (void)fd, (void)path;
}

int svm_attach_check_socket_file(const char *path)
{
    (void)path;
    return 0;
}

int svm_attach_is_init_trigger(const char *path)
{
    (void)path;
    return 0;
}

int svm_attach_create_listener(const char *path)
{
    (void)path;
    return -1;
}

int svm_attach_wait_for_request(int fd)
{
    (void)fd;
    return -1;
}

void svm_attach_shutdown_socket(int fd)
{
    (void)fd;
}

// ---- fixed-argument forms of variadic libc functions (the Java side cannot call a variadic one) -----------

int openSII(const char *path, int flags, int mode)
{
    return open(path, flags, mode);
}

int openatISII(int dirfd, const char *path, int flags, int mode)
{
    return openat(dirfd, path, flags, mode);
}

int fprintfSD(FILE *f, const char *format, const char *s, int d)
{
    return fprintf(f, format, s, d);
}
