/*
 * The configuration getters of the plugin ABI (struct gw_host's config_* members): a
 * plugin reads its own `config:` map through these, by key, with the agent's units.
 * In the agent a `struct gw_config *` is a `const struct ynode *` map (ytree.h), already
 * ${VAR}-expanded by the configuration loader.
 *
 * Rules, the same for every getter:
 *  - config NULL, key absent, or its value YAML null (plain ~, null, or nothing): ABSENT,
 *    *out untouched, so the plugin keeps its default.
 *  - a value that does not convert (wrong form, or a list/map where a scalar is expected):
 *    INVALID, after host->log(GW_LOG_ERROR, "FILE:LINE:COL: subscriber 'NAME' config.KEY:
 *    expected ..., got '...'").
 *  - otherwise OK and *out set. A string stays valid as long as the configuration.
 */
#ifndef GW_PLUGIN_CONFIG_H
#define GW_PLUGIN_CONFIG_H

#include <gwsync/subscriber.h>

struct ynode;

static inline const struct gw_config *plugin_config_of(const struct ynode *map)
{
	return (const struct gw_config *)map;
}

enum gw_config_result plugin_config_string(const struct gw_host *host,
                                           const struct gw_config *config, const char *key,
                                           const char **out);
enum gw_config_result plugin_config_int(const struct gw_host *host, const struct gw_config *config,
                                        const char *key, int64_t *out);
enum gw_config_result plugin_config_bool(const struct gw_host *host, const struct gw_config *config,
                                         const char *key, int *out);
enum gw_config_result plugin_config_duration_ms(const struct gw_host *host,
                                                const struct gw_config *config, const char *key,
                                                int64_t *out);
enum gw_config_result plugin_config_mode(const struct gw_host *host, const struct gw_config *config,
                                         const char *key, unsigned *out);

#endif
