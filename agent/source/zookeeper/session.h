/*
 * One ZooKeeper session through the official C client (libzookeeper_mt): the handle, the
 * watcher that turns every notification into a queued event (events.h), and the three
 * synchronous reads the source makes, each setting its one-shot watch as it reads (the C
 * API has no persistent or recursive watch): a node's data, its children, or the
 * existence of a node that is missing.
 *
 * The reads run on the source thread only, never on the library's completion thread (a
 * synchronous call there would wait for itself). Every read records the highest zxid its
 * Stat names, the store revision /status shows.
 */
#ifndef GW_ZK_SESSION_H
#define GW_ZK_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <zookeeper/zookeeper.h>

#include "source/failure.h"
#include "source/zookeeper/events.h"

struct zk_session {
	zhandle_t *zh; /* NULL: none open */
	struct zk_events *q;
	char *buf; /* node data, grown to the largest node read */
	size_t cap;
	int64_t max_zxid; /* highest czxid/mzxid/pzxid read; kept across sessions */
};

/* Make the library quiet: its own log goes to stderr by default and would bypass the
 * agent's log (and its format); the agent reports every failure itself. Call before the
 * first handle is made. */
void zk_quiet_library(void);

/* Start a new session with hosts ("h1:2181,h2:2181") without waiting for it: the state
 * arrives as a session event. -1 with errno if no handle could be made. */
int zk_session_open(struct zk_session *s, const char *hosts, int timeout_ms, struct zk_events *q);
/* Close the handle (the library's threads are joined: no watcher runs after this). */
void zk_session_close(struct zk_session *s);
void zk_session_free(struct zk_session *s);

/* The library's *_STATE of the handle, or 0 with none. */
int zk_session_state(const struct zk_session *s);
/* The session id, 0 before a session is established. */
int64_t zk_session_id(const struct zk_session *s);

/* Read path's data and set a data watch. ZOK with *val/*len the data (len 0 for a node
 * without data; valid until the next read), or the library's error code (ZNONODE...). */
int zk_read_data(struct zk_session *s, const char *path, const char **val, size_t *len);
/* List path's children and set a child watch. ZOK with kids filled (free with
 * deallocate_String_vector), or the library's error code. */
int zk_read_kids(struct zk_session *s, const char *path, struct String_vector *kids);
/* Watch for path to be created (or changed, if it exists). ZOK if it exists, ZNONODE if
 * not (the watch is set either way), or the library's error code. */
int zk_watch_exists(struct zk_session *s, const char *path);

/* What a failed read means for /status: connect, timeout, session or auth. */
enum sync_fail zk_fail_reason(int rc);
/* A read failure that ends the session (expired, auth failed): a new one is needed. */
int zk_rc_ends_session(int rc);

#endif
