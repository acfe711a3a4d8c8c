// SPDX-License-Identifier: MIT
package peer.quarkus;

import io.smallrye.common.annotation.NonBlocking;
import io.smallrye.mutiny.Uni;
import io.vertx.mutiny.sqlclient.Pool;
import io.vertx.mutiny.sqlclient.Row;
import io.vertx.mutiny.sqlclient.RowSet;
import io.vertx.mutiny.sqlclient.Tuple;
import io.vertx.pgclient.PgException;
import jakarta.inject.Inject;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Response;
import java.util.function.Function;
import peer.BadRequest;
import peer.DbStatus;
import peer.FruitBody;
import peer.FruitId;
import peer.FruitJson;
import peer.Paging;

/**
 * The reactive SQL client quickstart's Fruit resource, answering preon's bytes: GET /hello, GET /fruits (paged),
 * GET/PUT/DELETE /fruits/{id}, POST /fruits. Every method runs on a Vert.x event loop; the pool's PostgreSQL
 * client never blocks it. Quarkus REST runs a method on its worker pool unless it returns a reactive type (Uni) or
 * is marked @NonBlocking: /hello returns a plain Response, so it carries @NonBlocking, as a Quarkus user writes a
 * handler that does not block (without it, every /hello is handed to a worker thread and back).
 */
@Path("/")
public class FruitResource {
    private static final String JSON = "application/json";
    private static final byte[] HELLO = "Hello".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    @Inject
    Pool client;

    @GET
    @Path("hello")
    @NonBlocking
    public Response hello() {
        return Response.ok(HELLO, "text/plain;charset=UTF-8").build();
    }

    @GET
    @Path("fruits")
    public Uni<Response> list(@QueryParam("limit") String limit, @QueryParam("after") String after) {
        Paging page;
        try {
            page = Paging.of(limit, after);
        } catch (BadRequest e) {
            return Uni.createFrom().item(error(400, e.getMessage()));
        }
        return query(Paging.SQL, Tuple.of(page.after, page.limit), rows -> {
            FruitJson.ArrayWriter out = new FruitJson.ArrayWriter();
            for (Row r : rows) {
                out.add(r.getInteger(0), r.getString(1));
            }
            Response.ResponseBuilder ok = Response.ok(out.bytes(), JSON);
            String next = page.next(out.rows(), out.lastId());
            return (next != null ? ok.header("Link", next) : ok).build();
        });
    }

    @GET
    @Path("fruits/{id}")
    public Uni<Response> get(@PathParam("id") String id) {
        return withId(id, n -> query("SELECT id, name FROM fruits WHERE id = $1", Tuple.of(n), FruitResource::one));
    }

    @POST
    @Path("fruits")
    public Uni<Response> create(@HeaderParam("Content-Type") String type, byte[] body) {
        return withName(type, body, name -> query("INSERT INTO fruits (name) VALUES ($1) RETURNING id, name",
                Tuple.of(name), rows -> {
                    Row r = rows.iterator().next();
                    return Response.status(201).header("Location", "/fruits/" + r.getInteger(0))
                            .entity(FruitJson.fruit(r.getInteger(0), r.getString(1))).type(JSON).build();
                }));
    }

    @PUT
    @Path("fruits/{id}")
    public Uni<Response> update(@PathParam("id") String id, @HeaderParam("Content-Type") String type, byte[] body) {
        return withId(id, n -> withName(type, body, name -> query(
                "UPDATE fruits SET name = $2 WHERE id = $1 RETURNING id, name", Tuple.of(n, name), FruitResource::one)));
    }

    @DELETE
    @Path("fruits/{id}")
    public Uni<Response> delete(@PathParam("id") String id) {
        return withId(id, n -> query("DELETE FROM fruits WHERE id = $1", Tuple.of(n),
                rows -> rows.rowCount() == 0 ? error(404, "no fruit with that id") : Response.noContent().build()));
    }

    private static Response one(RowSet<Row> rows) {
        if (rows.size() == 0) {
            return error(404, "no fruit with that id");
        }
        Row r = rows.iterator().next();
        return Response.ok(FruitJson.fruit(r.getInteger(0), r.getString(1)), JSON).build();
    }

    private static Uni<Response> withId(String id, Function<Integer, Uni<Response>> then) {
        int n;
        try {
            n = FruitId.parse(id);
        } catch (BadRequest e) {
            return Uni.createFrom().item(error(400, e.getMessage()));
        }
        return then.apply(n);
    }

    private static Uni<Response> withName(String type, byte[] body, Function<String, Uni<Response>> then) {
        if (!FruitBody.isJson(type)) {
            return Uni.createFrom().item(error(415, FruitBody.NOT_JSON_TYPE));
        }
        String name;
        try {
            name = FruitBody.name(body == null ? new byte[0] : body);
        } catch (BadRequest e) {
            return Uni.createFrom().item(error(400, e.getMessage()));
        }
        return then.apply(name);
    }

    private Uni<Response> query(String sql, Tuple args, Function<RowSet<Row>, Response> answer) {
        return client.preparedQuery(sql).execute(args).map(answer).onFailure().recoverWithItem(e -> {
            if (e instanceof PgException p) { // the database's own message, as preon answers it
                return error(DbStatus.of(p.getSqlState()), p.getErrorMessage());
            }
            return error(DbStatus.of(null), DbStatus.message(e));
        });
    }

    private static Response error(int status, String message) {
        Response.ResponseBuilder b = Response.status(status).entity(FruitJson.error(status, message)).type(JSON);
        return (status == 503 ? b.header("Retry-After", "1") : b).build();
    }
}
