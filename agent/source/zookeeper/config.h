/*
 * The ZooKeeper source's own section, zookeeper:, declared here with its keys' defaults and
 * documentation: what it shares with etcd: (source/kv/config.h) and the session timeout.
 */
#ifndef GW_ZK_CONFIG_H
#define GW_ZK_CONFIG_H

#include <stdint.h>

#include "config/config.h"
#include "source/kv/config.h"

struct zk_config {
	struct kv_config kv;        /* servers are "host:port" */
	int64_t session_timeout_ms; /* default 30 s */
};

extern const struct cfg_section zookeeper_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct zk_config *zk_config(const struct cfg *cfg);

#endif
