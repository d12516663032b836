/*
 * One connection's status and its lock, and the pause that stop() ends, as every source
 * thread keeps them. Each source (etcd, Consul, Nacos, Apollo, Polaris) had its own copy of
 * the same few functions: the thread writes `st` under `mu` as it connects, fails and
 * succeeds, status() copies it out from any thread, and stop() wakes a pause through
 * `wake`. They live here once so the status fields mean the same in every source.
 *
 * Not a thread of its own and no policy: which state follows which failure, and what is
 * logged, stays in each source's thread.
 */
#ifndef GW_SOURCE_CONN_H
#define GW_SOURCE_CONN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "source/source.h"

struct conn {
	pthread_mutex_t mu;
	pthread_cond_t wake;          /* monotonic (gw_cond_init_mono); conn_wake() signals it */
	struct source_conn_status st; /* under mu */
	/* a source that holds one watch while connected (etcd, Consul): st.watches follows
	 * the state, 1 while connected, 0 otherwise */
	int one_watch;
};

/* The lock, the wake-up and the status: state "connecting", `server` (the connection's
 * name) and `session` (NULL: ""). */
void conn_init(struct conn *c, const char *server, const char *session);
void conn_destroy(struct conn *c);

/* The state, and the session (the server in use) unless NULL. */
void conn_set_state(struct conn *c, enum source_conn_state state, const char *session);
/* A failed try: counted by its reason (SYNC_STOPPED is not a failure), its message kept. */
void conn_count_failure(struct conn *c, enum sync_fail why, const char *msg);
/* Consecutive failed tries, as the retry schedule counts them. */
void conn_set_failures(struct conn *c, uint64_t n);
/* An exchange that worked: `state`, no consecutive failures, the time, and the session
 * unless NULL. */
void conn_mark_success(struct conn *c, enum source_conn_state state, const char *session);
/* status(): the status under the lock, with the changes, repairs and last event the
 * source's mirror counted (its last event when later than the one kept here). */
void conn_copy(struct conn *c, struct source_conn_status *out, uint64_t changes, uint64_t repairs,
               int64_t last_event_ms);

/* Under mu: wait for `wake` until monotonic ms `until` (-1: until woken); at once when
 * `until` has passed. */
void conn_wait_until(struct conn *c, int64_t until);
/* Sleep until monotonic ms `until` unless *stop is set first, calling due(arg, now)
 * meanwhile (NULL: none) to do what is due, which returns its next deadline (-1: none).
 * 1 if stopped. */
int conn_pause_until(struct conn *c, const atomic_int *stop, int64_t until,
                     int64_t (*due)(void *arg, int64_t now), void *arg);
/* stop(): end a pause or a wait now (from any thread). */
void conn_wake(struct conn *c);

#endif
