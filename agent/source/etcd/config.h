/*
 * The etcd source's own section, etcd:, declared here with its keys' defaults and
 * documentation: what it shares with zookeeper: (source/kv/config.h, whose servers are the
 * endpoints here, "http(s)://host:port"), credentials, TLS and timeouts.
 */
#ifndef GW_ETCD_CONFIG_H
#define GW_ETCD_CONFIG_H

#include "config/config.h"
#include "source/kv/config.h"

extern const struct cfg_section etcd_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct kv_config *etcd_config(const struct cfg *cfg);

#endif
