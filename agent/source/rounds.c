/*
 * The server rotation and its retry rounds (rounds.h), shared by the sources that try
 * their servers in order.
 */
#include "source/rounds.h"

#include "model/groups.h"

void rounds_init(struct rounds *r, const struct source_args *args, const char *type,
                 const char *noun, char *const *servers, size_t n)
{
	const struct cfg *cfg = args->cfg;
	*r = (struct rounds){
	    .policy = {cfg->retry_attempts, cfg->retry_interval_ms, cfg->retry_backoff_ms,
	               cfg->retry_startup_backoff_ms},
	    .cfg = cfg,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = type,
	    .noun = noun,
	    .servers = servers,
	    .n = n,
	};
}

void rounds_reset(struct rounds *r)
{
	r->failures = 0;
	r->tries = 0;
	r->tried = 0;
}

int rounds_starting(const struct rounds *r)
{
	struct ingest_stamp st[GW_GROUP_COUNT];
	ingest_stamps(r->ingest, st);
	for (size_t i = 0; i < r->cfg->n_groups; i++)
		if (!st[r->cfg->groups[i]].md5[0])
			return 1;
	return 0;
}

int64_t rounds_failed(struct rounds *r, struct conn *c, size_t *ep, enum sync_fail why,
                      const char *msg)
{
	r->tries++;
	conn_set_failures(c, r->tries);
	*ep = (*ep + 1) % r->n;
	if (++r->tried < r->n) {
		LOG_W(r->log, r->type, "%s [%s]; trying %s %s", msg, sync_fail_name(why), r->noun,
		      r->servers[*ep]);
		return -1;
	}
	r->tried = 0;
	r->failures++;
	int64_t delay;
	enum retry_step step =
	    retry_next_starting(&r->policy, r->failures, rounds_starting(r), &delay);
	if (step == RETRY_BACKOFF) {
		LOG_E(r->log, r->type,
		      "%s [%s]; all %d rounds over %zu %s(s) failed, next try in %lld ms", msg,
		      sync_fail_name(why), r->policy.attempts, r->n, r->noun, (long long)delay);
		conn_set_state(c, SOURCE_CONN_BACKING_OFF, NULL);
	} else {
		LOG_W(r->log, r->type,
		      "%s [%s]; round %d of %d over %zu %s(s) failed, next try in %lld ms", msg,
		      sync_fail_name(why), retry_try_in_round(&r->policy, r->failures),
		      r->policy.attempts, r->n, r->noun, (long long)delay);
		conn_set_state(c, SOURCE_CONN_RETRYING, NULL);
	}
	return delay;
}
