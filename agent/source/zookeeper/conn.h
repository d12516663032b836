/*
 * The ZooKeeper source's one thread and everything it owns: the session (session.h), the
 * table of watched nodes and the event handling (walk.h), the mirror that builds versions
 * (source/kv/mirror.h), the retry schedule for new sessions (source/retry.h), anti-entropy
 * and the state /status shows. The thread sleeps on the event queue (events.h) until an
 * event, stop, the mirror's settle deadline, the resync deadline, or, while the connection
 * is lost, the moment the session must be given up: it never wakes on a tick.
 *
 * A lost connection keeps the session: the library reconnects by itself and the server
 * sends what changed meanwhile to the watches it still holds. A session that expired, or a
 * connection lost for longer than the session timeout, is replaced by a new one, and a new
 * session reads everything again (KV_FULL_RECOVER), because changes between a watch firing
 * and its re-arm on the old session cannot be known otherwise.
 *
 * Lifecycle of core/thread.h: zk_conn_new, zk_conn_sync (optional: the start-up read in the
 * caller's thread), zk_conn_start, zk_conn_stop, zk_conn_free.
 */
#ifndef GW_ZK_CONN_H
#define GW_ZK_CONN_H

#include "core/error.h"
#include "source/source.h"

struct zk_conn;

int zk_conn_new(struct zk_conn **out, const struct source_args *args, struct gw_err *err);
/* One try at a session and a full read (KV_FULL_START), in the caller's thread. -1 with
 * err when it failed or stop was asked; the thread started later goes on from there on the
 * retry schedule. */
int zk_conn_sync(struct zk_conn *c, struct gw_err *err);
int zk_conn_start(struct zk_conn *c, struct gw_err *err);
void zk_conn_stop(struct zk_conn *c);
void zk_conn_free(struct zk_conn *c);
/* 1 with out filled once the source has begun (sync or start), else 0. Any thread. */
int zk_conn_status(struct zk_conn *c, struct source_conn_status *out);

#endif
