/*
 * The `zookeeper:` and `etcd:` sections: the path-store sources (source/kv/), and the rule
 * that an agent has exactly one source section (admin:, zookeeper: or etcd:). Keys shared
 * with admin: (groups, namespace, retry, tls, username, password) go to the same fields of
 * struct cfg, so a source reads them the same way whichever section set them.
 */
#ifndef GW_CONFIG_KV_H
#define GW_CONFIG_KV_H

#include "config/config_walk.h"

int cfgk_zookeeper(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                   void *base);
int cfgk_etcd(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base);
/* zookeeper.servers: "host:port" entries, a list or one comma-separated string. */
int cfgk_zk_servers(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                    void *base);
/* etcd.endpoints: http:// or https:// base URLs. */
int cfgk_etcd_endpoints(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base);
/* zookeeper.root / etcd.root: an absolute path; trailing '/' dropped. */
int cfgk_root(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base);

/* resync_interval: 0 (off) or at least 1 s. */
int cfgk_resync_interval(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base);

/* Exactly one source section. Returns 0 when the path-store section was checked and
 * completed, 1 when the section is admin: (the caller checks it), -1 on an error. */
int cfgk_check(struct loader *ld, const struct ynode *root);

#endif
