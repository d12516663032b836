/*
 * A fixed-bucket latency histogram (admin answer received -> every subscriber applied the
 * version), shaped for Prometheus: upper bounds in microseconds, per-bucket counts, a
 * total count and sum. Plain data with no lock of its own: the dispatcher owns one and
 * copies it out under its status lock, so /metrics reads a consistent snapshot.
 */
#ifndef GW_LATENCY_H
#define GW_LATENCY_H

#include <stddef.h>
#include <stdint.h>

#define LATENCY_BUCKETS 14 /* finite upper bounds; one more counter for +Inf */

/* Upper bounds (inclusive, "le") in microseconds, ascending. */
extern const int64_t latency_bounds_us[LATENCY_BUCKETS];

struct latency_hist {
	uint64_t counts[LATENCY_BUCKETS + 1]; /* NOT cumulative; [LATENCY_BUCKETS] is +Inf */
	uint64_t count;
	int64_t sum_us;
};

/* Record one observation; a negative value (clock oddity) counts as 0. */
void latency_observe(struct latency_hist *h, int64_t us);

/* Cumulative count of observations <= latency_bounds_us[i] (i == LATENCY_BUCKETS: all). */
uint64_t latency_cumulative(const struct latency_hist *h, size_t i);

#endif
