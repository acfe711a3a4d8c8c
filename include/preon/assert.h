/* SPDX-License-Identifier: MIT */
#ifndef PREON_ASSERT_H
#define PREON_ASSERT_H

/*
 * PREON_ASSERT(cond) states an invariant the code relies on (libuv and libpq assert theirs on entry). Unlike assert()
 * it stays in release builds: every use is a comparison or two on the owning thread, and a broken invariant must stop
 * the process with its place named rather than let it answer wrongly or write past an array. A failure is a bug in
 * preon, never the client's or the database's doing: those are answered (4xx, 5xx), not asserted.
 */
#define PREON_ASSERT(cond) ((cond) ? (void)0 : preon_assert_fail(#cond, __FILE__, __LINE__, __func__))

/** Writes "preon: FILE:LINE: FUNC: assertion `EXPR' failed" to stderr and aborts. */
_Noreturn void preon_assert_fail(const char *expr, const char *file, int line, const char *func);

#endif
