/*
 * Consul's blocking-query index rules and the loop's pacing, as pure functions so they are
 * tested without a server or a clock (Consul's "Blocking Queries" documentation,
 * website/content/api-docs/features/blocking.mdx, and agent/blockingquery/blockingquery.go):
 *
 * - The answer's X-Consul-Index is the next query's index. The same index as sent is no
 *   change (a wait that ran out, or a wake-up on something outside the prefix): the body
 *   need not even be read.
 * - An index that goes BACKWARDS (a restored snapshot, a new cluster, a server that lost
 *   its data) means what is held may describe another history: "reset the index to 0",
 *   i.e. a non-blocking read of everything, compared with the mirror as a full read.
 * - Never send 0 after the first answer (index 0 is a non-blocking query: a loop sending it
 *   would never block): an answer's index of 0 is taken as 1, which is always safe.
 * - Pacing: Consul may answer at once without a change (a bug, a proxy, a misbehaving
 *   server). Each such answer in a row doubles a pause before the next query, from 250 ms
 *   up to pace_max (15 s by default, the "about one request per 15 s" Consul advises); an
 *   answer that brought a change, or that was held, ends the streak.
 */
#ifndef GW_CONSUL_INDEX_H
#define GW_CONSUL_INDEX_H

#include <stdint.h>

enum consul_step {
	CONSUL_SAME = 0,  /* no change: nothing to read */
	CONSUL_CHANGED,   /* compare the answer with what is held */
	CONSUL_BACKWARDS, /* read everything again without an index (a reset) */
};

/* The step for an answer with index `got` to a query that sent `sent` (0: the first, a
 * non-blocking read), and the index the next query sends (*next, never 0). */
enum consul_step consul_index_step(uint64_t sent, uint64_t got, uint64_t *next);

#define CONSUL_PACE_FIRST_MS 250

/* The pause before the next query after `streak` answers in a row that came back early
 * (in less than half their wait) and changed nothing: 0 for none, then 250 ms doubling,
 * at most max_ms. */
int64_t consul_pace_ms(unsigned streak, int64_t max_ms);

/* Whether an answer that took took_ms to a query waiting wait_ms came back early. */
int consul_answer_early(int64_t took_ms, int64_t wait_ms);

#endif
