// SPDX-License-Identifier: MIT
package peer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The fruits table through a HikariCP pool of pgjdbc connections. JDBC blocks, so queries run on an executor
 * with one thread per pooled connection: never on an event loop, and never more threads than connections.
 */
final class FruitStore implements AutoCloseable {
    private static final String LIST = "SELECT id, name FROM fruits ORDER BY id";

    /** One row; Jackson writes it as {"id":N,"name":"..."} in component order. */
    public record Fruit(int id, String name) {}

    private final HikariDataSource pool;
    private final ExecutorService executor;
    private final ObjectMapper json = new ObjectMapper();

    FruitStore(String databaseUrl, int size) {
        HikariConfig cfg = jdbcConfig(databaseUrl);
        cfg.setPoolName("fruits");
        cfg.setMaximumPoolSize(size); // and minimumIdle defaults to it: the pool is filled at start
        cfg.setInitializationFailTimeout(-1); // start even when the database is down; /fruits then answers 500
        cfg.setConnectionTimeout(2000); // a request waits at most this long for a connection
        pool = new HikariDataSource(cfg);
        executor = Executors.newFixedThreadPool(size, r -> {
            Thread t = new Thread(r, "jdbc");
            t.setDaemon(true);
            return t;
        });
    }

    /** The whole table as JSON bytes, computed on the executor. */
    CompletableFuture<byte[]> list() {
        return CompletableFuture.supplyAsync(this::query, executor);
    }

    private byte[] query() {
        try (Connection c = pool.getConnection();
             PreparedStatement s = c.prepareStatement(LIST);
             ResultSet rs = s.executeQuery()) {
            List<Fruit> fruits = new ArrayList<>();
            while (rs.next())
                fruits.add(new Fruit(rs.getInt(1), rs.getString(2)));
            // Through a String: Jackson 2.14's byte-writing generator writes a character outside the BMP (an
            // emoji) as an escaped surrogate pair, where jansson, and so preon, writes its four UTF-8 bytes.
            return json.writeValueAsString(fruits).getBytes(StandardCharsets.UTF_8);
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    }

    /** Takes no more queries and waits up to the timeout for those under way. */
    void drain(long timeout, TimeUnit unit) throws InterruptedException {
        executor.shutdown();
        executor.awaitTermination(timeout, unit);
    }

    @Override
    public void close() {
        pool.close();
    }

    /** postgresql://user[:password]@host[:port]/db[?params] (libpq's URI) → pgjdbc's URL, user and password. */
    static HikariConfig jdbcConfig(String databaseUrl) {
        URI u = URI.create(databaseUrl);
        if (!"postgresql".equals(u.getScheme()) && !"postgres".equals(u.getScheme()))
            throw new IllegalArgumentException("DATABASE_URL must be postgresql://user[:password]@host[:port]/db");
        HikariConfig cfg = new HikariConfig();
        String db = u.getRawPath() == null || u.getRawPath().length() <= 1 ? "postgres" : u.getRawPath().substring(1);
        cfg.setJdbcUrl("jdbc:postgresql://" + u.getHost() + (u.getPort() > 0 ? ":" + u.getPort() : "") + "/" + db
                + (u.getRawQuery() != null ? "?" + u.getRawQuery() : ""));
        String info = u.getRawUserInfo();
        if (info != null) {
            int colon = info.indexOf(':');
            cfg.setUsername(decode(colon < 0 ? info : info.substring(0, colon)));
            if (colon >= 0)
                cfg.setPassword(decode(info.substring(colon + 1)));
        }
        return cfg;
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }
}
