// SPDX-License-Identifier: MIT
package peer;

/**
 * The status preon answers for a database failure: a constraint violation (SQLSTATE class 23) → 409; a
 * serialization failure or deadlock (40001, 40P01), or no connection at all → 503 with Retry-After: 1; any
 * other error the database returned → 502. The message is the database's (or the driver's).
 */
public final class DbStatus {
    private DbStatus() {
    }

    /** The status for an error with this SQLSTATE; null means the database was not reached. */
    public static int of(String sqlState) {
        if (sqlState == null || sqlState.startsWith("08")) {
            return 503;
        }
        if (sqlState.startsWith("23")) {
            return 409;
        }
        return sqlState.equals("40001") || sqlState.equals("40P01") ? 503 : 502;
    }

    public static String message(Throwable e) {
        String m = e.getMessage();
        return m != null ? m : e.getClass().getSimpleName();
    }
}
