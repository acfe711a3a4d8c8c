/* SPDX-License-Identifier: MIT */
#ifndef PREON_APP_H
#define PREON_APP_H

#include "preon/service.h"

/**
 * The service this binary runs (src/service/routes.c): preon's routes, statements and handlers, with the modules
 * `cfg` mounts (modules.techempower: TechEmpower's test types, src/service/techempower.c). An unmounted module's
 * routes answer 404 and no connection prepares its statements.
 */
const preon_service_t *preon_app(const preon_config_t *cfg);

#endif
