/*
 * admin.websocket (see config.h): the keys, their defaults and their one-line documentation
 * in one table, the token's loaders (a secret like the password, never quoted in a
 * message), and the checks after the walk.
 */
#include "source/admin/config.h"
#include "source/websocket/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_admin.h"
#include "config/config_walk.h"

/* admin.websocket.token: empty means none (an admin before the token). */
static int load_token(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base)
{
	(void)k;
	struct ws_config *w = base;
	if (v->type != YNODE_SCALAR)
		return cfgw_err(ld, v, path, "expected a string, got %s", ytree_type_name(v));
	if (w->token_file_node)
		return cfgw_err(ld, v, path,
		                "cannot be used together with admin.websocket.token_file (line %d)",
		                ytree_line(w->token_file_node));
	w->token_node = v;
	if (!*v->text)
		return 0;
	if (!(w->token = strdup(v->text)))
		return cfgw_err(ld, v, path, "out of memory");
	return 0;
}

static int load_token_file(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	struct ws_config *w = base;
	if (w->token_node)
		return cfgw_err(ld, v, path,
		                "cannot be used together with admin.websocket.token (line %d)",
		                ytree_line(w->token_node));
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	w->token_file_node = v;
	return cfga_read_secret_file(ld, v, path, w->token_file, &w->token);
}

/* admin.websocket.resync_groups: {GROUP: DURATION, ...}, each at least 1s. An emptied group
 * is the case it is for: a ShenYu 2.7 admin sends nothing for a REFRESH of an empty list,
 * so only a full sync shows the group empty (docs/operations.md). */
static int load_resync_groups(struct loader *ld, const struct key *k, const struct ynode *v,
                              const char *path, void *base)
{
	(void)k;
	struct ws_config *w = base;
	if (v->type != YNODE_MAP)
		return cfgw_err(ld, v, path, "expected a map of GROUP: duration, got %s",
		                ytree_type_name(v));
	w->resync_groups_node = v;
	for (size_t i = 0; i < v->n; i++) {
		char at[96];
		snprintf(at, sizeof at, "%s.%s", path, v->keys[i]->text);
		int g = cfg_group_parse(v->keys[i]->text);
		if (g < 0)
			return cfgw_err(ld, v->keys[i], path, "unknown group '%.60s'",
			                v->keys[i]->text);
		struct key dur = {.name = v->keys[i]->text, .min = 1000, .max = INT64_MAX};
		int64_t ms = 0;
		dur.off = 0;
		if (cfgw_duration(ld, &dur, v->items[i], at, &ms) < 0)
			return -1;
		w->group_resync_ms[g] = ms;
	}
	return 0;
}

#define WS(f) offsetof(struct ws_config, f)
static const struct key websocket_keys[] = {
    {"origin", cfgw_string, WS(origin), 0, 0, NULL, NULL,
     "the Origin header sent with the handshake (the admin's allowOrigins); none by default", 0},
    {"token", load_token, 0, 0, 0, NULL, NULL,
     "X-Shenyu-Sync-Token sent with the handshake (a secret); none by default", 0},
    {"token_file", load_token_file, WS(token_file), 0, 0, NULL, NULL,
     "a file holding the token instead (not with token)", 0},
    /* at least 100ms: pings are cheap, but not a busy loop */
    {"ping_interval", cfgw_duration, WS(ping_interval_ms), 100, INT64_MAX, NULL, "10s",
     "how often a ping is sent; three silent intervals and the connection is dead", 0},
    {"resync_interval", cfgw_duration, WS(resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full sync this often (0 off, else at least 1s)", 0},
    {"resync_groups", load_resync_groups, 0, 0, 0, NULL, NULL,
     "a shorter anti-entropy interval for some groups ({APP_AUTH: 30s}); the full sync then "
     "runs at the shortest",
     0},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	struct ws_config *w = settings;
	const struct admin_config *a = admin_config(ld->cfg);
	int websocket = a && a->websocket;
	if (node && !websocket)
		return cfgw_err(ld, node, "admin.websocket",
		                "applies to ws:// or wss:// servers only; admin.servers are "
		                "http(s):// (long-polling)");
	if (websocket && w->resync_interval_ms > 0 && w->resync_interval_ms < 1000)
		return cfgw_err(ld, node, "admin.websocket.resync_interval",
		                "must be 0 (off) or at least 1s");
	w->sync_every_ms = w->resync_interval_ms;
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		if (!w->group_resync_ms[g])
			continue;
		/* no admin.groups yet: the defaults (PLUGIN to META_DATA) follow this check */
		size_t k = 0;
		while (k < ld->cfg->n_groups && ld->cfg->groups[k] != (enum gw_group)g)
			k++;
		if (ld->cfg->n_groups ? k == ld->cfg->n_groups : g > GW_GROUP_META_DATA)
			return cfgw_err(
			    ld, w->resync_groups_node, "admin.websocket.resync_groups",
			    "%s is not among the groups this agent syncs (admin.groups)",
			    gw_group_name((enum gw_group)g));
		if (!w->sync_every_ms || w->group_resync_ms[g] < w->sync_every_ms)
			w->sync_every_ms = w->group_resync_ms[g];
	}
	return 0;
}

static void free_settings(void *settings)
{
	struct ws_config *w = settings;
	if (w->token) {
		explicit_bzero(w->token, strlen(w->token));
		free(w->token);
	}
	free(w->token_file);
	free(w->origin);
}

static const char *secret(const void *settings)
{
	return ((const struct ws_config *)settings)->token;
}

const struct cfg_section websocket_config_section = {
    .name = "websocket",
    .parent = "admin",
    .keys = websocket_keys,
    .size = sizeof(struct ws_config),
    .check = check,
    .free = free_settings,
    .secret = secret,
};

const struct ws_config *ws_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &websocket_config_section);
}
