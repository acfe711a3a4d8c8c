/* SPDX-License-Identifier: MIT */
#ifndef PREON_PROBE_H
#define PREON_PROBE_H

#include "preon/config.h"

/**
 * `preon --probe PATH`: asks the preon configured by `cfg` (on loopback, at server.port) for PATH and returns
 * 0 if it answers 200 within two seconds, 1 otherwise. For container health checks in images without curl.
 * Blocking: for the command line only, never on an event loop.
 */
int preon_probe(const preon_config_t *cfg, const char *path);

#endif
