// SPDX-License-Identifier: MIT
// The builder's progress reporter asks the JVM that runs it for two things Java cannot tell: the terminal's
// width and the builder's peak resident memory (the "Peak RSS" of the build's summary). Loaded with
// System.load from <home>/lib/svm/builder/lib/libreporterchelper.so; the names are JNI's for the two static
// natives of com.oracle.svm.hosted.ProgressReporterCHelper (javap: getTerminalWindowColumns0()I,
// getPeakRSS0()J).
#include <jni.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

JNIEXPORT jint JNICALL Java_com_oracle_svm_hosted_ProgressReporterCHelper_getTerminalWindowColumns0(JNIEnv *env, jclass cls)
{
    struct winsize ws;
    (void)env, (void)cls;
    // Not a terminal (a build log, a pipe): the reporter clamps what it gets, 0 included.
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0)
        return 0;
    return ws.ws_col;
}

JNIEXPORT jlong JNICALL Java_com_oracle_svm_hosted_ProgressReporterCHelper_getPeakRSS0(JNIEnv *env, jclass cls)
{
    struct rusage ru;
    (void)env, (void)cls;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (jlong)ru.ru_maxrss * 1024; // Linux reports kilobytes
}
