/*
 * consul: (see config.h). A server is scheme://host:port, checked by kv_config_add_url()
 * (kv/config.h) for what libcurl would otherwise turn into an obscure failure; the token is
 * a secret like the admin's password (from the file, a ${VAR} or token_file, never quoted in
 * a message).
 */
#include "source/consul/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_admin.h"

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                      size_t len, void *base)
{
	static const struct kv_url_words words = {
	    .example = "http://127.0.0.1:8500",
	    .host = "127.0.0.1:8500",
	    .instead = "consul.token or consul.token_file",
	};
	return kv_config_add_url(ld, base, at, path, s, len, &words);
}

static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "Consul HTTP API URLs", add_server, base);
}

/* consul.root: a Consul key prefix, "ns/shenyu"; kept as "/ns/shenyu" (config.h). */
static int load_root(struct loader *ld, const struct key *k, const struct ynode *v,
                     const char *path, void *base)
{
	const char *r = cfgw_scalar(ld, v, path, "a key prefix such as ns/shenyu");
	if (!r)
		return -1;
	if (r[0] == '/')
		return cfgw_err(ld, v, path,
		                "\"%s\" begins with '/': Consul keys never do (ShenYu's admin "
		                "writes /{namespace}/shenyu as the key {namespace}/shenyu); write "
		                "\"%s\"",
		                r, r + strspn(r, "/"));
	size_t n = strlen(r);
	while (n > 0 && r[n - 1] == '/')
		n--;
	if (n == 0)
		return cfgw_err(ld, v, path,
		                "must not be empty: the admin writes under {namespace}/shenyu "
		                "(2.7) or shenyu (2.6)");
	if (strstr(r, "//"))
		return cfgw_err(ld, v, path, "\"%s\" has an empty segment (\"//\")", r);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)r[i] < 0x20 || r[i] == '?' || r[i] == '#' || r[i] == 0x7f)
			return cfgw_err(ld, v, path, "\"%s\" holds a character a key never has", r);
	char **field = cfgw_field_str(base, k);
	free(*field);
	if (!(*field = malloc(n + 2)))
		return cfgw_err(ld, v, path, "out of memory");
	(*field)[0] = '/';
	memcpy(*field + 1, r, n);
	(*field)[n + 1] = '\0';
	return 0;
}

static int load_token(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base)
{
	(void)k;
	struct consul_config *c = base;
	return kv_config_secret(ld, v, path, &c->token, &c->token_node, c->token_file_node);
}

static int load_token_file(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	struct consul_config *c = base;
	return kv_config_secret_file(ld, k, v, path, base, &c->token, &c->token_file_node,
	                             c->token_node);
}

#define CON(f) offsetof(struct consul_config, f)
#define CFG(f) offsetof(struct cfg, f)
/* in_cfg: the keys it shares with admin: go to the same fields of struct cfg */
static const struct key consul_keys[] = {
    {"servers", load_servers, 0, 0, 0, NULL, NULL,
     "Consul agents' HTTP API URLs, http(s)://host:port, tried in turn (required)", 0},
    {"token", load_token, 0, 0, 0, NULL, NULL,
     "the ACL token sent as X-Consul-Token (a secret); none by default", 0},
    {"token_file", load_token_file, CON(token_file), 0, 0, NULL, NULL,
     "a file holding the token instead (not with token)", 0},
    {"tls", cfgw_submap, 0, 0, 0, cfg_tls_keys, NULL, "TLS files, as admin.tls", 1},
    {"namespace", cfgw_string, CFG(namespace_id), 0, 0, NULL, NULL,
     "the admin's namespace, for the default root", 1},
    {"root", load_root, CON(kv.root), 0, 0, NULL, NULL,
     "the key prefix the admin writes under, without a leading '/': {namespace}/shenyu "
     "(2.7) or shenyu (2.6.1)",
     0},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL, "the groups to sync, as under admin:", 1},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule, as admin.retry", 1},
    /* Consul holds a blocking query at most 10 minutes (agent/consul/rpc.go) */
    {"wait", cfgw_duration, CON(wait_ms), 1000, 600000, NULL, "5m",
     "how long Consul may hold a blocking query (at most 10m; Consul adds up to wait/16)", 0},
    {"pace_max", cfgw_duration, CON(pace_max_ms), 100, 600000, NULL, "15s",
     "the longest pause between blocking queries that Consul answers at once without a "
     "change (the pause doubles from 250ms up to this)",
     0},
    /* changes wait this long for the rest of an admin's burst of writes */
    {"settle", cfgw_duration, CON(kv.settle_ms), 1, 1000, NULL, "100ms",
     "how long changes wait for the rest of an admin's burst of writes (at most 1s)", 0},
    {"resync_interval", cfgw_resync_interval, CON(kv.resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full read this often (0 off, else at least 1s)", 0},
    {"connect_timeout", cfgw_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a connection may take (10s)", 1},
    {"max_response", cfgw_size, CFG(max_response), 1, INT64_MAX, NULL, NULL,
     "the largest answer taken (256MiB here, not admin:'s 64MiB): a recursive read answers "
     "with every key below the root, about 0.9 KB per rule",
     1},
    {"transfer_timeout", cfgw_duration, CFG(transfer_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest a full read may take whole (5m)", 1},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

static const struct kv_config_words words = {
    .section = "consul",
    .servers = "servers",
    .example = "a list of Consul URLs such as [ \"http://127.0.0.1:8500\" ]",
    .system = "Consul",
};

/* A recursive answer holds every key below the root, about 0.9 KB per rule, and Consul
 * cannot page it: admin:'s 64 MiB would stop a store of about 70,000 rules for ever. */
#define CONSUL_MAX_RESPONSE ((int64_t)256 << 20)

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	if (!node || !ytree_get(node, "max_response"))
		ld->cfg->max_response = CONSUL_MAX_RESPONSE;
	return kv_config_check(ld, node, settings, &words);
}

static void free_settings(void *settings)
{
	struct consul_config *c = settings;
	kv_config_wipe(c->token);
	free(c->token_file);
	kv_config_free(&c->kv);
}

static const char *secret(const void *settings)
{
	return ((const struct consul_config *)settings)->token;
}

const struct cfg_section consul_config_section = {
    .name = "consul",
    .keys = consul_keys,
    .size = sizeof(struct consul_config),
    .check = check,
    .free = free_settings,
    .secret = secret,
};

const struct consul_config *consul_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &consul_config_section);
}
