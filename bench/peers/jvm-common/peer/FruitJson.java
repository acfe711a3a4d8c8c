// SPDX-License-Identifier: MIT
package peer;

import java.nio.charset.StandardCharsets;

/**
 * The JSON bytes preon writes (jansson, compact): {"id":N,"name":"..."} rows, arrays of them and
 * {"error":"...","status":N}. Strings are escaped as jansson escapes them: quote, backslash, the short forms
 * \b \f \n \r \t, other control characters as backslash-u00XX (upper-case hex), everything else as it is (UTF-8 kept,
 * '/' and HTML characters not escaped). Jackson would write the same text for these strings except the hex
 * case, so the peers share this 40-line writer instead of depending on a serializer's defaults.
 */
public final class FruitJson {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private FruitJson() {
    }

    public static void appendString(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append("\\u00").append(HEX[c >> 4]).append(HEX[c & 0xF]);
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        out.append('"');
    }

    public static StringBuilder appendFruit(StringBuilder out, long id, String name) {
        out.append("{\"id\":").append(id).append(",\"name\":");
        appendString(out, name);
        return out.append('}');
    }

    public static byte[] fruit(long id, String name) {
        return appendFruit(new StringBuilder(32 + name.length()), id, name).toString().getBytes(StandardCharsets.UTF_8);
    }

    public static byte[] error(int status, String message) {
        StringBuilder out = new StringBuilder(48 + message.length()).append("{\"error\":");
        appendString(out, message);
        return out.append(",\"status\":").append(status).append('}').toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Builds a JSON array of rows one at a time. */
    public static final class ArrayWriter {
        private final StringBuilder out = new StringBuilder(256).append('[');
        private int rows;
        private long lastId;

        public void add(long id, String name) {
            if (rows++ > 0) {
                out.append(',');
            }
            appendFruit(out, id, name);
            lastId = id;
        }

        public int rows() {
            return rows;
        }

        public long lastId() {
            return lastId;
        }

        public byte[] bytes() {
            return out.append(']').toString().getBytes(StandardCharsets.UTF_8);
        }
    }
}
