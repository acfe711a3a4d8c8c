// SPDX-License-Identifier: MIT
package peer.webflux;

import io.r2dbc.spi.R2dbcException;
import io.r2dbc.spi.Readable;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseEntity;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import peer.BadRequest;
import peer.DbStatus;
import peer.FruitBody;
import peer.FruitId;
import peer.Paging;
import peer.spring.Answers;
import peer.spring.Answers.Fruit;
import reactor.core.publisher.Mono;

/** GET /hello, GET /fruits (paged) and the CRUD, answering preon's bytes, on Reactor Netty's event loops. */
@RestController
public class FruitController {
    private final DatabaseClient db;

    public FruitController(DatabaseClient db) {
        this.db = db;
    }

    private static Fruit fruit(Readable r) {
        return new Fruit(r.get(0, Integer.class), r.get(1, String.class));
    }

    @GetMapping("/hello")
    public ResponseEntity<byte[]> hello() {
        return Answers.hello();
    }

    @GetMapping("/fruits")
    public Mono<ResponseEntity<byte[]>> list(@RequestParam(required = false) String limit,
                                             @RequestParam(required = false) String after) {
        Paging page;
        try {
            page = Paging.of(limit, after);
        } catch (BadRequest e) {
            return Mono.just(error(400, e.getMessage()));
        }
        return answer(db.sql(Paging.SQL).bind(0, page.after).bind(1, page.limit).map(FruitController::fruit).all()
                .collectList().map(rows -> Answers.page(page, rows)));
    }

    @GetMapping("/fruits/{id}")
    public Mono<ResponseEntity<byte[]>> get(@PathVariable String id) {
        return withId(id, n -> one(db.sql("SELECT id, name FROM fruits WHERE id = $1").bind(0, n), 200));
    }

    @PostMapping("/fruits")
    public Mono<ResponseEntity<byte[]>> create(ServerHttpRequest request) {
        return withName(request, name -> one(
                db.sql("INSERT INTO fruits (name) VALUES ($1) RETURNING id, name").bind(0, name), 201));
    }

    @PutMapping("/fruits/{id}")
    public Mono<ResponseEntity<byte[]>> update(@PathVariable String id, ServerHttpRequest request) {
        return withId(id, n -> withName(request, name -> one(
                db.sql("UPDATE fruits SET name = $2 WHERE id = $1 RETURNING id, name").bind(0, n).bind(1, name), 200)));
    }

    @DeleteMapping("/fruits/{id}")
    public Mono<ResponseEntity<byte[]>> delete(@PathVariable String id) {
        return withId(id, n -> answer(db.sql("DELETE FROM fruits WHERE id = $1").bind(0, n).fetch().rowsUpdated()
                .map(Answers::deleted)));
    }

    /** The statement's row as the answer with `status` (201 with its Location), 404 when there is none. */
    private Mono<ResponseEntity<byte[]>> one(DatabaseClient.GenericExecuteSpec spec, int status) {
        return answer(spec.map(FruitController::fruit).all().collectList().map(rows -> Answers.one(rows, status)));
    }

    private static Mono<ResponseEntity<byte[]>> withId(String id, java.util.function.IntFunction<Mono<ResponseEntity<byte[]>>> then) {
        try {
            return then.apply(FruitId.parse(id));
        } catch (BadRequest e) {
            return Mono.just(error(400, e.getMessage()));
        }
    }

    /** The body read as bytes (whatever its type: the check is FruitBody's, with preon's 415 and 400 messages). */
    private static Mono<ResponseEntity<byte[]>> withName(ServerHttpRequest request,
                                                         java.util.function.Function<String, Mono<ResponseEntity<byte[]>>> then) {
        if (!FruitBody.isJson(request.getHeaders().getFirst(HttpHeaders.CONTENT_TYPE))) {
            return Mono.just(error(415, FruitBody.NOT_JSON_TYPE));
        }
        return DataBufferUtils.join(request.getBody()).map(buf -> {
            byte[] bytes = new byte[buf.readableByteCount()];
            buf.read(bytes);
            DataBufferUtils.release(buf);
            return bytes;
        }).defaultIfEmpty(new byte[0]).flatMap(body -> {
            try {
                return then.apply(FruitBody.name(body));
            } catch (BadRequest e) {
                return Mono.just(error(400, e.getMessage()));
            }
        });
    }

    /** A database failure as preon answers it (DbStatus): the R2DBC exception under Spring's translation. */
    private static Mono<ResponseEntity<byte[]>> answer(Mono<ResponseEntity<byte[]>> m) {
        return m.onErrorResume(e -> {
            Throwable c = e;
            while (c != null && !(c instanceof R2dbcException)) {
                c = c.getCause();
            }
            R2dbcException r = (R2dbcException) c;
            return Mono.just(error(DbStatus.of(r != null ? r.getSqlState() : null), DbStatus.message(r != null ? r : e)));
        });
    }

    private static ResponseEntity<byte[]> error(int status, String message) {
        return Answers.error(status, message);
    }
}
