/*
 * One WebSocket connection to one admin server, in a thread of its own with its own
 * libwebsockets context: connect (headers Origin, X-Shenyu-Sync-Token, namespaceId,
 * ClientPort), then RUNNING_MODE, MYSELF and RUNNING_MODE again (its reply marks the end
 * of the MYSELF answer); apply every message (apply.h); ping every ping_interval and call
 * the connection dead after three silent intervals; a full sync again every
 * resync_interval (anti-entropy) and after a refused message; reconnect on the admin.retry
 * schedule. Lifecycle of core/thread.h: conn_start, conn_stop, conn_free.
 */
#ifndef GW_WS_CONN_H
#define GW_WS_CONN_H

#include <stddef.h>

#include "core/error.h"
#include "source/source.h"
#include "source/websocket/apply.h"

struct ws_conn;

/* Told once per connection when its first attempt ends: synced 1 (a full sync ended)
 * or 0 (it failed). Called from the connection's thread. */
typedef void (*ws_first_fn)(void *arg, size_t index, int synced);

int conn_start(struct ws_conn **out, struct ws_shared *sh, size_t index, ws_first_fn first,
               void *first_arg, struct gw_err *err);
void conn_stop(struct ws_conn *c);
void conn_free(struct ws_conn *c);
void conn_status(struct ws_conn *c, struct source_conn_status *out);

#endif
