/*
 * The registry of source types, as curl lists its TLS backends: one NULL-terminated table,
 * source_types[], and the lookups main and the configuration loader make in it. main picks
 * the type the configuration selects, and the loader takes each type's own keys from it
 * (cfg_source_section). The table itself is not written here: the build generates it
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

const struct cfg_section *cfg_source_section(size_t i)
{
	for (size_t t = 0; source_types[t]; t++)
		if (source_types[t]->config && i-- == 0)
			return source_types[t]->config;
	return NULL;
}
