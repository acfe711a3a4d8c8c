// SPDX-License-Identifier: MIT
package peer.quarkus;

import jakarta.inject.Singleton;
import jakarta.ws.rs.container.ContainerResponseContext;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.jboss.resteasy.reactive.server.ServerResponseFilter;

/**
 * A test's switch, off by default: with PEER_THREAD_HEADER=true, every answer names the thread that finished it
 * (X-Peer-Thread), so that tests/bench/test_peers.py can check that /hello runs on a Vert.x event loop. The filter
 * runs where the resource method ran: on the worker thread after a blocking method.
 */
@Singleton
public class ThreadHeader {
    @ConfigProperty(name = "peer.thread-header", defaultValue = "false")
    boolean enabled;

    @ServerResponseFilter
    public void name(ContainerResponseContext response) {
        if (enabled) {
            response.getHeaders().putSingle("X-Peer-Thread", Thread.currentThread().getName());
        }
    }
}
