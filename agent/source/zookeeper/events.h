/*
 * The ZooKeeper source's event queue: what the client library's completion thread hands to
 * the source thread. A watcher callback must return quickly and must never call back into
 * the library (a synchronous call from the completion thread would wait for itself), so it
 * only copies the event here and wakes the source thread, which does the reading. The same
 * condition variable carries stop(), so the source thread sleeps on one wait until an event,
 * stop, or its own next deadline: no polling timer.
 *
 * If a copy fails (out of memory) the event is lost; the queue remembers that (`lost`) and
 * the source thread answers with a full re-read, which loses nothing.
 */
#ifndef GW_ZK_EVENTS_H
#define GW_ZK_EVENTS_H

#include <pthread.h>
#include <stdint.h>

/* A node event (ZOO_CREATED/DELETED/CHANGED/CHILD_EVENT, with its path) or a session event
 * (ZOO_SESSION_EVENT, with the session state and no path). */
struct zk_event {
	struct zk_event *next;
	int type;  /* the library's *_EVENT value */
	int state; /* the library's *_STATE value */
	char path[];
};

struct zk_events {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* monotonic (thread.h) */
	struct zk_event *head, *tail;
	int lost; /* an event could not be queued since the last take */
	int stop;
};

/* 0, or an errno. */
int zk_events_init(struct zk_events *q);
void zk_events_destroy(struct zk_events *q);

/* Queue one event and wake the waiter. Any thread; path may be NULL. */
void zk_events_push(struct zk_events *q, int type, int state, const char *path);

/* Ask the waiter to stop: zk_events_wait() returns at once from now on. */
void zk_events_stop(struct zk_events *q);
int zk_events_stopping(struct zk_events *q);

/* Sleep until an event is queued, stop is asked, or the monotonic deadline (ms, as
 * gw_mono_ms(); -1: none) passes. Returns at once if an event is already queued. */
void zk_events_wait(struct zk_events *q, int64_t deadline_ms);

/* Take every queued event, oldest first (NULL if none; free with zk_events_free_list), and
 * whether any was lost since the last take (*lost, then cleared). */
struct zk_event *zk_events_take(struct zk_events *q, int *lost);
void zk_events_free_list(struct zk_event *e);

/* Forget every queued event (a new session: they name the old one's watches). */
void zk_events_clear(struct zk_events *q);

/* The replies to the source's reads come back on the completion thread too: the completion
 * fills its reply, then marks it done here, which wakes the source thread waiting in
 * zk_events_wait_done(). That wait ends at stop as well, so a read stuck on a server that
 * stopped answering never holds up shutdown. 0 once *done, -1 if stop came first. */
void zk_events_mark_done(struct zk_events *q, int *done);
int zk_events_wait_done(struct zk_events *q, const int *done);

#endif
