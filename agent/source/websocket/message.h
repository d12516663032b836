/*
 * One text message from a ShenYu admin over WebSocket (PROTOCOL-PUSH.md §1.2, §1.3): a data
 * push {"groupType","eventType","data":[items]} or the RUNNING_MODE reply
 * {"eventType":"RUNNING_MODE","isMaster","runningMode","masterUrl"}. Only the envelope is
 * read here; the items stay raw text (a span of `text`) for the model to parse, so a huge
 * MYSELF is never built as one JSON tree. Pure: no I/O, no state, fuzzed.
 */
#ifndef GW_WS_MESSAGE_H
#define GW_WS_MESSAGE_H

#include <stddef.h>

#include "core/error.h"

enum ws_event {
	WS_EV_CREATE = 0,
	WS_EV_UPDATE,
	WS_EV_DELETE,
	WS_EV_REFRESH,
	WS_EV_MYSELF,
};

enum ws_msg_kind {
	WS_MSG_DATA = 0,     /* a known group and event: apply it */
	WS_MSG_RUNNING_MODE, /* the reply to RUNNING_MODE */
	WS_MSG_IGNORED,      /* a group or event type this agent does not know: skip */
};

struct ws_msg {
	enum ws_msg_kind kind;
	int group;           /* enum gw_group; -1 when unknown */
	char group_name[64]; /* as sent (cut short), for messages; "" if absent */
	enum ws_event event;
	char event_name[32];
	const char *data; /* the data array's text inside the message (DATA only) */
	size_t data_len;
	/* RUNNING_MODE only */
	int is_master;        /* 1 unless "isMaster": false */
	int cluster;          /* "runningMode": "CLUSTER" */
	char master_url[256]; /* "" if absent */
};

/* "CREATE", "UPDATE", ... */
const char *ws_event_name(enum ws_event e);

/*
 * Parse `text`. 0 with *m filled, or -1 with err saying what is wrong ("not JSON at
 * column C: ...", "'data' must be an array", ...), naming the group when it was read.
 */
int ws_msg_parse(const char *text, size_t len, struct ws_msg *m, struct gw_err *err);

#endif
