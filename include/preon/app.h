/* SPDX-License-Identifier: MIT */
#ifndef PREON_APP_H
#define PREON_APP_H

#include "preon/service.h"

/** The service this binary runs (src/service/routes.c): preon's routes, statements and handlers. */
extern const preon_service_t preon_app;

#endif
