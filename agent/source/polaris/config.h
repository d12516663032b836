/*
 * The Polaris source's own section, polaris:, declared here with its keys' defaults and
 * documentation. Polaris is read over its plain HTTP config API (GetConfigFile,
 * WatchConfigFile on port 8090), not its Nacos-compatible one: the plain API names the
 * file that changed with its release version, so a watch answer costs one read of that
 * file, and it needs no second source configured as "Nacos" against a Polaris.
 *
 * Where ShenYu's admin writes: Polaris namespace `namespace` (default "default"), file
 * group `file_group` (default "shenyu"), one file per key of ShenYu's node layout
 * (source/node/node.h) named "{shenyu_namespace}.plugin.list" and so on (layout
 * "namespaced", ShenYu 2.7), without the prefix ("plain", 2.6.1+), or 2.6.0's whole-group
 * files ("shenyu/plugin.json", "legacy"): the names nacos.layout uses.
 */
#ifndef GW_POLARIS_CONFIG_H
#define GW_POLARIS_CONFIG_H

#include <stdint.h>

#include "config/config.h"
#include "config/ytree.h"
#include "source/kv/config.h"
#include "source/node/node.h"

struct polaris_config {
	struct kv_config kv; /* servers "http(s)://host:port", settle, resync, label */
	char *namespace;     /* the Polaris namespace; default "default" */
	char *file_group;    /* default "shenyu" */
	char *token;         /* secret: never log; X-Polaris-Token; NULL: none */
	char *token_file;    /* as written, or NULL; the token was read from it */
	char *layout_name;   /* "namespaced" (default), "plain" or "legacy" */
	enum node_layout layout;
	char *prefix; /* the node layout's key prefix: "{shenyu_namespace}." or "" */
	/* while loading: the nodes of token and token_file, which exclude each other */
	const struct ynode *token_node, *token_file_node;
};

extern const struct cfg_section polaris_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct polaris_config *polaris_config(const struct cfg *cfg);

/* 2.6.0's whole-group file names by enum gw_group (PolarisPathConstants at v2.6.0; NULL:
 * no file), for node_args.doc_names. */
extern const char *const polaris_whole_doc_names[];

#endif
