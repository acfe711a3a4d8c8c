// SPDX-License-Identifier: MIT
package peer.webflux;

import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * A test's switch, off by default: with PEER_THREAD_HEADER=true, every answer names the thread that committed it
 * (X-Peer-Thread), so that tests/bench/test_peers.py can check that /hello runs on a Reactor Netty event loop. The
 * name is taken when the response is committed, after the handler's answer: a handler moved to another scheduler
 * would show that scheduler's thread.
 * <p>
 * The filter is a bean in every build, the switch read at start (off: it passes every request on as it is), so that
 * the JVM form and the native executable (spring-webflux-native/, whose AOT build would fix a condition on the bean
 * at build time) serve every request through the same chain of filters.
 */
@Component
public class ThreadHeader implements WebFilter {
    private final boolean on;

    public ThreadHeader(Environment env) {
        on = env.getProperty("peer.thread.header", Boolean.class, false);
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
        if (!on) {
            return chain.filter(exchange);
        }
        exchange.getResponse().beforeCommit(() -> {
            exchange.getResponse().getHeaders().set("X-Peer-Thread", Thread.currentThread().getName());
            return Mono.empty();
        });
        return chain.filter(exchange);
    }
}
