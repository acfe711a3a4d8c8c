// SPDX-License-Identifier: MIT
package peer.quarkus;

import io.quarkus.runtime.StartupEvent;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Singleton;
import jakarta.ws.rs.container.ContainerResponseContext;
import org.eclipse.microprofile.config.ConfigProvider;
import org.jboss.resteasy.reactive.server.ServerResponseFilter;

/**
 * A test's switch, off by default: with PEER_THREAD_HEADER=true, every answer names the thread that finished it
 * (X-Peer-Thread), so that tests/bench/test_peers.py can check that /hello runs on a Vert.x event loop. The filter
 * runs where the resource method ran: on the worker thread after a blocking method.
 */
@Singleton
public class ThreadHeader {
    volatile boolean enabled; // set once at start, read by the event loops

    /** Read when the application starts, not injected: a native build creates this bean at build time. */
    void start(@Observes StartupEvent event) {
        enabled = ConfigProvider.getConfig().getOptionalValue("peer.thread-header", Boolean.class).orElse(false);
    }

    @ServerResponseFilter
    public void name(ContainerResponseContext response) {
        if (enabled) {
            response.getHeaders().putSingle("X-Peer-Thread", Thread.currentThread().getName());
        }
    }
}
