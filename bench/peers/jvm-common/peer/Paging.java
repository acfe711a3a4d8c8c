// SPDX-License-Identifier: MIT
package peer;

/**
 * GET /fruits's paging contract: limit 1..1000 (default 100), after 0..2147483647 (default 0), both optional;
 * a bad value is a 400 with the exact messages below; a full page gets a Link header to the next one.
 */
public final class Paging {
    public static final String SQL = "SELECT id, name FROM fruits WHERE id > $1 ORDER BY id LIMIT $2";
    public static final String SQL_JDBC = "SELECT id, name FROM fruits WHERE id > ? ORDER BY id LIMIT ?";
    public static final String BAD_LIMIT = "limit: must be an integer from 1 to 1000";
    public static final String BAD_AFTER = "after: must be an integer from 0 to 2147483647";

    public final int after;
    public final int limit;


    private Paging(int after, int limit) {
        this.after = after;
        this.limit = limit;
    }

    /** limit and after as the query string gave them, null when absent. */
    public static Paging of(String limit, String after) {
        return new Paging(parse(after, 0, 0, Integer.MAX_VALUE, BAD_AFTER), parse(limit, 100, 1, 1000, BAD_LIMIT));
    }

    private static int parse(String s, int dflt, int min, int max, String why) {
        if (s == null) {
            return dflt;
        }
        if (s.isEmpty() || s.length() > 10) {
            throw new BadRequest(why);
        }
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw new BadRequest(why);
            }
            v = v * 10 + (c - '0');
        }
        if (v < min || v > max) {
            throw new BadRequest(why);
        }
        return (int) v;
    }

    /** The Link header's value when `rows` filled the page, else null. */
    public String next(int rows, long lastId) {
        return rows == limit ? "</fruits?after=" + lastId + "&limit=" + limit + ">; rel=\"next\"" : null;
    }
}
