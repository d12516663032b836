/*
 * Declared options (see plugin_options.h). The declaration becomes a key table for
 * cfgw_map(), whose own loaders run check-only (no base to store into): the values are
 * read later by the plugin through the host's getters, with the same parsers (units.c), so
 * what passes here converts there. Only what the agent's keys have no loader for (a
 * string that may be empty, a path, a list) is checked here.
 */
#include "deliver/plugin_options.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_walk.h"

const char *plugin_option_type_name(enum gw_option_type t)
{
	switch (t) {
	case GW_OPT_STRING:
		return "string";
	case GW_OPT_BOOL:
		return "bool";
	case GW_OPT_INT:
		return "int";
	case GW_OPT_DURATION:
		return "duration";
	case GW_OPT_SIZE:
		return "size";
	case GW_OPT_MODE:
		return "mode";
	case GW_OPT_PATH:
		return "path";
	case GW_OPT_LIST:
		return "list";
	}
	return NULL;
}

static int v_string(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                    void *base)
{
	return cfgw_scalar(ld, v, path, "a string") ? 0 : -1;
}

/* A path must not be empty; what to do instead depends on the declaration, so there is one
 * loader per case: leave the key out for its declared default, name a path when the key
 * is required (it has no default), or leave it out to go without. */
static int path_check(struct loader *ld, const struct ynode *v, const char *path, const char *fix)
{
	const char *s = cfgw_scalar(ld, v, path, "a path");
	if (!s)
		return -1;
	if (!*s)
		return cfgw_err(ld, v, path, "must not be empty (%s)", fix);
	return 0;
}

static int v_path(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base)
{
	return path_check(ld, v, path, "leave the key out for the default");
}

static int v_path_required(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	return path_check(ld, v, path, "the key is required and has no default: name a path");
}

static int v_path_optional(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	return path_check(ld, v, path, "name a path, or leave the key out to go without");
}

static int v_list(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base)
{
	if (v->type != YNODE_SEQ)
		return cfgw_err(ld, v, path, "expected a list, got %s", ytree_type_name(v));
	for (size_t i = 0; i < v->n; i++)
		if (v->items[i]->type != YNODE_SCALAR || v->items[i]->null)
			return cfgw_err(ld, v->items[i], path,
			                "expected a list of strings, got %s in it",
			                ytree_type_name(v->items[i]));
	return 0;
}

static load_fn loader_of(enum gw_option_type t)
{
	switch (t) {
	case GW_OPT_STRING:
		return v_string;
	case GW_OPT_BOOL:
		return cfgw_bool;
	case GW_OPT_INT:
		return cfgw_int;
	case GW_OPT_DURATION:
		return cfgw_duration;
	case GW_OPT_SIZE:
		return cfgw_size;
	case GW_OPT_MODE:
		return cfgw_mode;
	case GW_OPT_PATH:
		return v_path;
	case GW_OPT_LIST:
		return v_list;
	}
	return NULL;
}

/* A declared default must itself be a valid value of its type. */
static int check_default(struct loader *ld, const struct gw_option *o, const struct key *k,
                         const char *path)
{
	if (!o->def || o->type == GW_OPT_LIST)
		return 0;
	struct ynode n = {.type = YNODE_SCALAR, .file = "(declared default)", .line = 0};
	n.text = o->def;
	n.len = strlen(o->def);
	struct gw_err inner;
	struct loader sub = {.err = &inner};
	if (k->load(&sub, k, &n, o->name, NULL) < 0)
		return gw_errf(ld->err, "the plugin declares a bad default for %s.%s: %s", path,
		               o->name, inner.msg);
	return 0;
}

int plugin_options_check(const struct gw_option *declared, const struct ynode *config,
                         const struct ynode *at, const char *path, struct gw_err *err)
{
	size_t n = 0;
	while (declared[n].name)
		n++;
	struct key *keys = calloc(n + 1, sizeof *keys);
	if (!keys)
		return gw_errf(err, "out of memory");
	struct loader ld = {.err = err};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		keys[i].name = declared[i].name;
		keys[i].load = loader_of(declared[i].type);
		if (declared[i].type == GW_OPT_PATH && !declared[i].def)
			keys[i].load = declared[i].required ? v_path_required : v_path_optional;
		/* an int may be any int64_t; durations and sizes are not negative */
		keys[i].min = declared[i].type == GW_OPT_INT ? INT64_MIN : 0;
		keys[i].max = INT64_MAX;
		if (!keys[i].load)
			rc = gw_errf(err, "the plugin declares %s.%s with an unknown type %d", path,
			             declared[i].name, (int)declared[i].type);
		else
			rc = check_default(&ld, &declared[i], &keys[i], path);
	}
	if (rc == 0 && config) /* check-only: the plugin reads its values through the host */
		rc = cfgw_map(&ld, config, keys, path, NULL);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct ynode *v = config ? ytree_get(config, declared[i].name) : NULL;
		if (declared[i].required && (!v || (v->type == YNODE_SCALAR && v->null))) {
			const struct ynode *where = config ? config : at;
			if (where)
				rc = cfgw_err(&ld, where, path, "missing required key '%s': %s",
				              declared[i].name,
				              declared[i].help ? declared[i].help : "no help");
			else
				rc = gw_errf(err, "%s: missing required key '%s'", path,
				             declared[i].name);
		}
	}
	free(keys);
	return rc;
}
