// SPDX-License-Identifier: MIT
package peer.routes;

import io.quarkus.vertx.web.Route;
import io.quarkus.vertx.web.Route.HttpMethod;
import io.smallrye.mutiny.Uni;
import io.vertx.core.buffer.Buffer;
import io.vertx.ext.web.RoutingContext;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.RowSet;
import io.vertx.mutiny.sqlclient.Tuple;
import io.vertx.pgclient.PgException;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.IntConsumer;
import peer.BadRequest;
import peer.DbStatus;
import peer.FruitBody;
import peer.FruitId;
import peer.FruitJson;
import peer.Paging;

/**
 * The Fruit API as Quarkus reactive routes (post 000's @Route service), answering preon's bytes: GET /hello,
 * GET /fruits (paged), GET/PUT/DELETE /fruits/{id}, POST /fruits. A @Route method runs on the Vert.x event loop
 * (none here is @Blocking); /hello returns a Uni as post 000's did, the others answer through the RoutingContext
 * when the reactive PostgreSQL client's result arrives.
 */
@ApplicationScoped
public class FruitRoutes {
    private static final String JSON = "application/json";
    private static final String TEXT = "text/plain;charset=UTF-8";

    @Inject
    Pool client;

    @Route(path = "/hello", methods = HttpMethod.GET)
    Uni<String> hello(RoutingContext rc) {
        rc.response().putHeader("Content-Type", TEXT);
        return Uni.createFrom().item("Hello");
    }

    @Route(path = "/fruits", methods = HttpMethod.GET)
    void list(RoutingContext rc) {
        Paging page;
        try {
            page = Paging.of(first(rc.queryParam("limit")), first(rc.queryParam("after")));
        } catch (BadRequest e) {
            error(rc, 400, e.getMessage());
            return;
        }
        query(rc, Paging.SQL, Tuple.of(page.after, page.limit), rows -> {
            FruitJson.ArrayWriter out = new FruitJson.ArrayWriter();
            for (Row r : rows) {
                out.add(r.getInteger(0), r.getString(1));
            }
            String next = page.next(out.rows(), out.lastId());
            if (next != null) {
                rc.response().putHeader("Link", next);
            }
            send(rc, 200, out.bytes());
        });
    }

    @Route(path = "/fruits/:id", methods = HttpMethod.GET)
    void get(RoutingContext rc) {
        withId(rc, n -> query(rc, "SELECT id, name FROM fruits WHERE id = $1", Tuple.of(n), rows -> one(rc, rows, 200)));
    }

    @Route(path = "/fruits", methods = HttpMethod.POST)
    void create(RoutingContext rc) {
        withName(rc, name -> query(rc, "INSERT INTO fruits (name) VALUES ($1) RETURNING id, name", Tuple.of(name),
                rows -> one(rc, rows, 201)));
    }

    @Route(path = "/fruits/:id", methods = HttpMethod.PUT)
    void update(RoutingContext rc) {
        withId(rc, n -> withName(rc, name -> query(rc, "UPDATE fruits SET name = $2 WHERE id = $1 RETURNING id, name",
                Tuple.of(n, name), rows -> one(rc, rows, 200))));
    }

    @Route(path = "/fruits/:id", methods = HttpMethod.DELETE)
    void delete(RoutingContext rc) {
        withId(rc, n -> query(rc, "DELETE FROM fruits WHERE id = $1", Tuple.of(n), rows -> {
            if (rows.rowCount() == 0) {
                error(rc, 404, "no fruit with that id");
            } else {
                rc.response().setStatusCode(204).end();
            }
        }));
    }

    private static String first(List<String> values) {
        return values.isEmpty() ? null : values.get(0);
    }

    private static void one(RoutingContext rc, RowSet<Row> rows, int status) {
        if (rows.size() == 0) {
            error(rc, 404, "no fruit with that id");
            return;
        }
        Row r = rows.iterator().next();
        if (status == 201) {
            rc.response().putHeader("Location", "/fruits/" + r.getInteger(0));
        }
        send(rc, status, FruitJson.fruit(r.getInteger(0), r.getString(1)));
    }

    private static void withId(RoutingContext rc, IntConsumer then) {
        int n;
        try {
            n = FruitId.parse(rc.pathParam("id"));
        } catch (BadRequest e) {
            error(rc, 400, e.getMessage());
            return;
        }
        then.accept(n);
    }

    /** The body's name, read from the request (Quarkus installs Vert.x's body handler for the routes). */
    private static void withName(RoutingContext rc, Consumer<String> then) {
        if (!FruitBody.isJson(rc.request().getHeader("Content-Type"))) {
            error(rc, 415, FruitBody.NOT_JSON_TYPE);
            return;
        }
        if (rc.body().available()) {
            name(rc, rc.body().buffer(), then);
        } else {
            rc.request().body().onSuccess(b -> name(rc, b, then)).onFailure(rc::fail);
        }
    }

    private static void name(RoutingContext rc, Buffer body, Consumer<String> then) {
        String name;
        try {
            name = FruitBody.name(body == null ? new byte[0] : body.getBytes());
        } catch (BadRequest e) {
            error(rc, 400, e.getMessage());
            return;
        }
        then.accept(name);
    }

    private void query(RoutingContext rc, String sql, Tuple args, Consumer<RowSet<Row>> answer) {
        client.preparedQuery(sql).execute(args).subscribe().with(answer, e -> {
            if (e instanceof PgException p) { // the database's own message, as preon answers it
                error(rc, DbStatus.of(p.getSqlState()), p.getErrorMessage());
            } else {
                error(rc, DbStatus.of(null), DbStatus.message(e));
            }
        });
    }

    private static void send(RoutingContext rc, int status, byte[] json) {
        rc.response().setStatusCode(status).putHeader("Content-Type", JSON).end(Buffer.buffer(json));
    }

    private static void error(RoutingContext rc, int status, String message) {
        if (status == 503) {
            rc.response().putHeader("Retry-After", "1");
        }
        send(rc, status, FruitJson.error(status, message));
    }
}
