// SPDX-License-Identifier: MIT
// The small program tests/bench/test_native_toolchain.py compiles with preon's native-image toolchain: each
// line prints one thing the executable gets from the toolchain's C helpers or Temurin's libraries.
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TimeZone;

public class Probe {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("wait")) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println("hook ran")));
            System.out.println("waiting");
            System.out.flush();
            Thread.sleep(120_000);
            return;
        }
        System.out.println("processors " + Runtime.getRuntime().availableProcessors());
        System.out.println("millis " + System.currentTimeMillis());
        long t0 = System.nanoTime();
        Thread.sleep(50);
        System.out.println("slept_ms " + (System.nanoTime() - t0) / 1_000_000);
        System.out.println("zone " + TimeZone.getDefault().getID());
        System.out.println("file " + Files.readString(Path.of(args[0])).strip());
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            try (SocketChannel client = SocketChannel.open(server.getLocalAddress());
                 SocketChannel accepted = server.accept()) {
                client.write(ByteBuffer.wrap("ping".getBytes(StandardCharsets.UTF_8)));
                ByteBuffer got = ByteBuffer.allocate(4);
                while (got.hasRemaining())
                    accepted.read(got);
                System.out.println("echo " + new String(got.array(), StandardCharsets.UTF_8));
            }
        }
        System.out.println("maxheap " + Runtime.getRuntime().maxMemory());
        System.exit(3);
    }
}
