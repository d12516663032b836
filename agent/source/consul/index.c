/*
 * Consul's index rules and pacing (see index.h).
 */
#include "source/consul/index.h"

enum consul_step consul_index_step(uint64_t sent, uint64_t got, uint64_t *next)
{
	*next = got > 0 ? got : 1;
	if (sent == 0)
		return CONSUL_CHANGED; /* a non-blocking read: everything is news */
	if (got < sent)
		return CONSUL_BACKWARDS;
	if (got == sent)
		return CONSUL_SAME;
	return CONSUL_CHANGED;
}

int64_t consul_pace_ms(unsigned streak, int64_t max_ms)
{
	if (streak == 0)
		return 0;
	int64_t ms = CONSUL_PACE_FIRST_MS;
	for (unsigned i = 1; i < streak && ms < max_ms; i++)
		ms *= 2;
	return ms < max_ms ? ms : max_ms;
}

int consul_answer_early(int64_t took_ms, int64_t wait_ms)
{
	return took_ms * 2 < wait_ms;
}
