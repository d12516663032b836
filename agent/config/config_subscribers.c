/*
 * The `subscribers:` list (config_subscribers.h): one struct cfg_subscriber per entry,
 * names checked for shape and uniqueness, `groups:` written as admin.groups is (a list or a
 * comma-separated string), and a plugin's own `config:` map kept as a tree for the plugin's
 * declared options to check later (deliver/plugin_options.c).
 */
#include "config/config_subscribers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/suggest.h"
#include "config/ytree.h"

#define SUBSCRIBER_NAME_MAX 64

static int load_sub_name(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a name");
	if (!s)
		return -1;
	size_t len = strlen(s);
	if (len == 0 || len > SUBSCRIBER_NAME_MAX ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyz"
	              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	              "0123456789._-") != len)
		return cfgw_err(
		    ld, v, path,
		    "'%.100s' is not a valid name: use 1 to %d letters, digits, '.', '_' "
		    "or '-'",
		    s, SUBSCRIBER_NAME_MAX);
	const struct cfg *c = ld->cfg;
	for (size_t i = 0; i < c->n_subscribers; i++)
		if (c->subscribers[i].name && strcmp(c->subscribers[i].name, s) == 0)
			return cfgw_err(ld, v, path,
			                "duplicate subscriber name '%s' (first at line %d)", s,
			                c->subscribers[i].line);
	return cfgw_string(ld, k, v, path, base);
}

static int load_sub_config(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	(void)k;
	if (v->type != YNODE_MAP)
		return cfgw_err(ld, v, path, "expected a map (the plugin's own settings), got %s",
		                ytree_type_name(v));
	((struct cfg_subscriber *)base)->config = v;
	return 0;
}

static int add_sub_group(struct loader *ld, const struct ynode *at, const char *path,
                         const char *name, size_t len, void *base)
{
	struct cfg_subscriber *s = base;
	char word[64];
	snprintf(word, sizeof word, "%.*s", (int)(len < sizeof word ? len : sizeof word - 1), name);
	int g = cfg_group_parse(word);
	if (g < 0) {
		const char *names[GW_GROUP_COUNT];
		for (int i = 0; i < GW_GROUP_COUNT; i++)
			names[i] = gw_group_name((enum gw_group)i);
		const char *best = suggest_closest(word, names, GW_GROUP_COUNT);
		return cfgw_err(ld, at, path, "unknown group '%s'%s%s%s", word,
		                best ? " (did you mean '" : "", best ? best : "",
		                best ? "'?)" : "");
	}
	for (size_t i = 0; i < s->n_groups; i++)
		if ((int)s->groups[i] == g)
			return cfgw_err(ld, at, path, "duplicate group '%s'", word);
	s->groups[s->n_groups++] = (enum gw_group)g;
	return 0;
}

/* subscribers[].groups: the groups this subscriber takes, as admin.groups is written (a
 * list or a comma-separated string); whether they are synced is checked after the source
 * section (check_subscriber_groups). */
static int load_sub_groups(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	(void)k;
	struct cfg_subscriber *s = base;
	s->groups_node = v;
	s->n_groups = 0;
	return cfgw_each_word(ld, v, path, "group names", add_sub_group, base);
}

#define SUB(f) offsetof(struct cfg_subscriber, f)
static const struct key subscriber_keys[] = {
    {"name", load_sub_name, SUB(name), 0, 0, NULL, CFGW_NODOC},
    {"library", cfgw_string, SUB(library), 0, 0, NULL, CFGW_NODOC},
    {"config", load_sub_config, 0, 0, 0, NULL, CFGW_NODOC},
    {"groups", load_sub_groups, 0, 0, 0, NULL, CFGW_NODOC},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

int cfg_load_subscribers(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	(void)k, (void)base;
	struct cfg *c = ld->cfg;
	if (v->type != YNODE_SEQ)
		return cfgw_err(ld, v, path, "expected a list of subscribers, got %s",
		                ytree_type_name(v));
	if (v->n == 0)
		return 0;
	if (!(c->subscribers = calloc(v->n, sizeof *c->subscribers)))
		return cfgw_err(ld, v, path, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *e = v->items[i];
		char ipath[64];
		snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
		struct cfg_subscriber *s = &c->subscribers[i];
		s->line = e->line;
		s->col = e->col;
		/* counted before it is complete so cfg_free sees what was allocated; the
		 * duplicate-name check skips a NULL name */
		c->n_subscribers = i + 1;
		if (cfgw_map(ld, e, subscriber_keys, ipath, s) < 0)
			return -1;
		if (!s->name)
			return cfgw_err(ld, e, ipath,
			                "'name' is required (a unique instance name)");
		if (!s->library)
			return cfgw_err(
			    ld, e, ipath,
			    "'library' is required (a plugin name such as file, or a path "
			    "to a .so)");
		const struct ynode *lib = ytree_get(e, "library");
		if (lib) {
			s->library_line = ytree_line(lib);
			s->library_col = ytree_col(lib);
		}
		if (!s->config) {
			if (!(s->own_config = ytree_new_map(e->file, e->line, e->col)))
				return cfgw_err(ld, e, ipath, "out of memory");
			s->config = s->own_config;
		}
	}
	return 0;
}

/* Every group a subscriber names in `groups:` is one the agent syncs: a group never synced
 * would never be delivered, and the subscriber would wait on it for ever. */
int cfg_check_subscriber_groups(struct loader *ld)
{
	const struct cfg *c = ld->cfg;
	for (size_t i = 0; i < c->n_subscribers; i++) {
		const struct cfg_subscriber *s = &c->subscribers[i];
		for (size_t k = 0; k < s->n_groups; k++) {
			size_t j = 0;
			while (j < c->n_groups && c->groups[j] != s->groups[k])
				j++;
			if (j < c->n_groups)
				continue;
			char path[64], synced[256] = "";
			size_t pos = 0;
			for (size_t m = 0; m < c->n_groups && pos < sizeof synced; m++)
				pos += (size_t)snprintf(synced + pos, sizeof synced - pos, "%s%s",
				                        m ? ", " : "", gw_group_name(c->groups[m]));
			snprintf(path, sizeof path, "subscribers[%zu].groups", i);
			return cfgw_err(ld, s->groups_node, path,
			                "subscriber '%s' takes group %s, which this agent does not "
			                "sync (%s.groups: %s): add it there, or drop it here",
			                s->name ? s->name : "?", gw_group_name(s->groups[k]),
			                c->section ? c->section : "admin", synced);
		}
	}
	return 0;
}
