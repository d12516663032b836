/*
 * The WebSocket source's own keys, admin.websocket (a map inside admin:, whose servers are
 * ws:// or wss://): declared here with their defaults and documentation, walked by the
 * configuration loader like the agent's own keys, and read by this folder alone.
 */
#ifndef GW_WS_CONFIG_H
#define GW_WS_CONFIG_H

#include <stdint.h>

#include "config/config.h"
#include "config/ytree.h"

struct ws_config {
	char *origin;               /* sent as Origin; NULL: none */
	char *token;                /* secret: never log; X-Shenyu-Sync-Token; NULL: none */
	char *token_file;           /* as written, or NULL; the token was read from it */
	int64_t ping_interval_ms;   /* default 10 s; 3 silent intervals = dead */
	int64_t resync_interval_ms; /* anti-entropy; default 10 min; 0 = off */
	/* resync_groups: a group's own, shorter anti-entropy interval (0: resync_interval's).
	 * The admin answers a full sync with every group, so the connection's timer runs at
	 * the shortest of them all: sync_every_ms. */
	int64_t group_resync_ms[GW_GROUP_COUNT];
	int64_t sync_every_ms; /* what the timer uses (set by the check); 0: off */
	const struct ynode *resync_groups_node;
	/* while loading: the nodes of token and token_file, which exclude each other */
	const struct ynode *token_node, *token_file_node;
};

extern const struct cfg_section websocket_config_section;

/* The settings of a loaded configuration (NULL for one made by hand without them). */
const struct ws_config *ws_config(const struct cfg *cfg);

#endif
