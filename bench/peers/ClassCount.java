// SPDX-License-Identifier: MIT
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import java.util.zip.ZipInputStream;

/**
 * The classes of an application as Paketo's memory calculator counts them (its count.Classes): every .class file
 * under the paths given, and every .class entry of the jars there, a Spring Boot jar's nested BOOT-INF/lib/*.jar
 * included. Run by jvm.Dockerfile's build stage (java ClassCount.java PATH...): the image's APP_CLASS_COUNT.
 */
public final class ClassCount {
    public static void main(String[] args) throws IOException {
        long n = 0;
        for (String a : args) {
            try (Stream<Path> files = Files.walk(Path.of(a))) {
                for (Path p : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                    String name = p.toString();
                    if (name.endsWith(".class")) {
                        n++;
                    } else if (name.endsWith(".jar") || name.endsWith(".zip")) {
                        try (InputStream in = Files.newInputStream(p)) {
                            n += inJar(in);
                        }
                    }
                }
            }
        }
        System.out.println(n);
    }

    private static long inJar(InputStream in) throws IOException {
        long n = 0;
        ZipInputStream z = new ZipInputStream(in);
        for (var e = z.getNextEntry(); e != null; e = z.getNextEntry()) {
            if (e.getName().endsWith(".class")) {
                n++;
            } else if (e.getName().endsWith(".jar")) {
                n += inJar(z); // a nested jar, read in place
            }
        }
        return n;
    }
}
