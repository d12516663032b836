/*
 * The configuration getters of the plugin ABI (struct gw_host's config_* members): a
 * plugin reads its own `config:` map through these, by key, with the agent's units.
 * In the agent a `struct gw_config *` is a `const struct ynode *` map (ytree.h), already
 * ${VAR}-expanded by the configuration loader.
 *
 * Rules, the same for every getter:
 *  - key absent or its value YAML null (plain ~, null, or nothing): the plugin's declared
 *    default (`declared`: its gw_option table, NULL for none) if it has one, else ABSENT
 *    with *out untouched, so the plugin keeps its default. config NULL counts as empty.
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

/* The declared option `key`, or NULL. */
const struct gw_option *plugin_option_find(const struct gw_option *declared, const char *key);

enum gw_config_result plugin_config_string(const struct gw_host *host,
                                           const struct gw_option *declared,
                                           const struct gw_config *config, const char *key,
                                           const char **out);
enum gw_config_result plugin_config_int(const struct gw_host *host,
                                        const struct gw_option *declared,
                                        const struct gw_config *config, const char *key,
                                        int64_t *out);
enum gw_config_result plugin_config_bool(const struct gw_host *host,
                                         const struct gw_option *declared,
                                         const struct gw_config *config, const char *key, int *out);
enum gw_config_result plugin_config_duration_ms(const struct gw_host *host,
                                                const struct gw_option *declared,
                                                const struct gw_config *config, const char *key,
                                                int64_t *out);
enum gw_config_result plugin_config_mode(const struct gw_host *host,
                                         const struct gw_option *declared,
                                         const struct gw_config *config, const char *key,
                                         unsigned *out);
enum gw_config_result plugin_config_size(const struct gw_host *host,
                                         const struct gw_option *declared,
                                         const struct gw_config *config, const char *key,
                                         int64_t *out);
enum gw_config_result plugin_config_list_item(const struct gw_host *host,
                                              const struct gw_option *declared,
                                              const struct gw_config *config, const char *key,
                                              size_t i, const char **out);

#endif
