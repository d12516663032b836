/*
 * nacos: (see config.h). The keys it shares with the path stores go through kv/config.h;
 * what is its own is checked here: the context path, the layout's name, and the prefix the
 * node keys carry, derived from the ShenYu namespace the shared `namespace` key holds.
 */
#include "source/nacos/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_admin.h"

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                      size_t len, void *base)
{
	static const struct kv_url_words words = {
	    .example = "http://127.0.0.1:8848",
	    .instead = "nacos.username and nacos.password",
	};
	return kv_config_add_url(ld, base, at, path, s, len, &words);
}

/* nacos.servers: http:// or https:// base URLs. */
static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "Nacos server URLs", add_server, base);
}

/* context_path: "/nacos"; a trailing '/' dropped, "/" alone is the root (""). */
static int load_context_path(struct loader *ld, const struct key *k, const struct ynode *v,
                             const char *path, void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	char *r = *cfgw_field_str(base, k);
	if (r[0] != '/' || strpbrk(r, "?#% "))
		return cfgw_err(ld, v, path,
		                "expected a URL path such as /nacos (without a query), got \"%s\"",
		                r);
	size_t n = strlen(r);
	while (n > 0 && r[n - 1] == '/')
		r[--n] = '\0';
	return 0;
}

#define NACOS(f) offsetof(struct nacos_config, f)
#define KV(f)    offsetof(struct nacos_config, kv.f)
#define CFG(f)   offsetof(struct cfg, f)
static const struct key nacos_keys[] = {
    {"servers", load_servers, 0, 0, 0, NULL, NULL,
     "the Nacos servers, http(s)://host:port (required)", 0},
    {"tenant", cfgw_optional_string, NACOS(tenant), 0, 0, NULL, NULL,
     "the Nacos namespace id the admin publishes to (shenyu.sync.nacos.namespace); absent: "
     "public",
     0},
    {"group", cfgw_string, NACOS(group), 0, 0, NULL, "DEFAULT_GROUP",
     "the Nacos group of ShenYu's keys", 0},
    {"context_path", load_context_path, NACOS(context_path), 0, 0, NULL, "/nacos",
     "the servers' context path", 0},
    {"layout", cfgw_string, NACOS(layout_name), 0, 0, NULL, "namespaced",
     "namespaced ({namespace}.plugin.list, ShenYu 2.7), plain (plugin.list, 2.6.1+) or legacy "
     "(shenyu.plugin.json, 2.4 to 2.6.0)",
     0},
    {"username", cfga_username, CFG(username), 0, 0, NULL, NULL,
     "the Nacos user; empty or absent: no login", 1},
    {"password", cfga_password, 0, 0, 0, NULL, NULL, "its password (a secret)", 1},
    {"password_file", cfga_password_file, CFG(password_file), 0, 0, NULL, NULL,
     "a file holding the password instead", 1},
    {"tls", cfgw_submap, 0, 0, 0, cfg_tls_keys, NULL, "TLS files, as admin.tls", 1},
    {"namespace", cfgw_string, CFG(namespace_id), 0, 0, NULL, NULL,
     "the ShenYu namespace: the prefix of the namespaced layout's keys", 1},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL, "the groups to sync, as under admin:", 1},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule, as admin.retry", 1},
    {"settle", cfgw_duration, KV(settle_ms), 1, 1000, NULL, "100ms",
     "how long changes wait for the rest of an admin's burst of writes (at most 1s)", 0},
    {"resync_interval", cfgw_resync_interval, KV(resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full read this often (0 off, else at least 1s)", 0},
    {"connect_timeout", cfgw_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a connection may take (10s)", 1},
    {"transfer_timeout", cfgw_duration, CFG(transfer_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest one read may take whole (5m)", 1},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

static const struct kv_config_words words = {
    .section = "nacos",
    .servers = "servers",
    .example = "a list of Nacos URLs such as [ \"http://127.0.0.1:8848\" ]",
    .system = "Nacos",
};

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	struct nacos_config *nc = settings;
	static const char *const names[] = {"namespaced", "plain", "legacy"};
	nc->layout = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(nc->layout_name, names[i]) == 0)
			nc->layout = i;
	if (nc->layout < 0)
		return cfgw_err(ld, node, "nacos.layout",
		                "expected namespaced, plain or legacy, got \"%.100s\"",
		                nc->layout_name);
	const char *ns = ld->cfg->namespace_id;
	size_t n = strlen(ns) + 2;
	if (!(nc->prefix = malloc(n)))
		return cfgw_err(ld, node, NULL, "out of memory");
	snprintf(nc->prefix, n, "%s%s", nc->layout == NACOS_LAYOUT_NAMESPACED ? ns : "",
	         nc->layout == NACOS_LAYOUT_NAMESPACED ? "." : "");
	/* the label's path: /{tenant}/{group} ("nacos://h:8848/public/DEFAULT_GROUP") */
	const char *t = nc->tenant ? nc->tenant : "public";
	n = strlen(t) + strlen(nc->group) + 3;
	if (!(nc->kv.root = malloc(n)))
		return cfgw_err(ld, node, NULL, "out of memory");
	snprintf(nc->kv.root, n, "/%s/%s", t, nc->group);
	return kv_config_check(ld, node, &nc->kv, &words);
}

static void free_settings(void *settings)
{
	struct nacos_config *nc = settings;
	kv_config_free(&nc->kv);
	free(nc->tenant);
	free(nc->group);
	free(nc->context_path);
	free(nc->layout_name);
	free(nc->prefix);
}

const struct cfg_section nacos_config_section = {
    .name = "nacos",
    .keys = nacos_keys,
    .size = sizeof(struct nacos_config),
    .check = check,
    .free = free_settings,
};

const struct nacos_config *nacos_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &nacos_config_section);
}
