// SPDX-License-Identifier: MIT
package peer;

/** A request body whose Content-Type is not application/json: the blocking peers answer it 415 (FruitBody). */
public final class UnsupportedType extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UnsupportedType() {
        super(FruitBody.NOT_JSON_TYPE, null, false, false);
    }
}
