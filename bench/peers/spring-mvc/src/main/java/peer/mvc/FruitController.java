// SPDX-License-Identifier: MIT
package peer.mvc;

import java.sql.SQLException;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.postgresql.util.PSQLException;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import peer.BadRequest;
import peer.DbStatus;
import peer.FruitBody;
import peer.FruitId;
import peer.Paging;
import peer.UnsupportedType;
import peer.spring.Answers;
import peer.spring.Answers.Fruit;

/** GET /hello, GET /fruits (paged) and the CRUD, answering preon's bytes, one Tomcat thread per request. */
@RestController
public class FruitController {
    private static final RowMapper<Fruit> FRUIT = (rs, i) -> new Fruit(rs.getInt(1), rs.getString(2));
    private final JdbcTemplate jdbc;

    public FruitController(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @GetMapping("/hello")
    public ResponseEntity<byte[]> hello() {
        return Answers.hello();
    }

    @GetMapping("/fruits")
    public ResponseEntity<byte[]> list(@RequestParam(required = false) String limit,
                                       @RequestParam(required = false) String after) {
        return answer(() -> {
            Paging page = Paging.of(limit, after);
            return Answers.page(page, jdbc.query(Paging.SQL_JDBC, FRUIT, page.after, page.limit));
        });
    }

    @GetMapping("/fruits/{id}")
    public ResponseEntity<byte[]> get(@PathVariable String id) {
        return withId(id, n -> Answers.one(jdbc.query("SELECT id, name FROM fruits WHERE id = ?", FRUIT, n), 200));
    }

    @PostMapping("/fruits")
    public ResponseEntity<byte[]> create(@RequestHeader(value = "Content-Type", required = false) String type,
                                         @RequestBody(required = false) byte[] body) {
        return answer(() -> Answers.one(jdbc.query("INSERT INTO fruits (name) VALUES (?) RETURNING id, name", FRUIT,
                name(type, body)), 201));
    }

    @PutMapping("/fruits/{id}")
    public ResponseEntity<byte[]> update(@PathVariable String id,
                                         @RequestHeader(value = "Content-Type", required = false) String type,
                                         @RequestBody(required = false) byte[] body) {
        return withId(id, n -> Answers.one(jdbc.query("UPDATE fruits SET name = ? WHERE id = ? RETURNING id, name", FRUIT,
                name(type, body), n), 200));
    }

    @DeleteMapping("/fruits/{id}")
    public ResponseEntity<byte[]> delete(@PathVariable String id) {
        return withId(id, n -> Answers.deleted(jdbc.update("DELETE FROM fruits WHERE id = ?", n)));
    }

    private static ResponseEntity<byte[]> withId(String id, IntFunction<ResponseEntity<byte[]>> then) {
        return answer(() -> then.apply(FruitId.parse(id)));
    }

    /** The body's name; a 415 (as UnsupportedType) or 400 (as BadRequest) when it is not {"name":"..."}. */
    private static String name(String type, byte[] body) {
        if (!FruitBody.isJson(type)) {
            throw new UnsupportedType();
        }
        return FruitBody.name(body == null ? new byte[0] : body);
    }

    /** Runs `work`; a bad request or a database failure becomes preon's error answer (DbStatus). */
    private static ResponseEntity<byte[]> answer(Supplier<ResponseEntity<byte[]>> work) {
        try {
            return work.get();
        } catch (BadRequest e) {
            return error(400, e.getMessage());
        } catch (UnsupportedType e) {
            return error(415, e.getMessage());
        } catch (RuntimeException e) {
            Throwable c = e;
            while (c != null && !(c instanceof SQLException)) {
                c = c.getCause();
            }
            SQLException s = (SQLException) c;
            String message = s instanceof PSQLException p && p.getServerErrorMessage() != null
                    ? p.getServerErrorMessage().getMessage() : DbStatus.message(s != null ? s : e);
            return error(DbStatus.of(s != null ? s.getSQLState() : null), message);
        }
    }

    private static ResponseEntity<byte[]> error(int status, String message) {
        return Answers.error(status, message);
    }
}
