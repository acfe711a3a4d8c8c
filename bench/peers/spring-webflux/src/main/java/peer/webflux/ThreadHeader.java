// SPDX-License-Identifier: MIT
package peer.webflux;

import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/**
 * A test's switch, off by default (the bean does not exist without it): with PEER_THREAD_HEADER=true, every answer
 * names the thread that committed it (X-Peer-Thread), so that tests/bench/test_peers.py can check that /hello runs
 * on a Reactor Netty event loop. The name is taken when the response is committed, after the handler's answer:
 * a handler moved to another scheduler would show that scheduler's thread.
 * <p>
 * The native executable (spring-webflux-native/) is built ahead of time with the switch on, because Spring's AOT
 * evaluates the condition at build time: there the bean always exists and the switch is read again at start (off:
 * the filter passes every request on as it is). On the JVM the condition holds whenever the bean exists.
 */
@Component
@ConditionalOnProperty(name = "peer.thread.header", havingValue = "true")
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
