/*
 * The registry of source types, as curl lists its TLS backends: one NULL-terminated table,
 * source_types[], and the lookups main makes in it: the types' configuration sections, which
 * main hands the configuration loader (source_config_sections), and the type the
 * configuration selects. The table itself is not written here: the build generates it
 * (agent/source/source_types.c, from the types the source folders declare in their
 * source.am, in the order agent/source/sources.am includes them), so adding a source is its
 * folder and its one include line in sources.am, and no file outside the folder names it.
 */
#include "source/source.h"

#include <string.h>

#include "config/config_walk.h"

const struct source_ops *source_select(const struct cfg *cfg)
{
	for (size_t i = 0; source_types[i]; i++)
		if (source_types[i]->selects(cfg))
			return source_types[i];
	return NULL;
}

const struct source_ops *source_find(const char *type)
{
	for (size_t i = 0; source_types[i]; i++)
		if (strcmp(source_types[i]->type, type) == 0)
			return source_types[i];
	return NULL;
}

const struct cfg_section *source_config_section(size_t i)
{
	for (size_t t = 0; source_types[t]; t++)
		if (source_types[t]->config && i-- == 0)
			return source_types[t]->config;
	return NULL;
}

void source_config_sections(const struct cfg_section *out[CFG_SECTIONS_MAX + 1])
{
	size_t n = 0;
	while (n < CFG_SECTIONS_MAX && (out[n] = source_config_section(n)) != NULL)
		n++;
	out[n] = NULL;
}
