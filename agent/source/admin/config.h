/*
 * admin: the section ShenYu's HTTP long-polling and WebSocket sources share, as kv/ is what
 * ZooKeeper and etcd share: the admin's URLs (http(s):// for long-polling, ws(s):// for
 * WebSocket, one family per agent), how long the admin holds a poll, and the keys every
 * source section shares, which go to struct cfg (groups, namespace, credentials, timeouts,
 * retry, tls). Declared here like every source's section (struct cfg_section), walked by the
 * configuration loader, read back with admin_config(). The WebSocket source's own keys are a
 * section inside it, admin.websocket (websocket/config.h).
 */
#ifndef GW_ADMIN_CONFIG_H
#define GW_ADMIN_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/ytree.h"

struct admin_config {
	char **servers; /* admin.servers, without a trailing '/' */
	size_t n_servers;
	int64_t hold_ms; /* admin.hold: how long the admin holds a poll (60 s) */
	/* the protocol family of every server: 0 http(s):// (long-polling), 1 ws(s):// (WebSocket)
	 */
	int websocket;
	const struct ynode *first_server; /* while loading: the server that decided the family */
};

extern const struct cfg_section admin_config_section;

/* The settings of a loaded configuration; NULL when admin: is not its source section. */
const struct admin_config *admin_config(const struct cfg *cfg);

/* What main and /status ask of the two sources of admin: (source.h): "N admin server(s)",
 * the servers as the connections. */
void admin_summary(const struct cfg *cfg, char *buf, size_t cap);
size_t admin_conns(const struct cfg *cfg);
const char *admin_conn_name(const struct cfg *cfg, size_t i);

#endif
