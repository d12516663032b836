/*
 * What the path-store sources' sections share (zookeeper:, etcd:): the settings both read
 * (their servers, the root the admin writes under, the settle time, the anti-entropy
 * interval), the loaders of the keys they share, and the checks after the walk, which also
 * derive the root's default and the label that names the store in logs and /status
 * ("zookeeper://h1:2181,h2:2181/ns/shenyu"). Each source declares its section in its own
 * folder (zookeeper/config.c, etcd/config.c) over these.
 */
#ifndef GW_KV_CONFIG_H
#define GW_KV_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "config/config_walk.h"

struct kv_config {
	char **servers; /* zookeeper "host:port"; etcd "http(s)://host:port" */
	size_t n_servers;
	char *root;                 /* default "/{namespace}/shenyu"; no trailing '/' */
	int64_t settle_ms;          /* default 100 ms, at most 1 s */
	int64_t resync_interval_ms; /* anti-entropy; default 10 min; 0 = off */
	char *label;                /* "zookeeper://h1:2181,h2:2181/ns/shenyu" */
};

/* Add one server entry (a duplicate refused). */
int kv_config_add_server(struct loader *ld, struct kv_config *kv, const struct ynode *at,
                         const char *path, const char *s, size_t len);
/* The same for a list of servers of a section's own (Apollo's config services): [s, s + len)
 * appended to *list (*n of them), refused when it is there already (case aside). */
int kv_config_add_entry(struct loader *ld, char ***list, size_t *n, const struct ynode *at,
                        const char *path, const char *s, size_t len);
/* How kv_config_add_url's messages speak of a section's servers. */
struct kv_url_words {
	const char *example; /* a whole URL: "http://127.0.0.1:2379" */
	const char *host;    /* host:port alone, for "has no host:port (such as ...)"; NULL:
	                      * the example */
	const char *instead; /* what to set instead of credentials in the URL: "etcd.username
	                      * and etcd.password" */
	int paths;           /* 1: a path may follow host:port (Apollo's behind a proxy) */
};
/* [s, s + len) a base URL, http(s)://host:port (and a path if words->paths), checked in this
 * order: credentials (first, before any message quotes the URL, whatever its scheme), the
 * scheme, a path, query or fragment, host:port. 0 with *n its length without trailing '/', or -1
 * (ld->err). */
int kv_config_url(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                  size_t len, const struct kv_url_words *words, size_t *n);
/* Add one server given as a base URL, http(s)://host:port, checked for what libcurl would
 * otherwise turn into an obscure failure (credentials or a path in the URL). */
int kv_config_add_url(struct loader *ld, struct kv_config *kv, const struct ynode *at,
                      const char *path, const char *s, size_t len,
                      const struct kv_url_words *words);
/* host:port at [s, s + len), host may be [v6], port 1..65535. */
int kv_config_host_port(const char *s, size_t len);

/* ROOT: an absolute path; trailing '/' dropped. */
int kv_config_root(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                   void *base);

/* A secret given as a key (KEY, a ${VAR} expanded by the loader) or read from a file
 * (KEY_file), never both: Consul's and Polaris's token, Apollo's access key secret. The
 * section keeps the secret (*value: never logged; NULL: none), KEY_file's path, and while
 * loading the node of each (*node), so that the second of the two is refused naming the
 * line of the first (`other`). */
/* KEY: a string; empty is none. */
int kv_config_secret(struct loader *ld, const struct ynode *v, const char *path, char **value,
                     const struct ynode **node, const struct ynode *other);
/* KEY_file: its path kept as a string key `k` of `base` would keep it, the file read whole
 * (cfga_read_secret_file) into *value. */
int kv_config_secret_file(struct loader *ld, const struct key *k, const struct ynode *v,
                          const char *path, void *base, char **value, const struct ynode **node,
                          const struct ynode *other);
/* A secret wiped, then freed (NULL is fine). */
void kv_config_wipe(char *secret);

/* How a section's messages name it. */
struct kv_config_words {
	const char *section; /* "zookeeper" */
	const char *servers; /* "servers": its key of servers */
	const char *example; /* "a list of ZooKeeper servers such as [ \"127.0.0.1:2181\" ]" */
	const char *system;  /* "ZooKeeper": the server software, in messages */
};

/* After the walk: servers present, credentials and TLS files whole, no group the admin
 * never writes to a path store, the root's default, the label. */
int kv_config_check(struct loader *ld, const struct ynode *sec, struct kv_config *kv,
                    const struct kv_config_words *words);
void kv_config_free(struct kv_config *kv);

/* "zookeeper source zookeeper://h:2181/ns/shenyu": for source_ops.summary. */
void kv_config_summary(const struct kv_config *kv, const char *type, char *buf, size_t cap);

#endif
