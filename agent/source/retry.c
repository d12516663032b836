/*
 * The retry/backoff schedule (see retry.h). Kept free of state and clocks: the poller owns
 * the failure count and the waiting, this file only says how long.
 */
#include "source/retry.h"

static uint64_t round_len(const struct retry_policy *p)
{
	return p->attempts > 1 ? (uint64_t)p->attempts : 1;
}

int retry_try_in_round(const struct retry_policy *p, uint64_t failures)
{
	if (failures == 0)
		return 0;
	return (int)((failures - 1) % round_len(p)) + 1;
}

enum retry_step retry_next_starting(const struct retry_policy *p, uint64_t failures, int starting,
                                    int64_t *delay_ms)
{
	enum retry_step step = retry_next(p, failures, delay_ms);
	if (step == RETRY_BACKOFF && starting && p->startup_backoff_ms > 0 &&
	    *delay_ms > p->startup_backoff_ms)
		*delay_ms = p->startup_backoff_ms;
	return step;
}

enum retry_step retry_next(const struct retry_policy *p, uint64_t failures, int64_t *delay_ms)
{
	if (failures == 0) {
		*delay_ms = 0;
		return RETRY_NOW;
	}
	if (failures % round_len(p) == 0) {
		*delay_ms = p->backoff_ms > 0 ? p->backoff_ms : 0;
		return RETRY_BACKOFF;
	}
	*delay_ms = p->interval_ms > 0 ? p->interval_ms : 0;
	return RETRY_INTERVAL;
}
