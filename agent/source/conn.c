/*
 * One connection's status and its lock, and the pause that stop() ends (conn.h): the copy
 * every source thread used to keep of its own.
 */
#include <stdio.h>

#include "core/clock.h"
#include "core/thread.h"
#include "source/conn.h"

void conn_init(struct conn *c, const char *server, const char *session)
{
	pthread_mutex_init(&c->mu, NULL);
	gw_cond_init_mono(&c->wake);
	snprintf(c->st.server, sizeof c->st.server, "%s", server);
	snprintf(c->st.session, sizeof c->st.session, "%s", session ? session : "");
	c->st.state = SOURCE_CONN_CONNECTING;
}

void conn_destroy(struct conn *c)
{
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->mu);
}

void conn_set_state(struct conn *c, enum source_conn_state state, const char *session)
{
	pthread_mutex_lock(&c->mu);
	c->st.state = state;
	if (c->one_watch)
		c->st.watches = state == SOURCE_CONN_CONNECTED;
	if (session)
		snprintf(c->st.session, sizeof c->st.session, "%s", session);
	pthread_mutex_unlock(&c->mu);
}

void conn_count_failure(struct conn *c, enum sync_fail why, const char *msg)
{
	pthread_mutex_lock(&c->mu);
	if ((unsigned)why < SYNC_FAIL_COUNT && why != SYNC_STOPPED)
		c->st.failures[why]++;
	snprintf(c->st.last_error, sizeof c->st.last_error, "%s", msg);
	c->st.last_error_ms = gw_wall_ms();
	pthread_mutex_unlock(&c->mu);
}

void conn_set_failures(struct conn *c, uint64_t n)
{
	pthread_mutex_lock(&c->mu);
	c->st.consecutive_failures = n;
	pthread_mutex_unlock(&c->mu);
}

void conn_mark_success(struct conn *c, enum source_conn_state state, const char *session)
{
	pthread_mutex_lock(&c->mu);
	c->st.state = state;
	if (c->one_watch)
		c->st.watches = state == SOURCE_CONN_CONNECTED;
	c->st.consecutive_failures = 0;
	c->st.last_success_ms = gw_wall_ms();
	if (session)
		snprintf(c->st.session, sizeof c->st.session, "%s", session);
	pthread_mutex_unlock(&c->mu);
}

void conn_copy(struct conn *c, struct source_conn_status *out, uint64_t changes, uint64_t repairs,
               int64_t last_event_ms)
{
	pthread_mutex_lock(&c->mu);
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
	out->changes = changes;
	out->repairs = repairs;
	if (last_event_ms > out->last_event_ms)
		out->last_event_ms = last_event_ms;
}

void conn_wait_until(struct conn *c, int64_t until)
{
	if (until < 0) {
		pthread_cond_wait(&c->wake, &c->mu);
		return;
	}
	int64_t ms = until - gw_mono_ms();
	if (ms <= 0)
		return;
	struct timespec ts = gw_mono_deadline(ms);
	pthread_cond_timedwait(&c->wake, &c->mu, &ts);
}

int conn_pause_until(struct conn *c, const atomic_int *stop, int64_t until,
                     int64_t (*due)(void *arg, int64_t now), void *arg)
{
	for (;;) {
		if (atomic_load(stop))
			return 1;
		int64_t now = gw_mono_ms();
		if (now >= until)
			return 0;
		int64_t dl = due ? due(arg, now) : -1;
		pthread_mutex_lock(&c->mu);
		if (!atomic_load(stop))
			conn_wait_until(c, dl >= 0 && dl < until ? dl : until);
		pthread_mutex_unlock(&c->mu);
	}
}

void conn_wake(struct conn *c)
{
	pthread_mutex_lock(&c->mu);
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->mu);
}
