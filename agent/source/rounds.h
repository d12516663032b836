/*
 * The server rotation of a source that tries its servers in order (etcd, Consul, Polaris):
 * a failing one moves to the next at once, and the retry schedule (retry.h) counts rounds
 * over all of them, so three servers down means three quick failures, then the interval,
 * and after `attempts` such rounds the backoff. A session that ran a while starts it over.
 * Each of those sources had its own copy of this loop body, with the same log lines; it
 * lives here once. What follows a failure of its own kind (a compacted revision, a token
 * refused) and how to pause stay in each source.
 */
#ifndef GW_SOURCE_ROUNDS_H
#define GW_SOURCE_ROUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "source/conn.h"
#include "source/retry.h"
#include "source/source.h"

struct rounds {
	struct retry_policy policy;
	const struct cfg *cfg;
	struct ingest *ingest;
	struct gw_log *log;
	const char *type;     /* the log lines' component: "etcd" */
	const char *noun;     /* what a server is called in them: "endpoint", "server" */
	char *const *servers; /* their names, n of them */
	size_t n;
	uint64_t failures; /* failed rounds in a row */
	uint64_t tries;    /* failed tries in a row */
	size_t tried;      /* servers failed in this round */
};

/* The policy from cfg's retry rules, no failure yet. */
void rounds_init(struct rounds *r, const struct source_args *args, const char *type,
                 const char *noun, char *const *servers, size_t n);
/* A session that ran a while: the schedule starts over. */
void rounds_reset(struct rounds *r);
/* Some configured group has no version yet (neither from the server nor the snapshot):
 * the backoff is then capped (retry_next_starting). */
int rounds_starting(const struct rounds *r);
/* A failed try on servers[*ep] (why, msg; already counted in c): *ep moves to the next
 * server. -1 while the round goes on (logged: try the next one at once); else the pause
 * the schedule asks for before the next round, logged, with c's state "retrying" or
 * "backing_off". */
int64_t rounds_failed(struct rounds *r, struct conn *c, size_t *ep, enum sync_fail why,
                      const char *msg);

#endif
