/*
 * Latency histogram (see latency.h). Bounds follow Prometheus' habit of 1-2.5-5 steps,
 * from 1 ms (an in-process delivery) to 60 s (a plugin waiting on a slow reload).
 */
#include "deliver/latency.h"

const int64_t latency_bounds_us[LATENCY_BUCKETS] = {
    1000,   2500,   5000,    10000,   25000,   50000,    100000,
    250000, 500000, 1000000, 2500000, 5000000, 10000000, 60000000,
};

void latency_observe(struct latency_hist *h, int64_t us)
{
	if (us < 0)
		us = 0;
	size_t i = 0;
	while (i < LATENCY_BUCKETS && us > latency_bounds_us[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum_us += us;
}

uint64_t latency_cumulative(const struct latency_hist *h, size_t i)
{
	uint64_t sum = 0;
	for (size_t k = 0; k <= i && k <= LATENCY_BUCKETS; k++)
		sum += h->counts[k];
	return sum;
}
