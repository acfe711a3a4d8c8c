# SPDX-License-Identifier: MIT
"""bench/peers/quarkus-native/toolchain/native-image, the front end alone (no builder run, ~1 s): the driver
options Quarkus passes become the builder's hosted options, @argfiles and -J options are read, -jar takes the
manifest's class path and main class, and META-INF/native-image/** on the class path adds its Args and config
files, minus --exclude-config."""
import importlib.machinery
import importlib.util
import os
import tempfile
import unittest
import zipfile

REPO = os.environ.get("PREON_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATH = os.path.join(REPO, "bench", "peers", "quarkus-native", "toolchain", "native-image")
loader = importlib.machinery.SourceFileLoader("native_image", PATH)
spec = importlib.util.spec_from_loader("native_image", loader)
ni = importlib.util.module_from_spec(spec)
loader.exec_module(ni)


class FrontEnd(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def path(self, name):
        return os.path.join(self.dir.name, name)

    def test_quarkus_options_become_hosted_options(self):
        b = ni.parse(["--no-fallback", "--link-at-build-time", "--features=a.B,c.D", "--enable-url-protocols=http",
                      "--install-exit-handlers", "--initialize-at-run-time=x.Y,z", "--enable-monitoring=heapdump",
                      "-march=compatibility", "-O2", "-J-Xmx5g", "-J-Dfoo=bar", "-H:+ReportExceptionStackTraces",
                      "-cp", "a.jar:b", "some.Main", "app"])
        self.assertEqual(b.hosted, ["-H:FallbackThreshold=0", "-H:LinkAtBuildTime=", "-H:Features=a.B,c.D",
                                    "-H:EnableURLProtocols=http", "-H:+InstallExitHandlers",
                                    "-H:ClassInitialization=x.Y:run_time", "-H:ClassInitialization=z:run_time",
                                    "-H:EnableMonitoringFeatures=heapdump", "-H:MicroArchitecture=compatibility",
                                    "-H:Optimize=2",
                                    "-H:+ReportExceptionStackTraces"])
        self.assertEqual(b.jvm, ["-Xmx5g", "-Dfoo=bar"])
        self.assertEqual((b.classpath, b.main, b.name), (["a.jar", "b"], "some.Main", "app"))

    def test_what_native_maven_plugin_and_users_pass(self):
        # the builder's own names (svm-25.0.2.jar): -march is NativeImageOptions.MicroArchitecture, --gc=serial and
        # --gc=epsilon are SubstrateOptions' UseSerialGC / UseEpsilonGC, -o DIR/NAME is -H:Path=DIR and the name
        b = ni.parse(["-march=x86-64-v3", "--gc=serial", "-O3", "-o", "/tmp/out/dir/app-runner", "-cp", "a.jar", "M"])
        self.assertEqual(b.hosted, ["-H:MicroArchitecture=x86-64-v3", "-H:+UseSerialGC", "-H:Optimize=3",
                                    "-H:Path=/tmp/out/dir"])
        self.assertEqual((b.name, b.main), ("app-runner", "M"))
        self.assertEqual(ni.parse(["--gc=epsilon", "-o", "plain", "M"]).hosted, ["-H:+UseEpsilonGC"])
        self.assertEqual(ni.parse(["--gc=epsilon", "-o", "plain", "M"]).name, "plain")
        with self.assertRaises(SystemExit):
            ni.parse(["--gc=G1", "M"])  # Oracle GraalVM's: not in these jars

    def test_options_exist_in_the_builder(self):
        # each hosted option the front end writes is one the builder declares (its *_OptionDescriptors classes):
        # checked against the jars when the toolchain has been installed here
        jar = os.path.join(REPO, "bench", "peers", "quarkus-native", "build", "toolchain", "home", "lib", "svm",
                           "builder", "svm-25.0.2.jar")
        if not os.path.exists(jar):
            self.skipTest("the toolchain is not installed here (toolchain/install.sh)")
        with zipfile.ZipFile(jar) as z:
            text = b"".join(z.read(n) for n in z.namelist() if n.endswith("_OptionDescriptors.class"))
        for option in ("MicroArchitecture", "UseSerialGC", "UseEpsilonGC", "Optimize", "Path", "Name"):
            self.assertIn(option.encode(), text, option)

    def test_module_options_are_the_builders_for_the_image_classes(self):
        b = ni.parse(["--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED", "M"])
        self.assertEqual(b.hosted, ["-H:AddOpens=java.base/java.lang=ALL-UNNAMED", "-H:AddExports=java.base/sun.nio.ch=ALL-UNNAMED"])
        self.assertEqual(b.jvm, [])

    def test_an_unknown_option_is_an_error_on_the_command_line(self):
        with self.assertRaises(SystemExit):
            ni.parse(["--no-such-option", "Main"])

    def test_argfiles_nest(self):
        with open(self.path("inner"), "w") as f:
            f.write("--no-fallback\n# a comment\n'-H:Name=with space'\n")
        with open(self.path("outer"), "w") as f:
            f.write("@%s -cp x Main\n" % self.path("inner"))
        self.assertEqual(ni.expand(["@" + self.path("outer")]), ["--no-fallback", "-H:Name=with space", "-cp", "x", "Main"])

    def test_jar_gives_its_manifest_class_path_and_main_class_and_config(self):
        with zipfile.ZipFile(self.path("lib.jar"), "w") as z:
            z.writestr("META-INF/native-image/g/a/native-image.properties",
                       "Args = --initialize-at-run-time=io.netty.X \\\n       -H:ReflectionConfigurationResources=${.}/r.json\n")
            z.writestr("META-INF/native-image/g/a/reflect-config.json", "[]")
            z.writestr("META-INF/native-image/g/skip/resource-config.json", "{}")
        with zipfile.ZipFile(self.path("app.jar"), "w") as z:
            z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nMain-Class: io.quarkus.runner.GeneratedMain\n"
                                               "Class-Path: lib.jar\n")
        b = ni.parse(["-jar", self.path("app.jar"), "--exclude-config", r"lib\.jar", r"/META-INF/native-image/g/skip/.*"])
        ni.collect(b)
        self.assertEqual(b.main, "io.quarkus.runner.GeneratedMain")
        self.assertEqual(b.name, "app")
        self.assertEqual(b.classpath, [self.path("app.jar"), self.path("lib.jar")])
        self.assertEqual(b.hosted, ["-H:ClassInitialization=io.netty.X:run_time",
                                    "-H:ReflectionConfigurationResources=META-INF/native-image/g/a/r.json",
                                    "-H:ReflectionConfigurationResources=META-INF/native-image/g/a/reflect-config.json"])

    def test_main_class_from_native_image_properties(self):
        # Spring Boot's AOT writes the main class only there (native-maven-plugin passes none): Args = -H:Class=…
        classes = self.path("classes")
        folder = os.path.join(classes, "META-INF", "native-image", "g", "a")
        os.makedirs(folder)
        with open(os.path.join(folder, "native-image.properties"), "w") as f:
            f.write("Args = -H:Class=peer.webflux.Application \\\n--report-unsupported-elements-at-runtime \\\n"
                    "--no-fallback \\\n--install-exit-handlers")
        b = ni.parse(["-cp", classes, "--no-fallback", "-o", self.path("out/app")])
        self.assertIsNone(b.main)
        ni.collect(b)
        self.assertEqual((b.main, b.name), ("peer.webflux.Application", "app"))
        self.assertEqual(b.hosted[:3], ["-H:+ReportUnsupportedElementsAtRuntime", "-H:FallbackThreshold=0",
                                        "-H:+InstallExitHandlers"])
        # and main() builds it (the builder's run replaced here), where it used to stop at "no main class"
        seen = []
        self.addCleanup(setattr, ni, "run", ni.run)
        ni.run = seen.append
        ni.main(["-cp", classes, "--no-fallback", "-o", self.path("out/app")])
        self.assertEqual(seen[0].main, "peer.webflux.Application")

    def test_builder_jvm_has_lambdas_without_eager_instances(self):
        # as GraalVM's driver starts its builder: without it, a lambda made in a simulated class initializer
        # (Spring Data's RepositoryFactorySupport) is an instance of a class left to run time, a fatal error
        calls = []
        self.addCleanup(setattr, ni.subprocess, "call", ni.subprocess.call)
        ni.subprocess.call = lambda cmd: calls.append(cmd) or 1
        b = ni.parse(["-cp", "x", "-J-Dmine=1", "M"])
        ni.run(b)
        cmd = calls[0]
        self.assertIn("-Djdk.internal.lambda.disableEagerInitialization=true", cmd)
        # before the user's -J options, which may change it
        self.assertLess(cmd.index("-Djdk.internal.lambda.disableEagerInitialization=true"), cmd.index("-Dmine=1"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
