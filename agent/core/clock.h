/*
 * Clocks. Deadlines and waits use the monotonic clock (immune to NTP steps); only
 * timestamps shown to people (logs, /status) use the wall clock.
 */
#ifndef GW_CLOCK_H
#define GW_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t gw_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t gw_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int64_t gw_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A CLOCK_MONOTONIC timespec `ms` milliseconds from now, for pthread_cond_timedwait on a
 * condition variable created with gw_cond_init_mono() (thread.h). */
static inline struct timespec gw_mono_deadline(int64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

#endif
