/*
 * What a WebSocket message does to the held groups (PROTOCOL-PUSH.md §1.3, §1.4): MYSELF
 * replaces a group; REFRESH replaces it too (PLUGIN included: the admin sends PLUGIN
 * REFRESH only with the namespace's whole plugin list), except SELECTOR and RULE (only the
 * items of the plugins the message names: a per-plugin sync) and DISCOVER_UPSTREAM (an
 * upsert: a client registering sends one selector's item); CREATE and UPDATE upsert by key
 * (a plugin under a new name replaces the held one with its id: a rename leaves no ghost);
 * DELETE removes by key. Each
 * message that changes a group becomes one new version (model/patch.h) offered to the
 * ingest under the source's apply lock, so two connections never build on the same held
 * version at once.
 *
 * A full sync (MYSELF sent, until its answer is known to be whole) has no end marker of
 * its own and sends nothing for an empty group, so while one is open every message is also
 * applied to a shadow that started empty; when it ends, what is held but not in the
 * shadow was deleted while nobody told us, and is removed. An anti-entropy full sync
 * (`repair`) logs and counts every change it makes as a repair.
 *
 * Used by one connection's thread only; the shared part is locked inside.
 */
#ifndef GW_WS_APPLY_H
#define GW_WS_APPLY_H

#include <pthread.h>
#include <stdint.h>

#include "config/config.h"
#include "core/log.h"
#include "source/websocket/message.h"
#include "store/ingest.h"

/* One per source, shared by its connections. */
struct ws_shared {
	const struct cfg *cfg;
	struct ingest *in;
	struct gw_log *log;
	pthread_mutex_t apply_mu; /* build-and-offer, atomic across connections */
	/* The gate (under apply_mu): while closed nothing is offered and appliers wait, so
	 * main can load the snapshot after a failed start-up sync without a connection
	 * offering at the same moment. Stopping opens it for good (appliers give up). */
	pthread_cond_t gate_cv;
	int gate_closed, stopping;
};

/* Close or open the gate; ws_shared_stop() opens it and makes waiters give up. */
void ws_gate(struct ws_shared *sh, int closed);
void ws_shared_stop(struct ws_shared *sh);

/* One per connection. */
struct ws_apply {
	struct ws_shared *sh;
	const char *server;
	int window;    /* a full sync is open */
	int repair;    /* ... and it is an anti-entropy check */
	unsigned seen; /* groups received since it opened */
	struct group_data *shadow[GW_GROUP_COUNT];
	uint64_t accepted; /* versions accepted from this connection */
	uint64_t repairs;  /* of which repairs */
	int empty_answer;  /* the last full sync brought nothing at all: it changed nothing */
};

/* Apply one DATA message. 0 (*accepted: versions taken, 0 or 1), or -1 with err naming
 * the group when the message or one of its items is malformed (nothing changed). */
int ws_apply_message(struct ws_apply *a, const struct ws_msg *m, struct gw_err *err);

/* A full sync starts (MYSELF is being sent). */
void ws_apply_window_open(struct ws_apply *a, int repair);

/* How a full sync ended. */
enum ws_end {
	WS_END_MARKER,  /* the RUNNING_MODE reply after MYSELF (2.7+): the answer is whole */
	WS_END_SILENCE, /* an older admin (no RUNNING_MODE): MYSELF messages, then silence */
	WS_END_TIMEOUT, /* no MYSELF message came at all: only what arrived counts */
};

/*
 * The full sync ended. After WS_END_MARKER the admin's answer is whole: what is held but
 * was not in it is removed. After WS_END_SILENCE only the groups that came are swept (a
 * slow admin may still be writing the next one); after WS_END_TIMEOUT none. Every
 * configured group still not held is then offered empty (received once: the agent can be
 * ready); a 2.7+ admin sends nothing for an empty group, but an older one sends even empty
 * lists, so after WS_END_SILENCE or WS_END_TIMEOUT that is reported (an admin older than
 * the group). A full sync that brought nothing at all changes nothing (empty_answer).
 * Returns the number of groups swept or filled.
 */
size_t ws_apply_window_close(struct ws_apply *a, enum ws_end how);

/* Drop a full sync without effect (the connection is gone or refused). */
void ws_apply_window_abort(struct ws_apply *a);

#endif
