// SPDX-License-Identifier: MIT
package peer.spring;

import java.util.List;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import peer.FruitJson;
import peer.Paging;

/** The answers both Spring peers give, as ResponseEntity: /hello, a page of fruits, one fruit, preon's errors. */
public final class Answers {
    private static final MediaType TEXT = MediaType.parseMediaType("text/plain;charset=UTF-8");
    private static final byte[] HELLO = {'H', 'e', 'l', 'l', 'o'};

    private Answers() {
    }

    /** A fruit row: id and name. */
    public record Fruit(long id, String name) {
    }

    public static ResponseEntity<byte[]> hello() {
        return ResponseEntity.ok().contentType(TEXT).body(HELLO);
    }

    /** The rows of `page` as a JSON array, with a Link to the next page when they fill it. */
    public static ResponseEntity<byte[]> page(Paging page, List<Fruit> rows) {
        FruitJson.ArrayWriter out = new FruitJson.ArrayWriter();
        rows.forEach(f -> out.add(f.id, f.name));
        ResponseEntity.BodyBuilder ok = ResponseEntity.ok().contentType(MediaType.APPLICATION_JSON);
        String next = page.next(out.rows(), out.lastId());
        return (next != null ? ok.header(HttpHeaders.LINK, next) : ok).body(out.bytes());
    }

    /** The statement's row as the answer with `status` (201 with its Location), 404 when there is none. */
    public static ResponseEntity<byte[]> one(List<Fruit> rows, int status) {
        if (rows.isEmpty()) {
            return error(404, "no fruit with that id");
        }
        Fruit f = rows.get(0);
        ResponseEntity.BodyBuilder b = ResponseEntity.status(status).contentType(MediaType.APPLICATION_JSON);
        if (status == 201) {
            b.header(HttpHeaders.LOCATION, "/fruits/" + f.id);
        }
        return b.body(FruitJson.fruit(f.id, f.name));
    }

    /** 204, or 404 when nothing was deleted. */
    public static ResponseEntity<byte[]> deleted(long count) {
        return count == 0 ? error(404, "no fruit with that id") : ResponseEntity.noContent().build();
    }

    /** preon's error object; a 503 says when to retry. */
    public static ResponseEntity<byte[]> error(int status, String message) {
        ResponseEntity.BodyBuilder b = ResponseEntity.status(status).contentType(MediaType.APPLICATION_JSON);
        if (status == 503) {
            b.header(HttpHeaders.RETRY_AFTER, "1");
        }
        return b.body(FruitJson.error(status, message));
    }
}
