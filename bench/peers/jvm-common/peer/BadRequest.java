// SPDX-License-Identifier: MIT
package peer;

/** A request that breaks the API's contract: a 400 whose message is preon's, word for word. */
public final class BadRequest extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public BadRequest(String message) {
        super(message, null, false, false);
    }
}
