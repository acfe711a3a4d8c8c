// SPDX-License-Identifier: MIT
package peer;

/** The {id} of /fruits/{id}, checked as preon checks it (src/service/params.c): a decimal integer in 1..2147483647. */
public final class FruitId {
    private FruitId() {
    }

    /** The id, or a BadRequest carrying preon's 400 message. */
    public static int parse(String s) {
        if (s.isEmpty()) {
            throw new BadRequest("parameter 'id' must not be empty");
        }
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw new BadRequest("parameter 'id' must be a positive integer");
            }
            v = v * 10 + (c - '0');
            if (v > Integer.MAX_VALUE) {
                throw new BadRequest("parameter 'id' must be at most 2147483647");
            }
        }
        if (v == 0) {
            throw new BadRequest("parameter 'id' must be a positive integer");
        }
        return (int) v;
    }
}
