/*
 * The event queue between the ZooKeeper client's completion thread and the source thread
 * (see events.h): a mutex, a monotonic condition variable and a singly linked list, so a
 * push is one allocation and never blocks for long.
 */
#include "source/zookeeper/events.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"

int zk_events_init(struct zk_events *q)
{
	memset(q, 0, sizeof *q);
	int rc = pthread_mutex_init(&q->mu, NULL);
	if (rc != 0)
		return rc;
	rc = gw_cond_init_mono(&q->cv);
	if (rc != 0)
		pthread_mutex_destroy(&q->mu);
	return rc;
}

void zk_events_destroy(struct zk_events *q)
{
	zk_events_free_list(q->head);
	q->head = q->tail = NULL;
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
}

void zk_events_push(struct zk_events *q, int type, int state, const char *path)
{
	size_t n = path ? strlen(path) : 0;
	struct zk_event *e = malloc(sizeof *e + n + 1);
	if (e) {
		e->next = NULL;
		e->type = type;
		e->state = state;
		memcpy(e->path, path ? path : "", n + 1);
	}
	pthread_mutex_lock(&q->mu);
	if (!e)
		q->lost = 1;
	else if (q->tail)
		q->tail = q->tail->next = e;
	else
		q->head = q->tail = e;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

void zk_events_stop(struct zk_events *q)
{
	pthread_mutex_lock(&q->mu);
	q->stop = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

int zk_events_stopping(struct zk_events *q)
{
	pthread_mutex_lock(&q->mu);
	int s = q->stop;
	pthread_mutex_unlock(&q->mu);
	return s;
}

void zk_events_wait(struct zk_events *q, int64_t deadline_ms)
{
	pthread_mutex_lock(&q->mu);
	while (!q->stop && !q->head && !q->lost) {
		if (deadline_ms < 0) {
			pthread_cond_wait(&q->cv, &q->mu);
			continue;
		}
		int64_t left = deadline_ms - gw_mono_ms();
		if (left <= 0)
			break;
		struct timespec dl = gw_mono_deadline(left);
		pthread_cond_timedwait(&q->cv, &q->mu, &dl);
	}
	pthread_mutex_unlock(&q->mu);
}

struct zk_event *zk_events_take(struct zk_events *q, int *lost)
{
	pthread_mutex_lock(&q->mu);
	struct zk_event *e = q->head;
	q->head = q->tail = NULL;
	if (lost)
		*lost = q->lost;
	q->lost = 0;
	pthread_mutex_unlock(&q->mu);
	return e;
}

void zk_events_free_list(struct zk_event *e)
{
	while (e) {
		struct zk_event *next = e->next;
		free(e);
		e = next;
	}
}

void zk_events_clear(struct zk_events *q)
{
	zk_events_free_list(zk_events_take(q, NULL));
}

void zk_events_mark_done(struct zk_events *q, int *done)
{
	pthread_mutex_lock(&q->mu);
	*done = 1;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

int zk_events_wait_done(struct zk_events *q, const int *done)
{
	pthread_mutex_lock(&q->mu);
	while (!*done && !q->stop)
		pthread_cond_wait(&q->cv, &q->mu);
	int ok = *done;
	pthread_mutex_unlock(&q->mu);
	return ok ? 0 : -1;
}
