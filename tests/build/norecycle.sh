#!/bin/sh
# SPDX-License-Identifier: MIT
# The sanitizer build's preon must take the place of h2o's chunk recycling (src/server/norecycle.c): libh2o-evloop's
# calls to h2o_mem_alloc_recycle and h2o_mem_free_recycle bind to the executable, not to the library's own
# copies, or a write into a recycled chunk is invisible to ASan again. Usage: norecycle.sh PREON_BINARY
exec "$(dirname "$0")/binds.sh" "$1" libh2o-evloop:h2o_mem_alloc_recycle libh2o-evloop:h2o_mem_free_recycle
