/*
 * One ZooKeeper session through the official C client (libzookeeper_mt): the handle, the
 * watcher that turns every notification into a queued event (events.h), and the three
 * reads the source makes, each setting its one-shot watch as it reads (the C API has no
 * persistent or recursive watch): a node's data, its children, or the existence of a node
 * that is missing.
 *
 * The reads are the library's asynchronous calls, waited for on the event queue's
 * condition variable, rather than its synchronous ones: a synchronous call cannot be
 * interrupted, and one waiting on a server that stopped answering would hold SIGTERM up
 * for two thirds of the session timeout. The asynchronous data reply also hands over the
 * whole node, whatever its size (ShenYu's PluginData carries a Base64 jar: up to
 * jute.maxbuffer, 1 MiB by default, more where the server allows it), so no buffer is
 * guessed and read again.
 *
 * The reads run on the source thread only, one at a time. Every read records the highest
 * zxid its Stat names, the store revision /status shows.
 */
#ifndef GW_ZK_SESSION_H
#define GW_ZK_SESSION_H

#include <stddef.h>
#include <stdint.h>
/* THREADED: the multi-threaded client's declarations (the library's own convention for
 * libzookeeper_mt users) */
#ifndef THREADED
#define THREADED
#endif
#include <zookeeper/zookeeper.h>

#include "source/failure.h"
#include "source/zookeeper/events.h"

/* The reply to the read in flight, filled on the completion thread (see session.c). */
struct zk_reply {
	int done; /* set under the queue's lock, last */
	int rc;
	char *data; /* the node's data (malloc'd), NULL for none */
	size_t len;
	struct String_vector kids; /* a deep copy, owned here until handed over */
	struct Stat st;
};

struct zk_session {
	zhandle_t *zh; /* NULL: none open */
	struct zk_events *q;
	struct zk_reply reply;
	int64_t max_zxid;        /* highest czxid/mzxid/pzxid read; kept across sessions */
	int events_named;        /* the completion thread named itself (set on it, see session.c) */
	struct zk_session *self; /* what a completion's `const void *data` points at: the
	                          * library hands the session back as const (session.c) */
};

/* Make the library quiet: its own log goes to stderr by default and would bypass the
 * agent's log (and its format); the agent reports every failure itself. Call before the
 * first handle is made. */
void zk_quiet_library(void);

/* Start a new session with hosts ("h1:2181,h2:2181") without waiting for it: the state
 * arrives as a session event. The library's threads are named "zk-client" (I/O) and
 * "zk-events" (completions; from its first callback). -1 with errno if no handle could be
 * made. */
int zk_session_open(struct zk_session *s, const char *hosts, int timeout_ms, struct zk_events *q);
/* Close the handle (the library's threads are joined and every pending reply completed:
 * no callback runs after this). */
void zk_session_close(struct zk_session *s);
void zk_session_free(struct zk_session *s);

/* The library's *_STATE of the handle, or 0 with none. */
int zk_session_state(const struct zk_session *s);
/* The session id, 0 unless connected. */
int64_t zk_session_id(const struct zk_session *s);

/* Read path's data and set a data watch. ZOK with val and len the data (len 0 for a node
 * without data; valid until the next read), or the library's error code (ZNONODE...;
 * ZCLOSING once stop was asked). */
int zk_read_data(struct zk_session *s, const char *path, const char **val, size_t *len);
/* List path's children and set a child watch. ZOK with kids filled (the caller frees them
 * with deallocate_String_vector), or the library's error code. */
int zk_read_kids(struct zk_session *s, const char *path, struct String_vector *kids);
/* Watch for path to be created (or changed, if it exists). ZOK if it exists, ZNONODE if
 * not (the watch is set either way), or the library's error code. */
int zk_watch_exists(struct zk_session *s, const char *path);

/* What a failed read means for /status: connect, timeout, session or auth. */
enum sync_fail zk_fail_reason(int rc);
/* A read failure that ends the session (expired, auth failed): a new one is needed. */
int zk_rc_ends_session(int rc);

#endif
