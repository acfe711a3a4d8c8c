/* SPDX-License-Identifier: MIT */
#ifndef PREON_SERVER_H
#define PREON_SERVER_H

#include <h2o.h>
#include "preon/config.h"
#include "preon/db.h"
#include "preon/service.h"

/** The event loops preon_server_run starts for `cfg`: server.threads, or one per usable CPU (the affinity mask, lowered
 * by a cgroup CPU quota). Start-up only: it may read a few small files. */
unsigned preon_server_threads(const preon_config_t *cfg);

/** The database pools' settings from the configuration's database section (each pool of a thread gets these). */
void preon_server_db_settings(const preon_config_t *cfg, preon_db_settings_t *out);

/**
 * Binds the listeners, starts cfg->server.threads event loops (0: one per usable CPU) running `service`, serves until
 * SIGTERM, SIGINT or SIGQUIT, then drains (bounded by server.shutdown_timeout_ms) and returns 0; or returns a negative
 * code after printing why start-up failed. On SIGHUP it calls `reload` (may be NULL) on the main thread and serves on;
 * SIGUSR1, SIGUSR2 and SIGPIPE are ignored. The server answers the health and metrics paths itself and counts every
 * request. Call from the main thread with `cfg` fully loaded; `cfg`, `target`, `read_target` (database.read_url's,
 * or NULL) and `service` are borrowed.
 */
int preon_server_run(const preon_config_t *cfg, const preon_db_target_t *target, const preon_db_target_t *read_target,
                     const preon_service_t *service, void (*reload)(void));

#endif
