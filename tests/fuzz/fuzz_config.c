/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the YAML configuration loader, on any bytes. It must answer 0 or an error with a message,
 * never crash, leak or read out of bounds. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "preon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    preon_config_t cfg;
    char err[512];
    preon_config_init(&cfg);
    err[0] = '\0';
    if (preon_config_load_string(&cfg, "fuzz.yaml", (const char *)data, size, err, sizeof(err)) != 0 &&
        strncmp(err, "fuzz.yaml:", 10) != 0)
        __builtin_trap(); /* every error names the file, line and column */
    preon_config_dispose(&cfg);
    return 0;
}
