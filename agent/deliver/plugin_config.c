/*
 * The plugin ABI's config getters over a ytree map (see plugin_config.h). All share one
 * lookup that tells ABSENT from a scalar from a wrong-shaped value, and falls back to the
 * plugin's declared default; each then converts the text with the same parsers as the
 * agent's own keys (units.c), so "5s" or "0640" mean the same thing in a plugin's config as
 * anywhere else in the file.
 */
#include "deliver/plugin_config.h"

#include <stdio.h>
#include <string.h>

#include "shared/units.h"
#include "config/ytree.h"
#include "deliver/host.h"

/* "FILE:LINE:COL: subscribers[0].config.KEY: expected ..., got ...", as the agent's own
 * keys are reported (config/config_walk.c); outside the agent, whose host knows no entry,
 * the key is named by the instance instead ("subscriber 'NAME' config.KEY"). */
static void report(const struct gw_host *host, const struct ynode *v, const char *key,
                   const char *expected)
{
	if (!host || !host->log)
		return;
	const struct host_ctx *c = host->priv; /* a host_table_init() host, or NULL */
	char where[160];
	if (c && c->config_bare)
		snprintf(where, sizeof where, "%s", key);
	else if (c && c->config_key[0])
		snprintf(where, sizeof where, "%s.%s", c->config_key, key);
	else
		snprintf(where, sizeof where, "subscriber '%s' config.%s",
		         host->instance ? host->instance : "?", key);
	if (v->type == YNODE_SCALAR)
		host->log(host, GW_LOG_ERROR, "%s:%d:%d: %s: expected %s, got '%.100s'", v->file,
		          ytree_line(v), ytree_col(v), where, expected, v->text);
	else
		host->log(host, GW_LOG_ERROR, "%s:%d:%d: %s: expected %s, got %s", v->file,
		          ytree_line(v), ytree_col(v), where, expected, ytree_type_name(v));
}

const struct gw_option *plugin_option_find(const struct gw_option *declared, const char *key)
{
	for (const struct gw_option *o = declared; o && o->name; o++)
		if (strcmp(o->name, key) == 0)
			return o;
	return NULL;
}

/* The node of `key`, or its declared default as a scalar in *def, or NULL. */
static const struct ynode *find(const struct gw_option *declared, const struct gw_config *config,
                                const char *key, struct ynode *def)
{
	const struct ynode *n = ytree_get((const struct ynode *)config, key);
	if (n && !(n->type == YNODE_SCALAR && n->null))
		return n;
	const struct gw_option *o = plugin_option_find(declared, key);
	if (!o || !o->def)
		return NULL;
	memset(def, 0, sizeof *def);
	def->type = YNODE_SCALAR;
	def->file = "(declared default)";
	def->text = o->def;
	def->len = strlen(o->def);
	return def;
}

/* ABSENT, INVALID (already reported), or OK with *v a non-null scalar. */
static enum gw_config_result lookup(const struct gw_host *host, const struct gw_option *declared,
                                    const struct gw_config *config, const char *key,
                                    const char *expected, const struct ynode **v, struct ynode *def)
{
	const struct ynode *n = find(declared, config, key, def);
	if (!n)
		return GW_CONFIG_ABSENT;
	if (n->type != YNODE_SCALAR) {
		report(host, n, key, expected);
		return GW_CONFIG_INVALID;
	}
	*v = n;
	return GW_CONFIG_OK;
}

enum gw_config_result plugin_config_string(const struct gw_host *host,
                                           const struct gw_option *declared,
                                           const struct gw_config *config, const char *key,
                                           const char **out)
{
	const struct ynode *v;
	struct ynode def;
	enum gw_config_result r = lookup(host, declared, config, key, "a string", &v, &def);
	if (r == GW_CONFIG_OK)
		*out = v->text; /* a default's text is the declaration's own string */
	return r;
}

/* Converts the scalar of `key` with `conv`; `expected` names the form for messages. */
#define GETTER(fn, type, expected, conv)                                                           \
	enum gw_config_result fn(const struct gw_host *host, const struct gw_option *declared,     \
	                         const struct gw_config *config, const char *key, type *out)       \
	{                                                                                          \
		const struct ynode *v;                                                             \
		struct ynode def;                                                                  \
		enum gw_config_result r = lookup(host, declared, config, key, expected, &v, &def); \
		if (r != GW_CONFIG_OK)                                                             \
			return r;                                                                  \
		if (conv(v->text, out) < 0) {                                                      \
			report(host, v, key, expected);                                            \
			return GW_CONFIG_INVALID;                                                  \
		}                                                                                  \
		return GW_CONFIG_OK;                                                               \
	}

GETTER(plugin_config_int, int64_t, "a whole number", units_int)
GETTER(plugin_config_bool, int, UNITS_BOOL_FORMS, units_bool)
GETTER(plugin_config_duration_ms, int64_t, "a duration like 200ms", units_duration_ms)
GETTER(plugin_config_mode, unsigned, "an octal file mode like \"0640\"", units_mode)
GETTER(plugin_config_size, int64_t, "a size like 65536, 512KiB or 64MiB", units_size)

enum gw_config_result plugin_config_list_item(const struct gw_host *host,
                                              const struct gw_option *declared,
                                              const struct gw_config *config, const char *key,
                                              size_t i, const char **out)
{
	struct ynode def;
	const struct ynode *n = find(declared, config, key, &def);
	if (!n)
		return GW_CONFIG_ABSENT;
	if (n == &def) {
		/* A declared default of a list is one entry (or "" for none). */
		if (i > 0 || !*n->text)
			return GW_CONFIG_ABSENT;
		*out = plugin_option_find(declared, key)->def;
		return GW_CONFIG_OK;
	}
	if (n->type != YNODE_SEQ) {
		report(host, n, key, "a list");
		return GW_CONFIG_INVALID;
	}
	if (i >= n->n)
		return GW_CONFIG_ABSENT;
	const struct ynode *it = n->items[i];
	if (it->type != YNODE_SCALAR || it->null) {
		report(host, it, key, "a list of strings");
		return GW_CONFIG_INVALID;
	}
	*out = it->text;
	return GW_CONFIG_OK;
}
