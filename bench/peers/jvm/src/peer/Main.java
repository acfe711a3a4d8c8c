// SPDX-License-Identifier: MIT
package peer;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import sun.misc.Signal;

/**
 * The JVM service of the comparison, from Debian's jars only: a Netty HTTP server (NIO event loops, Netty's
 * default of two per CPU, as Vert.x under Quarkus), HikariCP + pgjdbc for PostgreSQL, Jackson for JSON.
 *
 * <p>Environment: PORT (8080), LISTEN (the address, 127.0.0.1), DATABASE_URL (a libpq URI), POOL_SIZE (10).
 * SIGTERM or SIGINT: stop accepting, let the queries in flight answer, close the pool, exit 0.
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        // Before any logger exists: HikariCP and Netty log through slf4j-simple, warnings and errors only.
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        String host = getenv("LISTEN", "127.0.0.1").replaceAll("^\\[|\\]$", "");
        int port = Integer.parseInt(getenv("PORT", "8080"));
        int poolSize = Integer.parseInt(getenv("POOL_SIZE", "10"));
        if (poolSize < 1)
            throw new IllegalArgumentException("POOL_SIZE must be a positive integer");

        CountDownLatch stop = new CountDownLatch(1);
        Signal.handle(new Signal("TERM"), s -> stop.countDown());
        Signal.handle(new Signal("INT"), s -> stop.countDown());

        FruitStore store = new FruitStore(getenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:25432/preon"), poolSize);
        EventLoopGroup boss = new NioEventLoopGroup(1);
        EventLoopGroup workers = new NioEventLoopGroup();
        Channel server = new ServerBootstrap()
                .group(boss, workers)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpHandler(store));
                    }
                })
                .bind(host, port).sync().channel();
        System.err.printf("jvm peer (netty, hikari pool of %d) listening on %s%n", poolSize, server.localAddress());

        stop.await();
        server.close().syncUninterruptibly();
        store.drain(10, TimeUnit.SECONDS); // answers of queries in flight are written by the event loops below
        workers.shutdownGracefully(100, 5000, TimeUnit.MILLISECONDS).syncUninterruptibly();
        boss.shutdownGracefully(0, 1000, TimeUnit.MILLISECONDS).syncUninterruptibly();
        store.close();
        System.err.println("stopped");
        System.exit(0);
    }

    private static String getenv(String key, String def) {
        String v = System.getenv(key);
        return v == null || v.isEmpty() ? def : v;
    }
}
