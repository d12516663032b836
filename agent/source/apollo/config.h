/*
 * The Apollo source's own section, apollo:, declared here with its keys' defaults and
 * documentation: where the config services are (a list, or a meta server to ask), the
 * Apollo coordinates ShenYu's admin writes to (app_id, cluster, namespace), the access key's
 * secret, which of ShenYu's layouts the keys are in, and the shared keys (groups, retry,
 * TLS, timeouts) that go to struct cfg.
 */
#ifndef GW_APOLLO_CONFIG_H
#define GW_APOLLO_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/ytree.h"

struct apollo_config {
	char **servers; /* config service base URLs, http(s)://host:port[/path], no trailing
	                 * '/'; may be empty when meta is set */
	size_t n_servers;
	char *meta;                 /* meta server base URL, or NULL */
	char *app_id;               /* required */
	char *cluster;              /* default "default" */
	char *namespace_name;       /* the Apollo namespace; default "application" */
	char *secret;               /* the access key's secret: never log; NULL: none */
	char *secret_file;          /* as written, or NULL; the secret was read from it */
	char *shenyu_namespace;     /* the ShenYu namespace the keys start with; "" for none */
	char *layout_name;          /* "nodes" (default) or "whole" */
	int whole;                  /* layout: whole (ShenYu 2.6.0) */
	int64_t settle_ms;          /* default 100 ms, at most 1 s */
	int64_t resync_interval_ms; /* anti-entropy; default 10 min; 0 = off */
	char *prefix;               /* derived: "{namespace}." (namespaced) or "" */
	char *label;                /* derived: "apollo://h:p,h2:p/appId/cluster/namespace" */
	/* while loading: secret and secret_file exclude each other */
	const struct ynode *secret_node, *secret_file_node;
};

extern const struct cfg_section apollo_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct apollo_config *apollo_config(const struct cfg *cfg);

#endif
