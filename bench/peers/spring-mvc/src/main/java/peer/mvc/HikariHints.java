// SPDX-License-Identifier: MIT
package peer.mvc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.util.ConcurrentBag;
import java.sql.Statement;
import org.springframework.aot.hint.MemberCategory;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * What HikariCP reflects on, for the native executable (spring-mvc-native/): new HikariDataSource(config) copies
 * the configuration with HikariConfig.class.getDeclaredFields() and Field.get/set (copyStateTo). Without these
 * fields registered the copy is empty and the pool has no JDBC URL. Its FastList makes its arrays with
 * Array.newInstance: of ConcurrentBag.IConcurrentBagEntry (each thread's list of connections; without it the first
 * query fails with "MissingReflectionRegistrationError: Cannot reflectively instantiate the array class
 * 'com.zaxxer.hikari.util.ConcurrentBag$IConcurrentBagEntry[]'") and of java.sql.Statement. (GraalVM's metadata repository has such
 * entries; the native build turns that repository off, as it would download.) Spring's AOT writes this hint into
 * reflect-config.json; on the JVM it does nothing.
 */
class HikariHints implements RuntimeHintsRegistrar {
    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        hints.reflection().registerType(HikariConfig.class, MemberCategory.DECLARED_FIELDS);
        hints.reflection().registerType(ConcurrentBag.IConcurrentBagEntry[].class);
        hints.reflection().registerType(Statement[].class);
    }
}
