/*
 * The retry/backoff schedule of a poller, as a pure function so it can be tested without
 * clocks or threads. Tries come in rounds of `attempts`: after a failed try the poller waits
 * `interval` and tries again; when a whole round has failed it waits `backoff` and starts a
 * new round. A success resets the count (the caller passes failures = 0).
 */
#ifndef GW_RETRY_H
#define GW_RETRY_H

#include <stdint.h>

enum retry_step {
	RETRY_NOW = 0,  /* no failure: poll again at once */
	RETRY_INTERVAL, /* a try of the round failed: wait the interval */
	RETRY_BACKOFF,  /* the round's last try failed: wait the backoff */
};

struct retry_policy {
	int attempts; /* tries per round, >= 1 (a smaller value counts as 1) */
	int64_t interval_ms;
	int64_t backoff_ms;
	int64_t startup_backoff_ms; /* the backoff's cap while the agent holds no data yet
	                             * (0: none); see retry_next_starting() */
};

/* What to do after `failures` consecutive failed tries (0 = the last try succeeded), and
 * how long to wait (*delay_ms, 0 for RETRY_NOW). */
enum retry_step retry_next(const struct retry_policy *p, uint64_t failures, int64_t *delay_ms);

/* The same, for an agent that may not hold data yet (`starting`: some configured group has
 * no version, from an admin or the snapshot). A sidecar started before its admin must not
 * sit out the full 5-minute backoff unready: until it holds data the backoff is capped at
 * startup_backoff_ms. */
enum retry_step retry_next_starting(const struct retry_policy *p, uint64_t failures, int starting,
                                    int64_t *delay_ms);

/* 1-based number of the try that just failed within its round (1..attempts), for messages
 * such as "try 2 of 3". 0 if failures == 0. */
int retry_try_in_round(const struct retry_policy *p, uint64_t failures);

#endif
