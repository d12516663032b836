/*
 * zookeeper: (see config.h). A server entry is host:port, checked here for what the client
 * library would otherwise refuse late and obscurely (a chroot in the address, no port).
 */
#include "source/zookeeper/config.h"

#include <string.h>

#include "config/config_admin.h"

#define SHOWN(len) (int)((len) > 200 ? 200 : (len))

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                      size_t len, void *base)
{
	if (memchr(s, '/', len))
		return cfgw_err(ld, at, path,
		                "'%.*s' must be host:port without a path: a chroot goes into "
		                "zookeeper.root",
		                SHOWN(len), s);
	if (!kv_config_host_port(s, len))
		return cfgw_err(ld, at, path, "'%.*s' is not host:port (such as 127.0.0.1:2181)",
		                SHOWN(len), s);
	return kv_config_add_server(ld, base, at, path, s, len);
}

/* zookeeper.servers: "host:port" entries, a list or one comma-separated string. */
static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k;
	return cfgw_each_word(ld, v, path, "ZooKeeper servers", add_server, base);
}

#define ZK(f) offsetof(struct zk_config, f)
/* in_cfg: the keys it shares with admin: go to the same fields of struct cfg */
static const struct key zookeeper_keys[] = {
    {"servers", load_servers, 0, 0, 0, NULL, NULL,
     "the ensemble: host:port entries, a list or one comma-separated string (required)", 0},
    /* the ZooKeeper server bounds it again, to 2..20 ticks */
    {"session_timeout", cfgw_duration, ZK(session_timeout_ms), 1000, INT64_MAX, NULL, "30s",
     "the session timeout asked for (the server bounds it to 2..20 ticks)", 0},
    {"namespace", cfgw_string, offsetof(struct cfg, namespace_id), 0, 0, NULL, NULL,
     "the admin's namespace, for the default root", 1},
    {"root", kv_config_root, ZK(kv.root), 0, 0, NULL, NULL,
     "where the admin writes: /{namespace}/shenyu (2.7) or /shenyu (2.5, 2.6)", 0},
    {"groups", cfga_groups, 0, 0, 0, NULL, NULL, "the groups to sync, as under admin:", 1},
    {"retry", cfgw_submap, 0, 0, 0, cfg_retry_keys, NULL, "the retry schedule, as admin.retry", 1},
    /* changes wait this long for the rest of an admin's burst of writes */
    {"settle", cfgw_duration, ZK(kv.settle_ms), 1, 1000, NULL, "100ms",
     "how long changes wait for the rest of an admin's burst of writes (at most 1s)", 0},
    {"resync_interval", cfgw_resync_interval, ZK(kv.resync_interval_ms), 0, INT64_MAX, NULL, "10m",
     "an anti-entropy full read this often (0 off, else at least 1s)", 0},
    {NULL, NULL, 0, 0, 0, NULL, CFGW_NODOC},
};

static const struct kv_config_words words = {
    .section = "zookeeper",
    .servers = "servers",
    .example = "a list of ZooKeeper servers such as [ \"127.0.0.1:2181\" ]",
    .system = "ZooKeeper",
};

static int check(struct loader *ld, const struct ynode *node, void *settings)
{
	return kv_config_check(ld, node, &((struct zk_config *)settings)->kv, &words);
}

static void free_settings(void *settings)
{
	kv_config_free(&((struct zk_config *)settings)->kv);
}

const struct cfg_section zookeeper_config_section = {
    .name = "zookeeper",
    .keys = zookeeper_keys,
    .size = sizeof(struct zk_config),
    .check = check,
    .free = free_settings,
};

const struct zk_config *zk_config(const struct cfg *cfg)
{
	return cfg_settings(cfg, &zookeeper_config_section);
}
