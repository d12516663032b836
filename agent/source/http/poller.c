/*
 * The long-poll loop of one admin server (see poller.h). Reading order for one change:
 * run() -> cycle() -> admin_listen() (admin.c) -> admin_fetch() -> ingest_offer()
 * (store/ingest.c) under the long-polling accept policy.
 *
 * Waiting happens in exactly two places, both interruptible by poller_stop(): inside a
 * request (curl_http.c wakes curl_multi_poll) and in pause() (a condition variable on the
 * monotonic clock). The status block is guarded by the same mutex as the stop flag; it is
 * only touched between requests, so the lock is never held across network I/O.
 */
#include "source/admin/config.h"
#include "source/http/poller.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/http/admin.h"
#include "core/clock.h"
#include "source/retry.h"
#include "core/thread.h"
#include "model/groups.h"

struct poller {
	const struct cfg *cfg;
	struct ingest *in;
	struct gw_log *log;
	struct admin *admin;
	struct retry_policy policy;
	pthread_t thread;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;                         /* under mu */
	struct source_conn_status status; /* under mu */
};

/* ---------------------------------------------------------------- the loop */

static int stopping(struct poller *p)
{
	pthread_mutex_lock(&p->mu);
	int s = p->stop;
	pthread_mutex_unlock(&p->mu);
	return s;
}

/* Sleep `ms` unless stopped first. Returns 1 if stopped. */
static int pause_ms(struct poller *p, int64_t ms)
{
	pthread_mutex_lock(&p->mu);
	if (ms > 0) {
		struct timespec dl = gw_mono_deadline(ms);
		while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &dl) == 0)
			;
	}
	int s = p->stop;
	pthread_mutex_unlock(&p->mu);
	return s;
}

static void set_state(struct poller *p, enum source_conn_state s)
{
	pthread_mutex_lock(&p->mu);
	p->status.state = s;
	pthread_mutex_unlock(&p->mu);
}

/* What one successful poll brought. */
struct outcome {
	int lagging;     /* a version was refused as older than held */
	int fruitless;   /* the listener named groups changed, yet every version fetched
	                  * was the one already held */
	char names[256]; /* the groups the listener named */
	char md5[65];    /* the first one's held md5, for the message */
};

/*
 * One poll: listen; if groups changed, fetch exactly those from this server and offer them.
 * 0 on success (*out says what it brought).
 */
static int cycle(struct poller *p, struct outcome *out, struct gw_err *err)
{
	const char *server = admin_server(p->admin);
	unsigned mask = 0;
	struct ingest_stamp held[GW_GROUP_COUNT];
	ingest_stamps(p->in, held);
	int rc = admin_listen(p->admin, held, &mask, err);
	pthread_mutex_lock(&p->mu);
	if (err->kind != SYNC_STOPPED)
		p->status.polls++;
	pthread_mutex_unlock(&p->mu);
	if (rc != 0)
		return -1;
	if (mask == 0) {
		LOG_D(p->log, "poller", "server %s: listener: no change", server);
		return 0;
	}
	pthread_mutex_lock(&p->mu);
	p->status.last_event_ms = gw_wall_ms();
	pthread_mutex_unlock(&p->mu);

	enum gw_group changed[GW_GROUP_COUNT];
	size_t n = 0;
	char names[256] = "";
	for (size_t i = 0; i < p->cfg->n_groups; i++) {
		enum gw_group g = p->cfg->groups[i];
		if (mask & (1u << g)) {
			changed[n++] = g;
			size_t l = strlen(names);
			snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "",
			         gw_group_name(g));
		}
	}
	LOG_D(p->log, "poller", "server %s: listener: changed %s", server, names);

	struct group_data *got[GW_GROUP_COUNT];
	size_t bytes = 0;
	struct group_data *prev[GW_GROUP_COUNT] = {NULL};
	for (size_t i = 0; i < n; i++)
		prev[changed[i]] = ingest_held(p->in, changed[i]);
	rc = admin_fetch(p->admin, changed, n, prev, got, &bytes, err);
	for (size_t i = 0; i < n; i++)
		group_data_unref(prev[changed[i]]);
	pthread_mutex_lock(&p->mu);
	if (err->kind != SYNC_STOPPED)
		p->status.fetches++;
	if (rc == 0)
		p->status.bytes_fetched += bytes;
	pthread_mutex_unlock(&p->mu);
	if (rc != 0)
		return -1;

	int older = 0;
	size_t accepted =
	    ingest_offer(p->in, server, ingest_accept_polled, changed, n, got, &older);
	pthread_mutex_lock(&p->mu);
	p->status.changes += accepted;
	pthread_mutex_unlock(&p->mu);
	out->lagging = older;
	out->fruitless = accepted == 0 && !older;
	snprintf(out->names, sizeof out->names, "%s", names);
	if (out->fruitless) {
		struct ingest_stamp now[GW_GROUP_COUNT];
		ingest_stamps(p->in, now);
		snprintf(out->md5, sizeof out->md5, "%s", now[changed[0]].md5);
	}
	return 0;
}

/* Every configured group has a version (from an admin or the snapshot): the agent is
 * past its start-up, and the full backoff applies again. */
static int holds_data(struct poller *p)
{
	struct ingest_stamp held[GW_GROUP_COUNT];
	ingest_stamps(p->in, held);
	for (size_t i = 0; i < p->cfg->n_groups; i++)
		if (!held[p->cfg->groups[i]].md5[0])
			return 0;
	return 1;
}

static void note_success(struct poller *p)
{
	pthread_mutex_lock(&p->mu);
	p->status.last_success_ms = gw_wall_ms();
	p->status.consecutive_failures = 0;
	pthread_mutex_unlock(&p->mu);
}

static void note_failure(struct poller *p, uint64_t failures, const struct gw_err *err)
{
	enum sync_fail why = err->kind;
	pthread_mutex_lock(&p->mu);
	p->status.consecutive_failures = failures;
	if ((unsigned)why < SYNC_FAIL_COUNT)
		p->status.failures[why]++;
	snprintf(p->status.last_error, sizeof p->status.last_error, "%s", err->msg);
	p->status.last_error_ms = gw_wall_ms();
	pthread_mutex_unlock(&p->mu);
}

/*
 * The listener said groups changed, the fetch brought what is held already: once is normal
 * (an admin wakes its listeners when an update wrote identical data, and another server's
 * poller may have brought the version first), but an admin that says so at every poll would
 * have the poller ask as fast as it answers. From the second such poll in a row the poller
 * waits as after a failed try (the retry schedule: `interval` within a round, then the
 * backoff), warning once per episode. 1 if stopped while waiting.
 */
static int pace_fruitless(struct poller *p, uint64_t fruitless, const struct outcome *o)
{
	const char *server = admin_server(p->admin);
	if (fruitless < 2)
		return 0;
	int64_t delay;
	retry_next(&p->policy, fruitless - 1, &delay);
	if (fruitless == 2)
		LOG_W(p->log, "poller",
		      "server %s: the listener keeps answering that %s changed, but the fetch "
		      "serves the version already held (%s): polling this server as after a "
		      "failed try (next poll in %lld ms, then on the admin.retry schedule) until "
		      "the two agree",
		      server, o->names, o->md5, (long long)delay);
	else
		LOG_D(p->log, "poller",
		      "server %s: listener said %s changed, fetch brought the held version again "
		      "(%llu in a row); next poll in %lld ms",
		      server, o->names, (unsigned long long)fruitless, (long long)delay);
	return pause_ms(p, delay);
}

static void *run(void *arg)
{
	struct poller *p = arg;
	const char *server = admin_server(p->admin);
	uint64_t failures = 0, fruitless = 0;
	int lag_streak = 0;
	LOG_I(p->log, "poller", "server %s: long polling started", server);
	while (!stopping(p)) {
		struct gw_err err = {0};
		struct outcome o;
		memset(&o, 0, sizeof o);
		int rc = cycle(p, &o, &err);
		enum sync_fail why = err.kind;
		if (why == SYNC_STOPPED || stopping(p))
			break;
		/* The next poll sleeps for up to a minute: the pages a fetch and its parse,
		 * or the last answer's handling, needed go back (one madvise() a poll). */
		gw_thread_shed_stack();
		if (rc == 0) {
			if (failures > 0)
				LOG_I(p->log, "poller",
				      "server %s: polling again after %llu failed "
				      "tries",
				      server, (unsigned long long)failures);
			failures = 0;
			note_success(p);
			if (o.fruitless) {
				if (pace_fruitless(p, ++fruitless, &o))
					break;
				continue;
			}
			if (fruitless >= 2)
				LOG_I(p->log, "poller",
				      "server %s: its listener and fetch agree again (after %llu "
				      "polls that changed nothing); polling as usual",
				      server, (unsigned long long)fruitless);
			fruitless = 0;
			if (o.lagging) {
				/* This admin answers every poll at once with data older than ours:
				 * give it the retry interval to catch up instead of asking again
				 * now. */
				if (!lag_streak)
					LOG_W(
					    p->log, "poller",
					    "server %s serves older data than held "
					    "(a lagging admin); polling it every %lld ms until it "
					    "catches up",
					    server, (long long)p->policy.interval_ms);
				lag_streak = 1;
				if (pause_ms(p, p->policy.interval_ms))
					break;
			} else if (lag_streak) {
				LOG_I(p->log, "poller", "server %s caught up", server);
				lag_streak = 0;
			}
			continue;
		}

		failures++;
		note_failure(p, failures, &err);
		int64_t delay;
		enum retry_step step =
		    retry_next_starting(&p->policy, failures, !holds_data(p), &delay);
		if (step == RETRY_BACKOFF) {
			LOG_E(p->log, "poller",
			      "%s [%s]; all %d tries of this round failed, next "
			      "try in %lld ms",
			      err.msg, sync_fail_name(why), p->policy.attempts, (long long)delay);
			set_state(p, SOURCE_CONN_BACKING_OFF);
		} else {
			LOG_W(p->log, "poller", "%s [%s]; try %d of %d failed, next try in %lld ms",
			      err.msg, sync_fail_name(why),
			      retry_try_in_round(&p->policy, failures), p->policy.attempts,
			      (long long)delay);
			set_state(p, SOURCE_CONN_RETRYING);
		}
		if (pause_ms(p, delay))
			break;
		set_state(p, SOURCE_CONN_POLLING);
	}
	set_state(p, SOURCE_CONN_STOPPED);
	LOG_I(p->log, "poller", "server %s: long polling stopped", server);
	return NULL;
}

/* ---------------------------------------------------------------- life cycle */

int poller_start(struct poller **out, const struct cfg *cfg, size_t server_index, struct ingest *in,
                 struct gw_log *log, int64_t last_success_ms, struct gw_err *err)
{
	*out = NULL;
	struct poller *p = calloc(1, sizeof *p);
	if (!p)
		return gw_errf(err, "out of memory");
	p->cfg = cfg;
	p->in = in;
	p->log = log;
	p->policy.attempts = cfg->retry_attempts;
	p->policy.interval_ms = cfg->retry_interval_ms;
	p->policy.backoff_ms = cfg->retry_backoff_ms;
	p->policy.startup_backoff_ms = cfg->retry_startup_backoff_ms;
	if (admin_open(&p->admin, cfg, server_index, log, err) != 0) {
		free(p);
		return -1;
	}
	snprintf(p->status.server, sizeof p->status.server, "%s", admin_server(p->admin));
	p->status.state = SOURCE_CONN_POLLING;
	p->status.last_success_ms = last_success_ms; /* a fetch that delivered is a success */

	pthread_mutex_init(&p->mu, NULL);
	gw_cond_init_mono(&p->cv);
	char name[16];
	snprintf(name, sizeof name, "poll-%zu", server_index);
	int rc = gw_thread_start(&p->thread, name, run, p);
	if (rc != 0) {
		admin_close(p->admin);
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		gw_errf(err, "server %s: cannot start the poller thread: %s",
		        admin_config(cfg)->servers[server_index], strerror(rc));
		free(p);
		return -1;
	}
	*out = p;
	return 0;
}

void poller_stop(struct poller *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	admin_interrupt(p->admin);
}

void poller_free(struct poller *p)
{
	if (!p)
		return;
	poller_stop(p);
	pthread_join(p->thread, NULL);
	admin_close(p->admin);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void poller_status(struct poller *p, struct source_conn_status *out)
{
	pthread_mutex_lock(&p->mu);
	*out = p->status;
	pthread_mutex_unlock(&p->mu);
}
