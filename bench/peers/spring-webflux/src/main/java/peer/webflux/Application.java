// SPDX-License-Identifier: MIT
package peer.webflux;

import io.r2dbc.pool.ConnectionPool;
import io.r2dbc.pool.ConnectionPoolConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionConfiguration;
import io.r2dbc.postgresql.PostgresqlConnectionFactory;
import java.time.Duration;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ImportRuntimeHints;
import org.springframework.r2dbc.core.DatabaseClient;
import peer.DbUrl;

/** Spring Boot WebFlux on Reactor Netty, R2DBC PostgreSQL through r2dbc-pool: the reactive Spring of posts 001/004. */
@SpringBootApplication
@ImportRuntimeHints(NettyHints.class) // for the native executable (spring-webflux-native/)
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }

    /** A pool of POOL_SIZE connections to DATABASE_URL, all opened when the pool warms up at start. */
    @Bean(destroyMethod = "dispose")
    public ConnectionPool connectionFactory() {
        DbUrl db = DbUrl.fromEnv();
        PostgresqlConnectionConfiguration.Builder c = PostgresqlConnectionConfiguration.builder().host(db.host)
                .port(db.port).database(db.database).username(db.user).connectTimeout(Duration.ofSeconds(10));
        if (db.password != null) {
            c.password(db.password);
        }
        int size = DbUrl.poolSize();
        ConnectionPool pool = new ConnectionPool(ConnectionPoolConfiguration.builder(new PostgresqlConnectionFactory(c.build()))
                .initialSize(size).maxSize(size).build());
        pool.warmup().onErrorResume(e -> reactor.core.publisher.Mono.empty()).subscribe();
        return pool;
    }

    @Bean
    public DatabaseClient databaseClient(ConnectionPool pool) {
        return DatabaseClient.create(pool);
    }
}
