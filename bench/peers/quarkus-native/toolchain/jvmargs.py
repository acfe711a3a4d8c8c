#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Prints the JVM options that run GraalVM's builder on the JDK at HOME (one per line, a java @argfile):
JVMCI on, the builder's jars as modules (the compiler upgrading the JDK's own jdk.graal.compiler), and every
package of every JDK module the builder's boot layer resolves exported to the builder's modules (the builder
reaches into the JDK's internals by design; a narrower list failed one IllegalAccessError at a time).

usage: jvmargs.py HOME"""
import os
import subprocess
import sys

MAIN = "org.graalvm.nativeimage.builder/com.oracle.svm.hosted.NativeImageGeneratorRunner"
BUILDER = [
    "org.graalvm.nativeimage.builder",
    "org.graalvm.nativeimage.base",
    "org.graalvm.nativeimage.pointsto",
    "org.graalvm.nativeimage.objectfile",
    "org.graalvm.nativeimage.configure",
    "jdk.graal.compiler",
    "ALL-UNNAMED",
]


def module_paths(home):
    jars = os.path.join(home, "lib", "svm", "builder")
    names = sorted(f for f in os.listdir(jars) if f.endswith(".jar"))
    compiler = [os.path.join(jars, f) for f in names if f.startswith("compiler-")]
    others = [os.path.join(jars, f) for f in names if not f.startswith("compiler-")]
    return ["--upgrade-module-path", ":".join(compiler), "--module-path", ":".join(others)]


def exports(java):
    modules = subprocess.run([java, "--list-modules"], check=True, capture_output=True, text=True).stdout.split()
    for m in (m.split("@")[0] for m in modules):
        out = subprocess.run([java, "--describe-module", m], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            w = line.split()
            if len(w) >= 2 and w[0] == "contains":
                yield m, w[1]
            elif len(w) >= 3 and w[:2] == ["qualified", "exports"]:
                yield m, w[2]


def main(argv):
    home = argv[1]
    java = os.path.join(home, "bin", "java")
    fixed = ["-XX:+UnlockExperimentalVMOptions", "-XX:+EnableJVMCI", "-XX:-UseJVMCICompiler",
             "-Dorg.graalvm.nativeimage.imagecode=buildtime",
             "-Djava.system.class.loader=com.oracle.svm.hosted.NativeImageSystemClassLoader",
             "--enable-native-access=org.graalvm.nativeimage.builder,ALL-UNNAMED"] + module_paths(home)
    pairs = list(exports(java))
    # Keep only the modules the builder's boot layer has: the JVM warns of the others at every start.
    # (--dry-run: the boot layer of the builder's main module, resolved and not run; without a main module the
    # JVM would resolve every system module and warn of none.)
    probe = subprocess.run([java] + module_paths(home) + [f"--add-exports={m}/{p}=java.base" for m, p in pairs]
                           + ["--dry-run", "--module", MAIN], capture_output=True, text=True).stderr
    unknown = {line.split("Unknown module: ")[1].split()[0] for line in probe.splitlines() if "Unknown module: " in line}
    targets = ",".join(BUILDER)
    for a in fixed:
        print(a)
    for m, p in pairs:
        if m not in unknown:
            print(f"--add-exports={m}/{p}={targets}")


if __name__ == "__main__":
    main(sys.argv)
