/*
 * The store (see store.h). One mutex guards eight pointers and a counter; it is held only
 * to swap or copy a pointer, never while parsing or delivering, so pollers and the
 * dispatcher do not wait on each other.
 */
#include "store/store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"

struct store {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t gen;
	struct group_data *cur[GW_GROUP_COUNT];
};

struct store *store_new(void)
{
	struct store *st = calloc(1, sizeof *st);
	if (!st)
		return NULL;
	pthread_mutex_init(&st->mu, NULL);
	gw_cond_init_mono(&st->cv);
	return st;
}

void store_free(struct store *st)
{
	if (!st)
		return;
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(st->cur[g]);
	pthread_cond_destroy(&st->cv);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

/* Install gd; the version it replaces is returned (its reference), or dropped if `old` is
 * NULL. */
static void install_locked(struct store *st, struct group_data *gd, struct group_data **old)
{
	struct group_data *prev = st->cur[gd->group];
	st->cur[gd->group] = group_data_ref(gd);
	st->gen++;
	pthread_cond_broadcast(&st->cv);
	/* Dropping the old reference under the lock is cheap: if it is the last one the
	 * dispatcher already moved on, and freeing an arena is a few free() calls. */
	if (old)
		*old = prev;
	else
		group_data_unref(prev);
}

enum ingest_verdict store_swap(struct store *st, struct group_data *gd, ingest_accept_fn accept,
                               struct group_data **replaced)
{
	pthread_mutex_lock(&st->mu);
	enum ingest_verdict v = accept(st->cur[gd->group], gd);
	if (v == INGEST_ACCEPTED)
		install_locked(st, gd, replaced);
	pthread_mutex_unlock(&st->mu);
	return v;
}

void store_put(struct store *st, struct group_data *gd)
{
	pthread_mutex_lock(&st->mu);
	install_locked(st, gd, NULL);
	pthread_mutex_unlock(&st->mu);
}

struct group_data *store_get(struct store *st, enum gw_group group)
{
	pthread_mutex_lock(&st->mu);
	struct group_data *gd = group_data_ref(st->cur[group]);
	pthread_mutex_unlock(&st->mu);
	return gd;
}

void store_stamp(struct store *st, enum gw_group group, char md5[65], int64_t *last_modify_time)
{
	pthread_mutex_lock(&st->mu);
	const struct group_data *gd = st->cur[group];
	memcpy(md5, gd ? gd->md5 : "", gd ? sizeof gd->md5 : 1);
	*last_modify_time = gd ? gd->last_modify_time : 0;
	pthread_mutex_unlock(&st->mu);
}

uint64_t store_generation(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	uint64_t g = st->gen;
	pthread_mutex_unlock(&st->mu);
	return g;
}

uint64_t store_wait(struct store *st, uint64_t seen, int64_t timeout_ms)
{
	pthread_mutex_lock(&st->mu);
	if (timeout_ms < 0) {
		while (st->gen == seen)
			pthread_cond_wait(&st->cv, &st->mu);
	} else {
		struct timespec dl = gw_mono_deadline(timeout_ms);
		while (st->gen == seen)
			if (pthread_cond_timedwait(&st->cv, &st->mu, &dl) != 0)
				break;
	}
	uint64_t g = st->gen;
	pthread_mutex_unlock(&st->mu);
	return g;
}

void store_kick(struct store *st)
{
	pthread_mutex_lock(&st->mu);
	st->gen++;
	pthread_cond_broadcast(&st->cv);
	pthread_mutex_unlock(&st->mu);
}
