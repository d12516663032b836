/*
 * The registry of source types, as curl lists its TLS backends: one NULL-terminated table,
 * and the one place outside its folder that names a source. main picks the type the
 * configuration selects from it, and the configuration loader takes each type's own keys
 * from it (cfg_source_section), so adding a source is its folder and one line below.
 */
#include "source/source.h"

#include <string.h>

#include "config/config_walk.h"

/* One line per source type: X(name) for name_source_ops, in source/name/source.c. */
#define SOURCE_TYPES(X)                                                                            \
	X(http)                                                                                    \
	X(websocket)                                                                               \
	X(zookeeper)                                                                               \
	X(etcd)

#define DECLARE(name) extern const struct source_ops name##_source_ops;
SOURCE_TYPES(DECLARE)
#define ENTRY(name) &name##_source_ops,
const struct source_ops *const source_types[] = {SOURCE_TYPES(ENTRY) NULL};

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
