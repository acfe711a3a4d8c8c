// SPDX-License-Identifier: MIT
package peer.routes;

import io.quarkus.runtime.StartupEvent;
import io.quarkus.vertx.web.RouteFilter;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import org.eclipse.microprofile.config.ConfigProvider;

/**
 * A test's switch, off by default: with PEER_THREAD_HEADER=true, every answer names the thread that wrote its
 * headers (X-Peer-Thread), so that tests/bench/test_peers.py can check that the routes run on a Vert.x event loop.
 */
@ApplicationScoped
public class ThreadHeader {
    volatile boolean enabled; // set once at start, read by the event loops

    /** Read when the application starts, not injected: a native build creates this bean at build time. */
    void start(@Observes StartupEvent event) {
        enabled = ConfigProvider.getConfig().getOptionalValue("peer.thread-header", Boolean.class).orElse(false);
    }

    @RouteFilter
    void name(RoutingContext rc) {
        if (enabled) {
            rc.addHeadersEndHandler(v -> rc.response().putHeader("X-Peer-Thread", Thread.currentThread().getName()));
        }
        rc.next();
    }
}
