/*
 * The plugin ABI's config getters over a ytree map (see plugin_config.h). All five share
 * one lookup that tells ABSENT from a scalar from a wrong-shaped value; each then converts
 * the text with the same parsers as the agent's own keys (units.c), so "5s" or "0640"
 * mean the same thing in a plugin's config as anywhere else in the file.
 */
#include "deliver/plugin_config.h"

#include <stdio.h>
#include <string.h>

#include "core/units.h"
#include "config/ytree.h"

static void report(const struct gw_host *host, const struct ynode *v, const char *key,
                   const char *expected)
{
	if (!host || !host->log)
		return;
	if (v->type == YNODE_SCALAR)
		host->log(host, GW_LOG_ERROR,
		          "%s:%d:%d: subscriber '%s' config.%s: expected %s, "
		          "got '%.100s'",
		          v->file, v->line, v->col, host->instance ? host->instance : "?", key,
		          expected, v->text);
	else
		host->log(host, GW_LOG_ERROR,
		          "%s:%d:%d: subscriber '%s' config.%s: expected %s, got %s", v->file,
		          v->line, v->col, host->instance ? host->instance : "?", key, expected,
		          ytree_type_name(v));
}

/* ABSENT, INVALID (already reported), or OK with *v a non-null scalar. */
static enum gw_config_result lookup(const struct gw_host *host, const struct gw_config *config,
                                    const char *key, const char *expected, const struct ynode **v)
{
	const struct ynode *n = ytree_get((const struct ynode *)config, key);
	if (!n || (n->type == YNODE_SCALAR && n->null))
		return GW_CONFIG_ABSENT;
	if (n->type != YNODE_SCALAR) {
		report(host, n, key, expected);
		return GW_CONFIG_INVALID;
	}
	*v = n;
	return GW_CONFIG_OK;
}

enum gw_config_result plugin_config_string(const struct gw_host *host,
                                           const struct gw_config *config, const char *key,
                                           const char **out)
{
	const struct ynode *v;
	enum gw_config_result r = lookup(host, config, key, "a string", &v);
	if (r == GW_CONFIG_OK)
		*out = v->text;
	return r;
}

enum gw_config_result plugin_config_int(const struct gw_host *host, const struct gw_config *config,
                                        const char *key, int64_t *out)
{
	const struct ynode *v;
	const char *expected = "a whole number";
	enum gw_config_result r = lookup(host, config, key, expected, &v);
	if (r != GW_CONFIG_OK)
		return r;
	if (units_int(v->text, out) < 0) {
		report(host, v, key, expected);
		return GW_CONFIG_INVALID;
	}
	return GW_CONFIG_OK;
}

enum gw_config_result plugin_config_bool(const struct gw_host *host, const struct gw_config *config,
                                         const char *key, int *out)
{
	const struct ynode *v;
	const char *expected = "true or false";
	enum gw_config_result r = lookup(host, config, key, expected, &v);
	if (r != GW_CONFIG_OK)
		return r;
	if (units_bool(v->text, out) < 0) {
		report(host, v, key, expected);
		return GW_CONFIG_INVALID;
	}
	return GW_CONFIG_OK;
}

enum gw_config_result plugin_config_duration_ms(const struct gw_host *host,
                                                const struct gw_config *config, const char *key,
                                                int64_t *out)
{
	const struct ynode *v;
	const char *expected = "a duration like 200ms";
	enum gw_config_result r = lookup(host, config, key, expected, &v);
	if (r != GW_CONFIG_OK)
		return r;
	if (units_duration_ms(v->text, out) < 0) {
		report(host, v, key, expected);
		return GW_CONFIG_INVALID;
	}
	return GW_CONFIG_OK;
}

enum gw_config_result plugin_config_mode(const struct gw_host *host, const struct gw_config *config,
                                         const char *key, unsigned *out)
{
	const struct ynode *v;
	const char *expected = "an octal file mode like \"0640\"";
	enum gw_config_result r = lookup(host, config, key, expected, &v);
	if (r != GW_CONFIG_OK)
		return r;
	if (units_mode(v->text, out) < 0) {
		report(host, v, key, expected);
		return GW_CONFIG_INVALID;
	}
	return GW_CONFIG_OK;
}
