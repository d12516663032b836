/*
 * apollo: (see config.h). A config service URL may carry a path (a homepageUrl behind a
 * proxy does), since the signature covers the path as sent; credentials, a query or a
 * fragment are refused here rather than turned into an obscure failure. The secret is
 * handled like every other secret: never quoted in a message, masked in logs (`secret`
 * below), read from a file or the environment (${VAR}, expanded by the loader).
 */
#include "source/apollo/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_admin.h"
#include "config/config_walk.h"
#include "model/groups.h"
#include "source/kv/config.h"

/* How a config service's or the meta server's URL is checked (kv_config_url). */
static const struct kv_url_words url_words = {
    .example = "http://127.0.0.1:8080",
    .host = "127.0.0.1:8080",
    .instead = "apollo.secret for the access key",
    .paths = 1, /* a homepageUrl behind a proxy has one; the signature covers it */
};

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                      size_t len, void *base)
{
	struct apollo_config *a = base;
	size_t n;
	if (kv_config_url(ld, at, path, s, len, &url_words, &n) < 0)
		return -1;
	return kv_config_add_entry(ld, &a->servers, &a->n_servers, at, path, s, n);
}

static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "config service URLs", add_server, base);
}

static int load_meta(struct loader *ld, const struct key *k, const struct ynode *v,
                     const char *path, void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	char **meta = cfgw_field_str(base, k);
	size_t n;
	if (kv_config_url(ld, v, path, *meta, strlen(*meta), &url_words, &n) < 0)
		return -1;
	(*meta)[n] = '\0';
	return 0;
}

/* apollo.secret: empty means none (an app without an access key). */
static int load_secret(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	(void)k;
	struct apollo_config *a = base;
	return kv_config_secret(ld, v, path, &a->secret, &a->secret_node, a->secret_file_node);
}

static int load_secret_file(struct loader *ld, const struct key *k, const struct ynode *v,
                            const char *path, void *base)
{
	struct apollo_config *a = base;
	return kv_config_secret_file(ld, k, v, path, base, &a->secret, &a->secret_file_node,
	                             a->secret_node);
}

/* apollo.layout: the words nacos.layout uses, for the same three layouts. */
static int load_layout(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	struct apollo_config *a = base;
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	if (strcmp(a->layout_name, "namespaced") == 0 || strcmp(a->layout_name, "plain") == 0)
		a->whole = 0;
	else if (strcmp(a->layout_name, "legacy") == 0)
		a->whole = 1;
	else
		return cfgw_err(ld, v, path,
		                "expected namespaced ({namespace}.plugin.list, ShenYu 2.7), plain "
		                "(plugin.list, 2.6.1+) or legacy (shenyu.plugin.json, 2.6.0), got "
		                "\"%s\"",
		                a->layout_name);
	return 0;
}

/* apollo.shenyu_namespace: ShenYu's namespace id, struct cfg's (as admin.namespace). */
static int load_shenyu_ns(struct loader *ld, const struct key *k, const struct ynode *v,
                          const char *path, void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	const char *ns = *cfgw_field_str(base, k);
	if (strchr(ns, '.'))
		return cfgw_err(ld, v, path,
		                "\"%s\" contains a '.', which joins the parts of ShenYu's keys",
		                ns);
	return 0;
}

#define AP(f)  offsetof(struct apollo_config, f)
#define CFG(f) offsetof(struct cfg, f)
static const struct key apollo_keys[] = {
    {"servers", load_servers, 0, 0, 0, NULL, NULL,
     "the config services' URLs, http(s)://host:port (required unless meta is set)", 0},
    {"meta", load_meta, AP(meta), 0, 0, NULL, NULL,
     "a meta server URL: the config services are asked of it (GET /services/config)", 0},
    {"app_id", cfgw_string, AP(app_id), 0, 0, NULL, NULL,
     "the Apollo app ShenYu's admin writes to (shenyu.sync.apollo.appId; required)", 0},
    {"cluster", cfgw_string, AP(cluster), 0, 0, NULL, "default", "the Apollo cluster", 0},
    {"namespace", cfgw_string, AP(namespace_name), 0, 0, NULL, "application",
     "the Apollo namespace holding ShenYu's keys", 0},
    {"secret", load_secret, 0, 0, 0, NULL, NULL,
     "the app's access key secret (a secret); none by default", 0},
    {"secret_file", load_secret_file, AP(secret_file), 0, 0, NULL, NULL,
     "a file holding the secret instead (not with secret)", 0},
    {"layout", load_layout, AP(layout_name), 0, 0, NULL, "namespaced",
     "namespaced ({namespace}.plugin.list, ShenYu 2.7), plain (plugin.list, 2.6.1+) or legacy "
     "(shenyu.plugin.json, 2.6.0), as nacos.layout",
     0},
    {"shenyu_namespace", load_shenyu_ns, CFG(namespace_id), 0, 0, NULL, NULL,
     "the ShenYu namespace: the prefix of the namespaced layout's keys (apollo.namespace is "
     "Apollo's)",
     1},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL, "the groups to sync, as under admin:", 1},
    {"tls", cfgw_submap, 0, 0, 0, cfg_tls_keys, NULL, "TLS files, as admin.tls", 1},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule, as admin.retry", 1},
    {"settle", cfgw_duration, AP(settle_ms), 1, 1000, NULL, "100ms",
     "how long changes wait for the rest of an admin's burst of releases (at most 1s)", 0},
    {"resync_interval", cfgw_resync_interval, AP(resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full read this often (0 off, else at least 1s)", 0},
    {"connect_timeout", cfgw_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a connection may take (10s)", 1},
    {"read_timeout", cfgw_duration, CFG(read_timeout_ms), 1000, INT64_MAX, NULL, NULL,
     "the longest a notification request may be held (90s, as Apollo's Java client)", 1},
    {"transfer_timeout", cfgw_duration, CFG(transfer_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest one configuration read may take whole (5m)", 1},
    {"max_response", cfgw_size, CFG(max_response), 1, 0, NULL, NULL,
     "a reply larger than this is refused, the last good data kept (64MiB)", 1},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

/* "apollo://h1:8080,h2:8080/appId/cluster/namespace" (or the meta server's host). */
static int make_label(struct loader *ld, const struct ynode *at, struct apollo_config *a)
{
	size_t cap = 64 + strlen(a->app_id) + strlen(a->cluster) + strlen(a->namespace_name) +
	             (a->meta ? strlen(a->meta) : 0);
	for (size_t i = 0; i < a->n_servers; i++)
		cap += strlen(a->servers[i]) + 1;
	char *label = malloc(cap);
	if (!label)
		return cfgw_err(ld, at, NULL, "out of memory");
	size_t pos = (size_t)snprintf(label, cap, "apollo://");
	if (a->n_servers == 0)
		pos +=
		    (size_t)snprintf(label + pos, cap - pos, "meta=%s", strstr(a->meta, "://") + 3);
	for (size_t i = 0; i < a->n_servers; i++)
		pos += (size_t)snprintf(label + pos, cap - pos, "%s%s", i ? "," : "",
		                        strstr(a->servers[i], "://") + 3);
	snprintf(label + pos, cap - pos, "/%s/%s/%s", a->app_id, a->cluster, a->namespace_name);
	free(a->label);
	a->label = label;
	return 0;
}

static int check(struct loader *ld, const struct ynode *sec, void *settings)
{
	struct apollo_config *a = settings;
	struct cfg *c = ld->cfg;
	if (a->n_servers == 0 && !a->meta)
		return cfgw_err(ld, sec, "apollo.servers",
		                "required (or apollo.meta): a list of config service URLs such as "
		                "[ \"http://127.0.0.1:8080\" ]");
	if (!a->app_id)
		return cfgw_err(ld, sec, "apollo.app_id",
		                "required: the Apollo app ShenYu's admin writes to "
		                "(shenyu.sync.apollo.appId)");
	if (!!c->tls.cert_file != !!c->tls.key_file)
		return cfgw_err(ld, c->tls.cert_file ? ld->cert_file : ld->key_file,
		                c->tls.cert_file ? "apollo.tls.cert_file" : "apollo.tls.key_file",
		                "cert_file and key_file go together: set both or neither");
	for (size_t i = 0; i < c->n_groups; i++)
		if (c->groups[i] == GW_GROUP_AI_PROXY_API_KEY)
			return cfgw_err(ld, ld->groups, "apollo.groups",
			                "AI_PROXY_API_KEY is never published to Apollo by ShenYu's "
			                "admin (it syncs AI proxy API keys over HTTP long-polling "
			                "only): remove it, or sync that group from admin:");
	/* the prefix: "{namespace}." for namespaced, none for plain and legacy */
	int namespaced = strcmp(a->layout_name, "namespaced") == 0;
	const char *ns = namespaced ? c->namespace_id : "";
	size_t n = strlen(ns) + 2;
	free(a->prefix);
	if (!(a->prefix = malloc(n)))
		return cfgw_err(ld, sec, NULL, "out of memory");
	snprintf(a->prefix, n, "%s%s", ns, namespaced ? "." : "");
	return make_label(ld, sec, a);
}

static void free_settings(void *settings)
{
	struct apollo_config *a = settings;
	for (size_t i = 0; i < a->n_servers; i++)
		free(a->servers[i]);
	free(a->servers);
	kv_config_wipe(a->secret);
	free(a->secret_file);
	free(a->meta);
	free(a->app_id);
	free(a->cluster);
	free(a->namespace_name);
	free(a->layout_name);
	free(a->prefix);
	free(a->label);
}

static const char *secret(const void *settings)
{
	return ((const struct apollo_config *)settings)->secret;
}

const struct cfg_section apollo_config_section = {
    .name = "apollo",
    .keys = apollo_keys,
    .size = sizeof(struct apollo_config),
    .check = check,
    .free = free_settings,
    .secret = secret,
};

const struct apollo_config *apollo_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &apollo_config_section);
}
