/*
 * admin.websocket (see config.h): the keys, their defaults and their one-line documentation
 * in one table, the token's loaders (a secret like the password, never quoted in a
 * message), and the checks after the walk.
 */
#include "source/admin/config.h"
#include "source/websocket/config.h"

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
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	const struct ws_config *w = settings;
	const struct admin_config *a = admin_config(ld->cfg);
	int websocket = a && a->websocket;
	if (node && !websocket)
		return cfgw_err(ld, node, "admin.websocket",
		                "applies to ws:// or wss:// servers only; admin.servers are "
		                "http(s):// (long-polling)");
	if (websocket && w->resync_interval_ms > 0 && w->resync_interval_ms < 1000)
		return cfgw_err(ld, node, "admin.websocket.resync_interval",
		                "must be 0 (off) or at least 1s");
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
