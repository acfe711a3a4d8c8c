// SPDX-License-Identifier: MIT
package peer.mvc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ImportRuntimeHints;
import peer.DbUrl;

/** Spring Boot Web (Spring MVC on Tomcat), blocking JDBC through HikariCP: post 001's Spring MVC row. */
@SpringBootApplication
@ImportRuntimeHints(HikariHints.class) // for the native executable (spring-mvc-native/)
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }

    /** A HikariCP pool of POOL_SIZE connections to DATABASE_URL, all kept open; the service starts without them. */
    @Bean(destroyMethod = "close")
    public HikariDataSource dataSource() {
        DbUrl db = DbUrl.fromEnv();
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl("jdbc:postgresql://" + db.host + ":" + db.port + "/" + db.database);
        c.setUsername(db.user);
        c.setPassword(db.password);
        c.setMaximumPoolSize(DbUrl.poolSize());
        c.setMinimumIdle(DbUrl.poolSize());
        c.setInitializationFailTimeout(-1); // start (and answer /hello) while the database is down
        c.setConnectionTimeout(10_000);
        return new HikariDataSource(c);
    }
}
