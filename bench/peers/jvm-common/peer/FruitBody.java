// SPDX-License-Identifier: MIT
package peer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Locale;

/**
 * The body of POST /fruits and PUT /fruits/{id}, checked as preon checks it (src/service/body.c), with its messages:
 * valid UTF-8, a JSON object, no field but "name" (and an ignored "id"), "name" a non-empty string of at most
 * 255 characters without NUL. A Content-Type other than application/json[;…] is a 415.
 */
public final class FruitBody {
    public static final int NAME_MAX = 255;
    public static final String NOT_JSON_TYPE = "Content-Type must be application/json";
    private static final ObjectMapper MAPPER = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);


    private FruitBody() {
    }

    /** True when the Content-Type header is application/json, with or without parameters. */
    public static boolean isJson(String contentType) {
        if (contentType == null) {
            return false;
        }
        String t = contentType.strip();
        int semi = t.indexOf(';');
        return (semi < 0 ? t : t.substring(0, semi).strip()).toLowerCase(Locale.ROOT).equals("application/json");
    }

    /** The name the body gives, or a BadRequest with preon's message. */
    public static String name(byte[] body) {
        CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        ByteBuffer in = ByteBuffer.wrap(body);
        try {
            utf8.decode(in);
        } catch (CharacterCodingException e) {
            throw new BadRequest("body is not valid UTF-8 (byte " + in.position() + ")");
        }
        if (body.length == 0) {
            throw new BadRequest("body is empty; expected a JSON object such as {\"name\":\"Banana\"}");
        }
        JsonNode root;
        try {
            root = MAPPER.readTree(body);
        } catch (JsonProcessingException e) {
            throw new BadRequest("body is not valid JSON: " + e.getOriginalMessage() + " at line "
                    + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr());
        } catch (IOException e) {
            throw new BadRequest("body is not valid JSON: " + e.getMessage());
        }
        if (root == null || root.isMissingNode()) {
            throw new BadRequest("body is empty; expected a JSON object such as {\"name\":\"Banana\"}");
        }
        if (!root.isObject()) {
            throw new BadRequest("body must be a JSON object such as {\"name\":\"Banana\"}");
        }
        for (Iterator<String> keys = root.fieldNames(); keys.hasNext();) {
            String key = keys.next();
            if (!key.equals("name") && !key.equals("id")) {
                throw new BadRequest("unknown field '" + (key.length() > 64 ? key.substring(0, 64) : key)
                        + "'; only 'name' may be given");
            }
        }
        JsonNode n = root.get("name");
        if (n == null) {
            throw new BadRequest("field 'name' is missing");
        }
        if (!n.isTextual()) {
            throw new BadRequest("field 'name' must be a string");
        }
        String name = n.textValue();
        if (name.isEmpty()) {
            throw new BadRequest("field 'name' must not be empty");
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == 0) { // jansson refuses an escaped NUL while parsing, as PostgreSQL's text cannot hold it
                throw new BadRequest("body is not valid JSON: \\u0000 is not allowed");
            }
            if (Character.isHighSurrogate(c) && i + 1 < name.length() && Character.isLowSurrogate(name.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new BadRequest("body is not valid JSON: invalid Unicode '\\u" + Integer.toHexString(c) + "'");
            }
        }
        if (name.codePointCount(0, name.length()) > NAME_MAX) {
            throw new BadRequest("field 'name' is longer than " + NAME_MAX + " characters");
        }
        return name;
    }
}
