/*
 * polaris: (see config.h). A server is scheme://host:port, checked here for what libcurl
 * would otherwise turn into an obscure failure (credentials or a path in the URL); the
 * token is a secret like the password (never quoted in a message, masked in the log).
 */
#include "source/polaris/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_admin.h"
#include "model/groups.h"

/* PolarisPathConstants at ShenYu v2.6.0, and NacosPathConstants.DISCOVERY_DATA_ID, which
 * its PolarisDataChangedListener passes for discovery. */
const char *const polaris_whole_doc_names[GW_GROUP_COUNT] = {
    [GW_GROUP_PLUGIN] = "shenyu/plugin.json",
    [GW_GROUP_SELECTOR] = "shenyu/selector.json",
    [GW_GROUP_RULE] = "shenyu/rule.json",
    [GW_GROUP_APP_AUTH] = "shenyu/auth.json",
    [GW_GROUP_META_DATA] = "shenyu/meta.json",
    [GW_GROUP_PROXY_SELECTOR] = "shenyu/proxy/selector.json",
    [GW_GROUP_DISCOVER_UPSTREAM] = "shenyu.discovery.data.json",
};

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                      size_t len, void *base)
{
	/* credentials in the URL refused first, whatever the scheme, naming Polaris's token */
	static const struct kv_url_words words = {
	    .example = "http://127.0.0.1:8090, Polaris's HTTP port",
	    .instead = "polaris.token",
	};
	return kv_config_add_url(ld, base, at, path, s, len, &words);
}

static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "Polaris server URLs", add_server, base);
}

/* polaris.token: empty means none (a Polaris without auth). */
static int load_token(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base)
{
	(void)k;
	struct polaris_config *p = base;
	return kv_config_secret(ld, v, path, &p->token, &p->token_node, p->token_file_node);
}

static int load_token_file(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	struct polaris_config *p = base;
	return kv_config_secret_file(ld, k, v, path, base, &p->token, &p->token_file_node,
	                             p->token_node);
}

/* the names nacos.layout uses too, for the same three layouts */
static int load_layout(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	const char *s = *cfgw_field_str(base, k);
	if (strcmp(s, "namespaced") != 0 && strcmp(s, "plain") != 0 && strcmp(s, "legacy") != 0)
		return cfgw_err(
		    ld, v, path,
		    "expected namespaced ({namespace}.plugin.list ..., ShenYu 2.7), plain "
		    "(plugin.list ..., 2.6.1+) or legacy (shenyu/plugin.json ..., 2.6.0), "
		    "got \"%.100s\"",
		    s);
	return 0;
}

/* a Polaris name: what its console accepts for a namespace or a group */
static int load_name(struct loader *ld, const struct key *k, const struct ynode *v,
                     const char *path, void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	if (!**cfgw_field_str(base, k))
		return cfgw_err(ld, v, path, "must not be empty");
	return 0;
}

#define PL(f)  offsetof(struct polaris_config, f)
#define CFG(f) offsetof(struct cfg, f)
static const struct key polaris_keys[] = {
    {"servers", load_servers, 0, 0, 0, NULL, NULL,
     "Polaris's HTTP API, http(s)://host:8090 (required; tried in order)", 0},
    {"namespace", load_name, PL(namespace), 0, 0, NULL, "default",
     "the Polaris namespace ShenYu's admin writes to (shenyu.sync.polaris.namespace)", 0},
    {"file_group", load_name, PL(file_group), 0, 0, NULL, "shenyu",
     "the Polaris file group ShenYu's admin writes to (shenyu.sync.polaris.fileGroup)", 0},
    {"token", load_token, 0, 0, 0, NULL, NULL,
     "X-Polaris-Token when Polaris's auth is on (a secret); none by default", 0},
    {"token_file", load_token_file, PL(token_file), 0, 0, NULL, NULL,
     "a file holding the token instead (not with token)", 0},
    {"layout", load_layout, PL(layout_name), 0, 0, NULL, "namespaced",
     "the admin's file names: namespaced ({namespace}.plugin.list, ShenYu 2.7), plain "
     "(plugin.list, 2.6.1+) or legacy (shenyu/plugin.json, 2.6.0)",
     0},
    {"shenyu_namespace", cfgw_string, CFG(namespace_id), 0, 0, NULL, NULL,
     "the ShenYu namespace id, the namespaced layout's key prefix", 1},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL, "the groups to sync, as under admin:", 1},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule, as admin.retry", 1},
    {"tls", cfgw_submap, 0, 0, 0, cfg_tls_keys, NULL, "TLS files, as admin.tls", 1},
    {"settle", cfgw_duration, PL(kv.settle_ms), 1, 1000, NULL, "100ms",
     "how long changes wait for the rest of an admin's burst of writes (at most 1s)", 0},
    {"resync_interval", cfgw_resync_interval, PL(kv.resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full read this often (0 off, else at least 1s)", 0},
    {"connect_timeout", cfgw_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a connection may take (10s)", 1},
    {"read_timeout", cfgw_duration, CFG(read_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest a watch may take whole, above Polaris's 30s hold (90s)", 1},
    {"transfer_timeout", cfgw_duration, CFG(transfer_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest one read may take whole (5m)", 1},
    {"max_response", cfgw_size, CFG(max_response), 1, INT64_MAX, NULL, NULL,
     "the largest answer accepted, a file's or a watch's (64MiB)", 1},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

/* "polaris://h1:8090,h2:8090/default/shenyu", the name logs and /status show. */
static int make_label(struct loader *ld, const struct ynode *at, struct polaris_config *p)
{
	size_t cap = sizeof "polaris:///" + strlen(p->namespace) + strlen(p->file_group) + 1;
	for (size_t i = 0; i < p->kv.n_servers; i++)
		cap += strlen(p->kv.servers[i]) + 1;
	char *label = malloc(cap);
	if (!label)
		return cfgw_err(ld, at, NULL, "out of memory");
	size_t pos = (size_t)snprintf(label, cap, "polaris://");
	for (size_t i = 0; i < p->kv.n_servers; i++) {
		const char *s = p->kv.servers[i];
		const char *sep = strstr(s, "://");
		pos += (size_t)snprintf(label + pos, cap - pos, "%s%s", i ? "," : "",
		                        sep ? sep + 3 : s);
	}
	snprintf(label + pos, cap - pos, "/%s/%s", p->namespace, p->file_group);
	free(p->kv.label);
	p->kv.label = label;
	return 0;
}

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	struct polaris_config *p = settings;
	struct cfg *c = ld->cfg;
	if (p->kv.n_servers == 0)
		return cfgw_err(ld, node, "polaris.servers",
		                "required: a list of Polaris HTTP URLs such as "
		                "[ \"http://127.0.0.1:8090\" ]");
	if (!!c->tls.cert_file != !!c->tls.key_file)
		return cfgw_err(ld, c->tls.cert_file ? ld->cert_file : ld->key_file,
		                c->tls.cert_file ? "polaris.tls.cert_file" : "polaris.tls.key_file",
		                "cert_file and key_file go together: set both or neither");
	for (size_t i = 0; i < c->n_groups; i++)
		if (c->groups[i] == GW_GROUP_AI_PROXY_API_KEY)
			return cfgw_err(
			    ld, ld->groups, "polaris.groups",
			    "AI_PROXY_API_KEY is never published to Polaris by ShenYu's "
			    "admin (it syncs AI proxy API keys over HTTP long-polling "
			    "only): remove it, or sync that group from admin:");
	const struct ynode *read_timeout = ytree_get(node, "read_timeout");
	if (c->read_timeout_ms <= 30000)
		return cfgw_err(ld, read_timeout ? read_timeout : node, "polaris.read_timeout",
		                "must be above 30s: Polaris holds a watch for 30s");
	p->layout = strcmp(p->layout_name, "legacy") == 0 ? NODE_LAYOUT_WHOLE : NODE_LAYOUT_NODES;
	const char *ns = strcmp(p->layout_name, "namespaced") == 0 ? c->namespace_id : "";
	size_t n = strlen(ns) + 2;
	free(p->prefix);
	if (!(p->prefix = malloc(n)))
		return cfgw_err(ld, node, NULL, "out of memory");
	snprintf(p->prefix, n, "%s%s", ns, *ns ? "." : "");
	return make_label(ld, node, p);
}

static void free_settings(void *settings)
{
	struct polaris_config *p = settings;
	kv_config_free(&p->kv);
	kv_config_wipe(p->token);
	free(p->token_file);
	free(p->namespace);
	free(p->file_group);
	free(p->layout_name);
	free(p->prefix);
}

static const char *secret(const void *settings)
{
	return ((const struct polaris_config *)settings)->token;
}

const struct cfg_section polaris_config_section = {
    .name = "polaris",
    .keys = polaris_keys,
    .size = sizeof(struct polaris_config),
    .check = check,
    .free = free_settings,
    .secret = secret,
};

const struct polaris_config *polaris_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &polaris_config_section);
}
