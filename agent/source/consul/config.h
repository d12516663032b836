/*
 * The Consul source's own section, consul:, declared here with its keys' defaults and
 * documentation: what it shares with the other path stores (source/kv/config.h: servers,
 * root, settle, anti-entropy; here the servers are Consul agents' HTTP API URLs,
 * "http(s)://host:port"), the ACL token, the blocking queries' wait, TLS and timeouts.
 *
 * The root is written as Consul keys are, without a leading '/' ("{namespace}/shenyu"):
 * ShenYu's admin builds "/{ns}/shenyu/..." paths and its Consul client (Ecwid's) sends them
 * as "/v1/kv/" + path, the double '/' collapsed on the wire (PROTOCOL-PUSH.md 4.2), and
 * Consul refuses keys that begin with '/'. Internally the root is kept in the path form the
 * other path stores use ("/{ns}/shenyu"), so kv/layout.h and kv/mirror.h work unchanged and
 * the label reads "consul://h:8500/ns/shenyu".
 */
#ifndef GW_CONSUL_CONFIG_H
#define GW_CONSUL_CONFIG_H

#include <stdint.h>

#include "config/config.h"
#include "source/kv/config.h"

struct consul_config {
	struct kv_config kv; /* first: the shared loaders take the settings as a kv_config */
	char *token;         /* secret: never log; NULL: none (Consul's anonymous token) */
	char *token_file;    /* as written, or NULL */
	const struct ynode *token_node, *token_file_node; /* during the load only */
	int64_t wait_ms;     /* a blocking query's wait (default 5 min, at most 10 min) */
	int64_t pace_max_ms; /* the longest pause between answers that come back at once
	                      * (default 15 s) */
};

extern const struct cfg_section consul_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct consul_config *consul_config(const struct cfg *cfg);

#endif
