// SPDX-License-Identifier: MIT
package peer.classic;

import java.util.Map;
import java.util.Set;
import org.eclipse.microprofile.config.spi.ConfigSource;
import peer.DbUrl;

/**
 * The JDBC datasource's URL, user and password from DATABASE_URL (or libpq's PG* variables), the libpq URI every
 * peer is given: a MicroProfile config source (META-INF/services), as Quarkus reads any runtime configuration.
 * JDBC's URL has no user part, so application.properties cannot take the URI as it is.
 */
public class DatabaseUrl implements ConfigSource {
    private final Map<String, String> values;

    public DatabaseUrl() {
        DbUrl db = DbUrl.fromEnv();
        values = db.password == null
                ? Map.of("quarkus.datasource.jdbc.url", jdbc(db), "quarkus.datasource.username", db.user)
                : Map.of("quarkus.datasource.jdbc.url", jdbc(db), "quarkus.datasource.username", db.user,
                         "quarkus.datasource.password", db.password);
    }

    private static String jdbc(DbUrl db) {
        return "jdbc:postgresql://" + db.host + ":" + db.port + "/" + db.database;
    }

    @Override
    public Set<String> getPropertyNames() {
        return values.keySet();
    }

    @Override
    public String getValue(String name) {
        return values.get(name);
    }

    @Override
    public String getName() {
        return "DATABASE_URL";
    }

    @Override
    public int getOrdinal() {
        return 200; // below the environment (300): QUARKUS_DATASOURCE_JDBC_URL still wins when given
    }
}
