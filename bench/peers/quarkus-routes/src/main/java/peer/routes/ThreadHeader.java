// SPDX-License-Identifier: MIT
package peer.routes;

import io.quarkus.vertx.web.RouteFilter;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * A test's switch, off by default: with PEER_THREAD_HEADER=true, every answer names the thread that wrote its
 * headers (X-Peer-Thread), so that tests/bench/test_peers.py can check that the routes run on a Vert.x event loop.
 */
@ApplicationScoped
public class ThreadHeader {
    @ConfigProperty(name = "peer.thread-header", defaultValue = "false")
    boolean enabled;

    @RouteFilter
    void name(RoutingContext rc) {
        if (enabled) {
            rc.addHeadersEndHandler(v -> rc.response().putHeader("X-Peer-Thread", Thread.currentThread().getName()));
        }
        rc.next();
    }
}
