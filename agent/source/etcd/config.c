/*
 * etcd: (see config.h). An endpoint is scheme://host:port, checked by kv_config_add_url()
 * (kv/config.h) for what libcurl would otherwise turn into an obscure failure.
 */
#include "source/etcd/config.h"

#include <string.h>
#include <strings.h>

#include "config/config_admin.h"

static int add_etcd_endpoint(struct loader *ld, const struct ynode *at, const char *path,
                             const char *s, size_t len, void *base)
{
	static const struct kv_url_words words = {
	    .example = "http://127.0.0.1:2379",
	    .instead = "etcd.username and etcd.password",
	};
	return kv_config_add_url(ld, base, at, path, s, len, &words);
}

/* etcd.endpoints: http:// or https:// base URLs. */
static int load_endpoints(struct loader *ld, const struct key *k, const struct ynode *v,
                          const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "etcd endpoint URLs", add_etcd_endpoint, base);
}

#define ETCD(f) offsetof(struct kv_config, f)
#define CFG(f)  offsetof(struct cfg, f)
/* in_cfg: the keys it shares with admin: go to the same fields of struct cfg */
static const struct key etcd_keys[] = {
    {"endpoints", load_endpoints, 0, 0, 0, NULL, NULL,
     "the cluster's gRPC gateway URLs, http(s)://host:port (required)", 0},
    {"username", cfga_username, CFG(username), 0, 0, NULL, NULL,
     "the etcd user; empty or absent: no authentication", 1},
    {"password", cfga_password, 0, 0, 0, NULL, NULL, "its password (a secret)", 1},
    {"password_file", cfga_password_file, CFG(password_file), 0, 0, NULL, NULL,
     "a file holding the password instead", 1},
    {"tls", cfgw_submap, 0, 0, 0, cfg_tls_keys, NULL, "TLS files, as admin.tls", 1},
    {"namespace", cfgw_string, CFG(namespace_id), 0, 0, NULL, NULL,
     "the admin's namespace, for the default root", 1},
    {"root", kv_config_root, ETCD(root), 0, 0, NULL, NULL,
     "the key prefix the admin writes under: /{namespace}/shenyu (2.7) or /shenyu", 0},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL, "the groups to sync, as under admin:", 1},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule, as admin.retry", 1},
    /* changes wait this long for the rest of an admin's burst of writes */
    {"settle", cfgw_duration, ETCD(settle_ms), 1, 1000, NULL, "100ms",
     "how long changes wait for the rest of an admin's burst of writes (at most 1s)", 0},
    {"resync_interval", cfgw_resync_interval, ETCD(resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full read this often (0 off, else at least 1s)", 0},
    {"connect_timeout", cfgw_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL, NULL,
     "the longest a connection may take (10s)", 1},
    {"transfer_timeout", cfgw_duration, CFG(transfer_timeout_ms), 1000, 86400000, NULL, NULL,
     "the longest one call may take whole (5m)", 1},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

static const struct kv_config_words words = {
    .section = "etcd",
    .servers = "endpoints",
    .example = "a list of etcd URLs such as [ \"http://127.0.0.1:2379\" ]",
    .system = "etcd",
};

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	return kv_config_check(ld, node, settings, &words);
}

static void free_settings(void *settings)
{
	kv_config_free(settings);
}

const struct cfg_section etcd_config_section = {
    .name = "etcd",
    .keys = etcd_keys,
    .size = sizeof(struct kv_config),
    .check = check,
    .free = free_settings,
};

const struct kv_config *etcd_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &etcd_config_section);
}
