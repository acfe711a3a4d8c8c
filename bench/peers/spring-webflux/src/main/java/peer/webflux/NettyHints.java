// SPDX-License-Identifier: MIT
package peer.webflux;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

/**
 * What Netty reflects on when its classes are initialized at run time, for the native executable
 * (spring-webflux-native/, which leaves out netty-codec-http's "initialize all of io.netty at build time", as
 * GraalVM's metadata repository does). Without these hints Reactor Netty's server does not start:
 * <ul>
 * <li>ResourceLeakDetector.addExclusions(class, names) looks the names up in class.getDeclaredMethods(): "Can't
 * find '[toLeakAwareBuffer]' in io.netty.buffer.AbstractByteBufAllocator";
 * <li>Netty's copy of JCTools takes its queues' field offsets with getDeclaredField(name): "NoSuchFieldException:
 * producerIndex" (MpscUnboundedArrayQueue, the event loops' task queue); every class of that package gets its
 * declared fields.
 * </ul>
 * Spring's AOT runs this at build time and writes the hints into reflect-config.json; on the JVM it does nothing.
 */
class NettyHints implements RuntimeHintsRegistrar {
    private static final String JCTOOLS = "io/netty/util/internal/shaded/org/jctools/";

    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        for (String c : new String[] {"io.netty.buffer.AbstractByteBufAllocator", "io.netty.util.ReferenceCountUtil",
                "io.netty.buffer.AdvancedLeakAwareByteBuf"}) {
            hints.reflection().registerType(TypeReference.of(c), MemberCategory.INTROSPECT_DECLARED_METHODS);
        }
        try {
            for (Resource r : new PathMatchingResourcePatternResolver(classLoader)
                    .getResources("classpath*:" + JCTOOLS + "**/*.class")) {
                String url = r.getURL().toString();
                String path = url.substring(url.lastIndexOf(JCTOOLS));
                String name = path.substring(0, path.length() - ".class".length()).replace('/', '.');
                if (name.endsWith("package-info")) {
                    continue; // not a class: AOT stops at "Invalid class name '…jctools.counters.package-info'"
                }
                hints.reflection().registerType(TypeReference.of(name), MemberCategory.DECLARED_FIELDS);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
