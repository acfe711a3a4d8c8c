// SPDX-License-Identifier: MIT
// The stand-in libjvm.so a SubstrateVM executable linked to Temurin's shared JDK libraries needs: those
// libraries (libjava, libnio, libnet, libzip, libmanagement_ext) name libjvm.so and import JVM_* and jio_*
// symbols versioned SUNWprivate_1.1. In the executable the Java side is SubstrateVM's, so only the few that
// the JDK's C code calls on its own are implemented here: clocks, processor count, exit, library lookup,
// printing. Every other imported name is generated (jvm_unimplemented.c, by install.sh from the libraries'
// own symbol tables) as a function that says which one was called and aborts: a call no one expected is
// loud, never a wrong answer. Also SubstrateVM's own @CLibrary("jvm") (com.oracle.svm.core.jdk.Jvm:
// initialize, JVM_ActiveProcessorCount) resolves here.
#define _GNU_SOURCE
#include "include/svm_container.h"
#include <dlfcn.h>
#include <jni.h>
#include <langinfo.h>
#include <locale.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

// Called once by the executable before Java code runs (Jvm.initialize).
EXPORT void initialize(void) {}

EXPORT jint JVM_ActiveProcessorCount(void)
{
    svm_container_initialize(SVM_CONTAINER_VERSION);
    return svm_container_active_processor_count();
}

EXPORT jboolean JVM_IsContainerized(void)
{
    return svm_container_initialize(SVM_CONTAINER_VERSION) == SVM_CONTAINER_CONTAINERIZED;
}

EXPORT jboolean JVM_IsUseContainerSupport(void)
{
    return JNI_TRUE;
}

EXPORT jlong JVM_CurrentTimeMillis(JNIEnv *env, jclass ignored)
{
    struct timespec ts;
    (void)env, (void)ignored;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (jlong)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

EXPORT jlong JVM_NanoTime(JNIEnv *env, jclass ignored)
{
    struct timespec ts;
    (void)env, (void)ignored;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (jlong)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// The nanoseconds since OFFSET_SECS (jdk.internal.misc.VM.getNanoTimeAdjustment): -1 when the difference
// does not fit, as the JDK documents.
EXPORT jlong JVM_GetNanoTimeAdjustment(JNIEnv *env, jclass ignored, jlong offset_secs)
{
    struct timespec ts;
    (void)env, (void)ignored;
    clock_gettime(CLOCK_REALTIME, &ts);
    jlong diff = (jlong)ts.tv_sec - offset_secs;
    if (diff >= 0x100000000LL || diff <= -0x100000000LL)
        return -1;
    return diff * 1000000000 + ts.tv_nsec;
}

EXPORT void JVM_BeforeHalt(void) {}

EXPORT void JVM_Halt(jint code)
{
    fflush(NULL);
    _exit(code);
}

EXPORT void JVM_GC(void) {}

EXPORT void JVM_Yield(JNIEnv *env, jclass cls)
{
    (void)env, (void)cls;
    sched_yield();
}

EXPORT char *JVM_NativePath(char *path)
{
    return path;
}

// No JMM (java.lang.management's native interface): libmanagement_ext treats NULL as "not available".
EXPORT void *JVM_GetManagement(jint version)
{
    (void)version;
    return NULL;
}

EXPORT void *JVM_LoadLibrary(const char *name, jboolean throw_exception)
{
    (void)throw_exception;
    return dlopen(name, RTLD_LAZY);
}

EXPORT void JVM_UnloadLibrary(void *handle)
{
    dlclose(handle);
}

EXPORT void *JVM_FindLibraryEntry(void *handle, const char *name)
{
    return dlsym(handle, name);
}

EXPORT jint JVM_FindSignal(const char *name)
{
    static const struct {
        const char *name;
        int sig;
    } table[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"TERM", SIGTERM}, {"USR1", SIGUSR1},
                 {"USR2", SIGUSR2}, {"ALRM", SIGALRM}, {"CHLD", SIGCHLD}, {"PIPE", SIGPIPE}, {"WINCH", SIGWINCH}};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].sig;
    return -1;
}

EXPORT jboolean JVM_RaiseSignal(jint sig)
{
    return raise(sig) == 0;
}

EXPORT int jio_vsnprintf(char *str, size_t count, const char *fmt, va_list args)
{
    if ((intptr_t)count <= 0)
        return -1;
    int r = vsnprintf(str, count, fmt, args);
    return r >= 0 && (size_t)r < count ? r : -1; // the JDK's contract: -1 when truncated
}

EXPORT int jio_snprintf(char *str, size_t count, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int r = jio_vsnprintf(str, count, fmt, args);
    va_end(args);
    return r;
}

EXPORT int jio_vfprintf(FILE *f, const char *fmt, va_list args)
{
    return vfprintf(f, fmt, args);
}

EXPORT int jio_fprintf(FILE *f, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int r = vfprintf(f, fmt, args);
    va_end(args);
    return r;
}

// ---- the JDK libraries as built-in libraries -----------------------------------------------------------------
// The executable "loads" java, net, nio and zip by calling JNI_OnLoad_<name> (the JNI name of a statically
// linked library). Here they are Temurin's shared libraries, already mapped: their own JNI_OnLoad is what a
// JVM would call on System.loadLibrary. libjava also needs its platform encoding before JNU_* string
// conversions work ("platform encoding not initialized" otherwise): a JVM sets it while it reads the system
// properties, which SubstrateVM does itself, so it is set here, from the environment's LC_CTYPE codeset.

static jint on_load(JavaVM *vm, void *reserved, const char *soname)
{
    void *lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    jint (*real)(JavaVM *, void *) = lib != NULL ? (jint(*)(JavaVM *, void *))dlsym(lib, "JNI_OnLoad") : NULL;
    jint v = real != NULL ? real(vm, reserved) : JNI_VERSION_1_8;
    // A built-in library must answer 1.8 or later (libjava's own JNI_OnLoad answers 1.2).
    return v < 0 ? v : v < JNI_VERSION_1_8 ? JNI_VERSION_1_8 : v;
}

EXPORT jint JNI_OnLoad_java(JavaVM *vm, void *reserved)
{
    JNIEnv *env;
    jint v = on_load(vm, reserved, "libjava.so");
    void (*init)(JNIEnv *, const char *) = (void (*)(JNIEnv *, const char *))dlsym(RTLD_DEFAULT, "InitializeEncoding");
    if (init != NULL && (*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) == JNI_OK) {
        const char *encoding = "ISO8859-1";
        locale_t l = newlocale(LC_CTYPE_MASK, "", (locale_t)0);
        if (l != (locale_t)0) {
            const char *codeset = nl_langinfo_l(CODESET, l);
            if (strcmp(codeset, "UTF-8") == 0)
                encoding = "UTF-8";
            else if (strcmp(codeset, "ANSI_X3.4-1968") == 0)
                encoding = "ISO646-US";
            freelocale(l);
        }
        init(env, encoding);
    }
    return v;
}

EXPORT jint JNI_OnLoad_net(JavaVM *vm, void *reserved)
{
    return on_load(vm, reserved, "libnet.so");
}

EXPORT jint JNI_OnLoad_nio(JavaVM *vm, void *reserved)
{
    return on_load(vm, reserved, "libnio.so");
}

EXPORT jint JNI_OnLoad_zip(JavaVM *vm, void *reserved)
{
    return on_load(vm, reserved, "libzip.so");
}

EXPORT jint JNI_OnLoad_management_ext(JavaVM *vm, void *reserved)
{
    return on_load(vm, reserved, "libmanagement_ext.so");
}
