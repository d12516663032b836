/*
 * libFuzzer target: the configuration parser (libyaml tree, validation, ${VAR} expansion,
 * units). A configuration is trusted more than a network reply, but a typo must give an
 * error, never a crash.
 */
#include <stdint.h>

#include "config/config.h"
#include "source/source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cfg *cfg = NULL;
	struct gw_err err;
	const struct cfg_section *sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(sections);
	if (cfg_parse("fuzz.yaml", (const char *)data, size, sections, &cfg, &err) == 0)
		cfg_free(cfg);
	return 0;
}
