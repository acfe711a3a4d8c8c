// SPDX-License-Identifier: MIT
package peer;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * DATABASE_URL, the libpq URI run.sh exports (postgresql://user[:password]@host[:port]/database), split into the
 * parts a JDBC or R2DBC driver is configured with.
 */
public final class DbUrl {
    public final String host;
    public final int port;
    public final String database;
    public final String user;
    public final String password;

    private DbUrl(String host, int port, String database, String user, String password) {
        this.host = host;
        this.port = port;
        this.database = database;
        this.user = user;
        this.password = password;
    }

    /** DATABASE_URL; without it libpq's PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD (an image is given those). */
    public static DbUrl fromEnv() {
        String url = System.getenv("DATABASE_URL");
        if (url != null && !url.isEmpty()) {
            return parse(url);
        }
        String host = env("PGHOST", "127.0.0.1");
        return new DbUrl(host, Integer.parseInt(env("PGPORT", host.equals("127.0.0.1") ? "25432" : "5432")),
                env("PGDATABASE", "preon"), env("PGUSER", "postgres"), System.getenv("PGPASSWORD"));
    }

    private static String env(String key, String dflt) {
        String v = System.getenv(key);
        return v == null || v.isEmpty() ? dflt : v;
    }

    public static DbUrl parse(String url) {
        URI u = URI.create(url);
        if (!"postgresql".equals(u.getScheme()) && !"postgres".equals(u.getScheme())) {
            throw new IllegalArgumentException("DATABASE_URL: expected postgresql://user@host:port/database, not " + url);
        }
        String info = u.getRawUserInfo();
        String user = "postgres";
        String password = null;
        if (info != null) {
            int colon = info.indexOf(':');
            user = decode(colon < 0 ? info : info.substring(0, colon));
            password = colon < 0 ? null : decode(info.substring(colon + 1));
        }
        String db = u.getPath() == null || u.getPath().length() < 2 ? "preon" : u.getPath().substring(1);
        return new DbUrl(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort(), db, user, password);
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    public static int poolSize() {
        String v = System.getenv("POOL_SIZE");
        return v == null || v.isEmpty() ? 10 : Integer.parseInt(v);
    }
}
