/*
 * The Nacos source's own section, nacos:, declared here with its keys' defaults and
 * documentation: the servers (http(s)://host:port), the Nacos namespace (`tenant`), `group`
 * and `context_path`, which of ShenYu's layouts the admin writes (node.h: the 2.7 node keys
 * with the `{namespace}.` prefix, the 2.6.1+ ones without it, or the 2.4 to 2.6.0 whole-group
 * documents), credentials, TLS, settle and anti-entropy as the path stores have them
 * (source/kv/config.h), whose shared part it reuses.
 */
#ifndef GW_NACOS_CONFIG_H
#define GW_NACOS_CONFIG_H

#include "config/config.h"
#include "source/kv/config.h"
#include "source/node/node.h"

enum nacos_layout {
	NACOS_LAYOUT_NAMESPACED = 0, /* "namespaced": {namespace}.plugin.list ... (2.7) */
	NACOS_LAYOUT_PLAIN,          /* "plain": plugin.list ... (2.6.1 to 2.6.x) */
	NACOS_LAYOUT_LEGACY,         /* "legacy": shenyu.plugin.json ... (2.4 to 2.6.0) */
};

struct nacos_config {
	struct kv_config kv; /* servers "http(s)://host:port", settle, resync, label */
	char *tenant;        /* the Nacos namespace id; NULL: public */
	char *group;         /* default DEFAULT_GROUP */
	char *context_path;  /* default /nacos; no trailing '/' */
	char *layout_name;   /* as written, default "namespaced" */
	int layout;          /* enum nacos_layout */
	char *prefix;        /* the node keys' prefix: "{namespace}." or "" */
};

extern const struct cfg_section nacos_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct nacos_config *nacos_config(const struct cfg *cfg);

#endif
