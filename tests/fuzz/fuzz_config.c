/*
 * libFuzzer target: the configuration parser (libyaml tree, validation, ${VAR} expansion,
 * units). A configuration is trusted more than a network reply, but a typo must give an
 * error, never a crash.
 */
#include <stdint.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg *cfg = NULL;
	struct gw_err err;
	if (cfg_parse("fuzz.yaml", (const char *)data, size, &cfg, &err) == 0)
		cfg_free(cfg);
	return 0;
}
