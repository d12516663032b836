/*
 * admin: (see config.h). URLs are checked for what would otherwise fail later and obscurely
 * (scheme, host, a query string, credentials in the URL), and one agent speaks one protocol
 * family; the keys it shares with every source section are the loaders of config_admin.h.
 */
#include "source/admin/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_admin.h"
#include "config/config_walk.h"
#include "core/url.h"

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *url,
                      size_t len, void *base)
{
	struct admin_config *c = base;
	/* first, before any message quotes the URL: the part before an '@' is a credential */
	if (gw_url_has_userinfo(url, len))
		return cfgw_err(ld, at, path,
		                "credentials in the URL are not supported: use admin.username and "
		                "admin.password");
	size_t scheme;
	int ws = 0;
	if (len >= 7 && strncasecmp(url, "http://", 7) == 0)
		scheme = 7;
	else if (len >= 8 && strncasecmp(url, "https://", 8) == 0)
		scheme = 8;
	else if (len >= 5 && strncasecmp(url, "ws://", 5) == 0)
		scheme = 5, ws = 1;
	else if (len >= 6 && strncasecmp(url, "wss://", 6) == 0)
		scheme = 6, ws = 1;
	else
		return cfgw_err(ld, at, path,
		                "'%.*s' is not an http:// or https:// URL (nor ws:// or "
		                "wss:// for WebSocket sync)",
		                (int)(len > 200 ? 200 : len), url);
	/* one protocol family per agent: the first server decides */
	if (!c->first_server) {
		c->first_server = at;
		c->websocket = ws;
	} else if (c->websocket != ws) {
		return cfgw_err(ld, at, path,
		                "'%.*s' is a%s URL but the first server (line %d) is a%s one: "
		                "all servers of one agent use one protocol family, http(s):// "
		                "(long-polling) or ws(s):// (WebSocket)",
		                (int)(len > 200 ? 200 : len), url, ws ? " WebSocket" : "n HTTP",
		                ytree_line(c->first_server), ws ? "n HTTP" : " WebSocket");
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)url[i];
		if (ch <= ' ' || ch == 0x7f || ch == '?' || ch == '#')
			return cfgw_err(
			    ld, at, path,
			    "'%.*s' must be a base URL like http://host:port[/path], without "
			    "spaces, query or fragment",
			    (int)(len > 200 ? 200 : len), url);
	}
	size_t host_end = scheme;
	while (host_end < len && url[host_end] != '/')
		host_end++;
	if (host_end == scheme)
		return cfgw_err(ld, at, path, "'%.*s' has no host", (int)(len > 200 ? 200 : len),
		                url);
	while (len > host_end && url[len - 1] == '/')
		len--;
	for (size_t i = 0; i < c->n_servers; i++)
		if (strlen(c->servers[i]) == len && strncasecmp(c->servers[i], url, len) == 0)
			return cfgw_err(ld, at, path, "duplicate server '%s'", c->servers[i]);
	char **grown = realloc(c->servers, (c->n_servers + 1) * sizeof *grown);
	if (!grown)
		return cfgw_err(ld, at, path, "out of memory");
	c->servers = grown;
	if (!(c->servers[c->n_servers] = strndup(url, len)))
		return cfgw_err(ld, at, path, "out of memory");
	c->n_servers++;
	return 0;
}

/* admin.servers: a list of URLs, or one comma-separated string of them. */
static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "admin URLs", add_server, base);
}

#define ADMIN(f) offsetof(struct admin_config, f)
#define CFG(f)   offsetof(struct cfg, f)
/* in_cfg: the keys every source section shares go to the same fields of struct cfg */
static const struct key admin_keys[] = {
    {"servers", load_servers, 0, 0, 0, NULL, NULL,
     "the admin URLs: http(s):// for long-polling, ws(s):// for WebSocket (required)", 0},
    {"username", cfga_username, CFG(username), 0, 0, NULL, NULL,
     "the admin user; empty or absent: an admin without login", 1},
    {"password", cfga_password, 0, 0, 0, NULL, NULL, "its password (a secret)", 1},
    {"password_file", cfga_password_file, CFG(password_file), 0, 0, NULL, NULL,
     "a file holding the password instead", 1},
    {"namespace", cfgw_string, CFG(namespace_id), 0, 0, NULL, NULL, "the admin's namespace", 1},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL,
     "the groups to sync (PLUGIN, SELECTOR, RULE, APP_AUTH and META_DATA by default)", 1},
    {"connect_timeout", cfgw_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a connection may take (10s)", 1},
    {"read_timeout", cfgw_duration, CFG(read_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a reply may be silent (90s; more than hold)", 1},
    /* a trickled reply must not hold a poller for days: at least 1s, at most a day */
    {"transfer_timeout", cfgw_duration, CFG(transfer_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest a fetch or a login may take whole (5m)", 1},
    {"hold", cfgw_duration, ADMIN(hold_ms), 1, INT64_MAX, NULL, "60s",
     "how long the admin holds a poll", 0},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule", 1},
    {"max_response", cfgw_size, CFG(max_response), 1, INT64_MAX, NULL, NULL,
     "the largest reply taken (64MiB)", 1},
    {"tls", cfgw_submap, 0, 0, 0, cfg_tls_keys, NULL, "TLS files for https:// and wss://", 1},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

/* After the walk, when admin: is the source section: servers present, read_timeout above
 * the hold, a password when there is a username, cert and key together. */
static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	const struct admin_config *a = settings;
	const struct cfg *c = ld->cfg;
	if (a->n_servers == 0)
		return cfgw_err(
		    ld, node, "admin.servers",
		    "required: a list of admin URLs such as [ \"http://127.0.0.1:9095\" ]");
	if (c->read_timeout_ms <= a->hold_ms) {
		char hold[32], rt[32];
		const struct ynode *read_timeout = ytree_get(node, "read_timeout");
		const struct ynode *hold_node = ytree_get(node, "hold");
		cfgw_fmt_duration(hold, sizeof hold, a->hold_ms);
		cfgw_fmt_duration(rt, sizeof rt, c->read_timeout_ms);
		if (read_timeout)
			return cfgw_err(ld, read_timeout, "admin.read_timeout",
			                "must be more than %s (the admin holds a poll %s)", hold,
			                hold);
		return cfgw_err(
		    ld, hold_node ? hold_node : ld->root, "admin.hold",
		    "must be less than admin.read_timeout (%s), or every held poll times "
		    "out",
		    rt);
	}
	if (c->username && !c->password)
		return cfgw_err(
		    ld, ld->username, "admin.username",
		    "is set, so admin.password or admin.password_file is required (leave "
		    "username out or empty for an admin without login)");
	if (!!c->tls.cert_file != !!c->tls.key_file) {
		const struct ynode *at = c->tls.cert_file ? ld->cert_file : ld->key_file;
		return cfgw_err(ld, at,
		                c->tls.cert_file ? "admin.tls.cert_file" : "admin.tls.key_file",
		                "cert_file and key_file go together: set both or neither");
	}
	return 0;
}

static void free_settings(void *settings)
{
	struct admin_config *a = settings;
	for (size_t i = 0; i < a->n_servers; i++)
		free(a->servers[i]);
	free(a->servers);
}

const struct cfg_section admin_config_section = {
    .name = "admin",
    .what = "HTTP long-polling or WebSocket",
    .keys = admin_keys,
    .size = sizeof(struct admin_config),
    .check = check,
    .free = free_settings,
};

const struct admin_config *admin_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &admin_config_section);
}

void admin_summary(const struct cfg *cfg, char *buf, size_t cap)
{
	const struct admin_config *a = admin_config(cfg);
	snprintf(buf, cap, "%zu admin server(s)", a ? a->n_servers : 0);
}

size_t admin_conns(const struct cfg *cfg)
{
	const struct admin_config *a = admin_config(cfg);
	return a ? a->n_servers : 0;
}

const char *admin_conn_name(const struct cfg *cfg, size_t i)
{
	const struct admin_config *a = admin_config(cfg);
	return a && i < a->n_servers ? a->servers[i] : "";
}
