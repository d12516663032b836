/*
 * Inside the ZooKeeper connection (private to source/zookeeper/): the state its thread keeps
 * and the steps shared by conn.c (new sessions on the retry schedule, the thread, the
 * lifecycle, status) and serve.c (one established session served: events, recovery reads,
 * anti-entropy). Only zk_conn_stop() and zk_conn_status() touch it from another thread:
 * the event queue's stop flag, and the status block under `mu`.
 */
#ifndef GW_ZK_CONN_STATE_H
#define GW_ZK_CONN_STATE_H

#include <pthread.h>
#include <stdint.h>

#include "source/kv/layout.h"
#include "source/kv/mirror.h"
#include "source/retry.h"
#include "source/zookeeper/config.h"
#include "source/zookeeper/conn.h"
#include "source/zookeeper/events.h"
#include "source/zookeeper/session.h"
#include "source/zookeeper/walk.h"

#define ZK_LOG "zookeeper" /* every log line's component */

struct zk_conn {
	const struct cfg *cfg;
	const struct zk_config *zc; /* zookeeper: (config.h) */
	struct ingest *ingest;
	struct gw_log *log;
	const char *server; /* zc->kv.label: "zookeeper://h:2181/ns/shenyu" */
	char *hosts;        /* "h1:2181,h2:2181" for the library */
	struct kv_layout layout;
	struct kv_mirror *mirror;
	struct zk_events q;
	struct zk_session zs;
	struct zk_walk w;
	struct retry_policy policy;
	pthread_t thread;
	int started;

	pthread_mutex_t mu; /* guards st and shown */
	struct source_conn_status st;
	int shown;

	/* the running thread's own */
	uint64_t failures;      /* consecutive failed tries at a session */
	int filled;             /* a full read has been offered (the next is a recovery) */
	int need_full;          /* a read failed or an event was lost: read everything */
	int64_t full_retry_ms;  /* monotonic: the next try at that read (after a failed one) */
	int64_t next_resync_ms; /* monotonic; -1: anti-entropy off */
	int64_t lost_since_ms;  /* monotonic; -1: connected */
	char session[32];       /* "0x..." of the session last established, for messages */
	int pending_pause;      /* the start-up try failed: the thread waits the schedule first */
	struct gw_err pending;  /* why it failed */
};

/* The status block (under mu). */
void zk_conn_set_state(struct zk_conn *c, enum source_conn_state s);
void zk_conn_count_failure(struct zk_conn *c, enum sync_fail why, const char *msg);
/* The session id, watches and revision, after anything that may have changed them. */
void zk_conn_publish(struct zk_conn *c);
/* Read everything (walk.h) and note it: the next resync's deadline, no recovery owed.
 * The versions accepted, or -1 (c->w says why). */
int zk_conn_full_read(struct zk_conn *c, enum kv_full_kind kind, struct gw_err *err);

/* Serve the established session until it is over (expired, lost for its whole timeout,
 * a read that needs a new one) or stop is asked (serve.c). */
void zk_serve(struct zk_conn *c);

#endif
