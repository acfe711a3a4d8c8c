// SPDX-License-Identifier: MIT
package peer.classic;

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
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.postgresql.util.PSQLException;
import peer.BadRequest;
import peer.DbStatus;
import peer.FruitBody;
import peer.FruitId;
import peer.FruitJson;
import peer.Paging;
import peer.UnsupportedType;

/**
 * The Fruit resource on RESTEasy classic, answering preon's bytes: GET /hello, GET /fruits (paged),
 * GET/PUT/DELETE /fruits/{id}, POST /fruits. RESTEasy classic runs every request on Quarkus's worker pool; the
 * statements are blocking JDBC on Agroal's pool (quarkus.datasource.jdbc.max-size = POOL_SIZE).
 */
@Path("/")
public class FruitResource {
    private static final String JSON = "application/json";
    private static final byte[] HELLO = "Hello".getBytes(StandardCharsets.US_ASCII);

    @Inject
    DataSource db;

    @GET
    @Path("hello")
    public Response hello() {
        return Response.ok(HELLO, "text/plain;charset=UTF-8").build();
    }

    @GET
    @Path("fruits")
    public Response list(@QueryParam("limit") String limit, @QueryParam("after") String after) {
        return answer(() -> {
            Paging page = Paging.of(limit, after);
            try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(Paging.SQL_JDBC)) {
                s.setInt(1, page.after);
                s.setInt(2, page.limit);
                FruitJson.ArrayWriter out = new FruitJson.ArrayWriter();
                try (ResultSet r = s.executeQuery()) {
                    while (r.next()) {
                        out.add(r.getInt(1), r.getString(2));
                    }
                }
                Response.ResponseBuilder ok = Response.ok(out.bytes(), JSON);
                String next = page.next(out.rows(), out.lastId());
                return (next != null ? ok.header("Link", next) : ok).build();
            }
        });
    }

    @GET
    @Path("fruits/{id}")
    public Response get(@PathParam("id") String id) {
        return answer(() -> one("SELECT id, name FROM fruits WHERE id = ?", 200, FruitId.parse(id)));
    }

    @POST
    @Path("fruits")
    public Response create(@HeaderParam("Content-Type") String type, byte[] body) {
        return answer(() -> one("INSERT INTO fruits (name) VALUES (?) RETURNING id, name", 201, name(type, body)));
    }

    @PUT
    @Path("fruits/{id}")
    public Response update(@PathParam("id") String id, @HeaderParam("Content-Type") String type, byte[] body) {
        return answer(() -> {
            int n = FruitId.parse(id);
            return one("UPDATE fruits SET name = ? WHERE id = ? RETURNING id, name", 200, name(type, body), n);
        });
    }

    @DELETE
    @Path("fruits/{id}")
    public Response delete(@PathParam("id") String id) {
        return answer(() -> {
            int n = FruitId.parse(id);
            try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement("DELETE FROM fruits WHERE id = ?")) {
                s.setInt(1, n);
                return s.executeUpdate() == 0 ? error(404, "no fruit with that id") : Response.noContent().build();
            }
        });
    }

    /** The statement's row as the answer with `status` (201 with its Location), 404 when there is none. */
    private Response one(String sql, int status, Object... args) throws SQLException {
        try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                s.setObject(i + 1, args[i]);
            }
            try (ResultSet r = s.executeQuery()) {
                if (!r.next()) {
                    return error(404, "no fruit with that id");
                }
                Response.ResponseBuilder b = Response.status(status).entity(FruitJson.fruit(r.getInt(1), r.getString(2)))
                        .type(JSON);
                return (status == 201 ? b.header("Location", "/fruits/" + r.getInt(1)) : b).build();
            }
        }
    }

    /** The body's name; 415 or 400 (as UnsupportedType, BadRequest) when it is not {"name":"..."}. */
    private static String name(String type, byte[] body) {
        if (!FruitBody.isJson(type)) {
            throw new UnsupportedType();
        }
        return FruitBody.name(body == null ? new byte[0] : body);
    }

    private interface Work {
        Response run() throws SQLException;
    }

    /** Runs `work`; a bad request or a database failure becomes preon's error answer (DbStatus). */
    private static Response answer(Work work) {
        try {
            return work.run();
        } catch (BadRequest e) {
            return error(400, e.getMessage());
        } catch (UnsupportedType e) {
            return error(415, e.getMessage());
        } catch (SQLException e) { // the database's own message, as preon answers it
            String message = e instanceof PSQLException p && p.getServerErrorMessage() != null
                    ? p.getServerErrorMessage().getMessage() : DbStatus.message(e);
            return error(DbStatus.of(e.getSQLState()), message);
        }
    }

    private static Response error(int status, String message) {
        Response.ResponseBuilder b = Response.status(status).entity(FruitJson.error(status, message)).type(JSON);
        return (status == 503 ? b.header("Retry-After", "1") : b).build();
    }
}
