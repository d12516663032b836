/*
 * The ZooKeeper connection's thread (see conn.h): new sessions on the retry schedule, the
 * thread and its lifecycle, and status. Serving a session once it is established is
 * serve.c. Everything but the status block (under mu) belongs to whichever thread runs the
 * source: the caller of zk_conn_sync, then the source thread, handed over by
 * pthread_create.
 */
#include "source/zookeeper/conn.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "source/zookeeper/conn_state.h"

/* ---------------------------------------------------------------- status */

void zk_conn_set_state(struct zk_conn *c, enum source_conn_state s)
{
	pthread_mutex_lock(&c->mu);
	c->st.state = s;
	c->shown = 1;
	pthread_mutex_unlock(&c->mu);
}

void zk_conn_count_failure(struct zk_conn *c, enum sync_fail why, const char *msg)
{
	pthread_mutex_lock(&c->mu);
	if ((unsigned)why < SYNC_FAIL_COUNT)
		c->st.failures[why]++;
	snprintf(c->st.last_error, sizeof c->st.last_error, "%s", msg);
	c->st.last_error_ms = gw_wall_ms();
	c->st.consecutive_failures = c->failures;
	pthread_mutex_unlock(&c->mu);
}

/* The session id, watches and revision, after anything that may have changed them. */
void zk_conn_publish(struct zk_conn *c)
{
	int64_t id = zk_session_id(&c->zs);
	pthread_mutex_lock(&c->mu);
	if (id)
		snprintf(c->st.session, sizeof c->st.session, "0x%llx", (unsigned long long)id);
	else
		c->st.session[0] = '\0';
	c->st.watches = c->zs.zh ? zk_walk_watches(&c->w) : 0;
	c->st.revision = c->zs.max_zxid;
	c->st.consecutive_failures = c->failures;
	pthread_mutex_unlock(&c->mu);
}

static void succeeded(struct zk_conn *c)
{
	c->failures = 0;
	pthread_mutex_lock(&c->mu);
	c->st.last_success_ms = gw_wall_ms();
	c->st.consecutive_failures = 0;
	pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- full reads */

int zk_conn_full_read(struct zk_conn *c, enum kv_full_kind kind, struct gw_err *err)
{
	int n = zk_walk_full(&c->w, err, kind, gw_mono_ms());
	if (n < 0)
		return -1;
	c->filled = 1;
	c->need_full = 0;
	c->next_resync_ms =
	    c->zc->kv.resync_interval_ms > 0 ? gw_mono_ms() + c->zc->kv.resync_interval_ms : -1;
	zk_conn_publish(c);
	return n;
}

/* ---------------------------------------------------------------- one new session */

enum try_result { TRY_OK = 0, TRY_FAILED, TRY_STOPPED };

/* A new session and a full read. On TRY_FAILED, err says what went wrong (its kind an enum
 * sync_fail). */
static enum try_result try_session(struct zk_conn *c, struct gw_err *err)
{
	zk_session_close(&c->zs);
	zk_events_clear(&c->q);
	c->lost_since_ms = -1;
	zk_conn_set_state(c, SOURCE_CONN_CONNECTING);
	zk_conn_publish(c);
	int64_t timeout = c->zc->session_timeout_ms < INT_MAX ? c->zc->session_timeout_ms : INT_MAX;
	if (zk_session_open(&c->zs, c->hosts, (int)timeout, &c->q) != 0) {
		err->kind = SYNC_FAIL_CONNECT;
		/* the library resolves every host here and says ENOENT (or EINVAL) when a
		 * name does not resolve or the list is malformed */
		int e = errno;
		gw_errf(err, "%s: cannot start a client for %s: %s", c->server, c->hosts,
		        (e == ENOENT || e == EINVAL) ? "no address for a server (a name that does "
		                                       "not resolve, or a malformed list)"
		                                     : strerror(e));
		return TRY_FAILED;
	}
	/* The library tries the servers in turn by itself; a session within the connect
	 * timeout (never more than the session timeout) or this try has failed. */
	int64_t wait = c->cfg->connect_timeout_ms < timeout ? c->cfg->connect_timeout_ms : timeout;
	int64_t deadline = gw_mono_ms() + wait;
	for (;;) {
		int s = zk_session_state(&c->zs);
		if (s == ZOO_CONNECTED_STATE)
			break;
		if (s == ZOO_EXPIRED_SESSION_STATE || s == ZOO_AUTH_FAILED_STATE) {
			err->kind = s == ZOO_AUTH_FAILED_STATE ? SYNC_FAIL_AUTH : SYNC_FAIL_SESSION;
			gw_errf(err, "%s: the session was refused (%s)", c->server,
			        s == ZOO_AUTH_FAILED_STATE ? "authentication failed" : "expired");
			return TRY_FAILED;
		}
		if (zk_events_stopping(&c->q))
			return TRY_STOPPED;
		if (gw_mono_ms() >= deadline) {
			err->kind = SYNC_FAIL_CONNECT;
			gw_errf(err, "%s: no session with any server within %lld ms", c->server,
			        (long long)wait);
			return TRY_FAILED;
		}
		/* before the session there are no watches: only session events come */
		zk_events_wait(&c->q, deadline);
		zk_events_free_list(zk_events_take(&c->q, NULL));
	}
	zk_conn_set_state(c, SOURCE_CONN_CONNECTED);
	zk_conn_publish(c);
	snprintf(c->session, sizeof c->session, "0x%llx",
	         (unsigned long long)zk_session_id(&c->zs));
	enum kv_full_kind kind = c->filled ? KV_FULL_RECOVER : KV_FULL_START;
	int n = zk_conn_full_read(c, kind, err);
	if (n < 0 && zk_events_stopping(&c->q))
		return TRY_STOPPED;
	if (n < 0)
		return TRY_FAILED;
	LOG_I(c->log, ZK_LOG, "%s: session %s: %s: %llu node(s) watched, %d version(s) accepted",
	      c->server, c->session,
	      kind == KV_FULL_START ? "everything read" : "everything read again",
	      (unsigned long long)zk_walk_watches(&c->w), n);
	succeeded(c);
	return TRY_OK;
}

/* Whether some configured group has no version yet (retry_next_starting). */
static int starting(struct zk_conn *c)
{
	struct ingest_stamp st[GW_GROUP_COUNT];
	ingest_stamps(c->ingest, st);
	for (size_t i = 0; i < c->cfg->n_groups; i++)
		if (!st[c->cfg->groups[i]].md5[0])
			return 1;
	return 0;
}

/* After a failed try: wait on the schedule. Returns 1 if stopped meanwhile. */
static int pause_after(struct zk_conn *c, const char *msg, enum sync_fail why)
{
	int64_t delay;
	enum retry_step step = retry_next_starting(&c->policy, c->failures, starting(c), &delay);
	if (step == RETRY_BACKOFF) {
		LOG_E(c->log, ZK_LOG,
		      "%s [%s]; all %d tries of this round failed, next try in %lld ms", msg,
		      sync_fail_name(why), c->policy.attempts, (long long)delay);
		zk_conn_set_state(c, SOURCE_CONN_BACKING_OFF);
	} else {
		LOG_W(c->log, ZK_LOG, "%s [%s]; try %d of %d failed, next try in %lld ms", msg,
		      sync_fail_name(why), retry_try_in_round(&c->policy, c->failures),
		      c->policy.attempts, (long long)delay);
		zk_conn_set_state(c, SOURCE_CONN_RETRYING);
	}
	zk_conn_publish(c);
	int64_t until = gw_mono_ms() + delay;
	while (!zk_events_stopping(&c->q) && gw_mono_ms() < until) {
		zk_events_wait(&c->q, until);
		zk_events_clear(&c->q); /* no session: nothing to hear */
	}
	return zk_events_stopping(&c->q);
}

/* One try; a failure is counted, the session closed, and the schedule's wait taken. */
static enum try_result attempt(struct zk_conn *c)
{
	struct gw_err err = {.kind = SYNC_FAIL_CONNECT};
	enum try_result r = try_session(c, &err);
	if (r != TRY_FAILED)
		return r;
	zk_session_close(&c->zs);
	c->failures++;
	zk_conn_count_failure(c, err.kind, err.msg);
	return pause_after(c, err.msg, err.kind) ? TRY_STOPPED : TRY_FAILED;
}

static void *run(void *arg)
{
	struct zk_conn *c = arg;
	LOG_I(c->log, ZK_LOG, "%s: ZooKeeper sync started", c->server);
	if (c->pending_pause && pause_after(c, c->pending.msg, c->pending.kind))
		goto out;
	c->pending_pause = 0;
	while (!zk_events_stopping(&c->q)) {
		if (!c->zs.zh) {
			if (attempt(c) == TRY_STOPPED)
				break;
			if (!c->zs.zh)
				continue;
		}
		zk_serve(c);
		zk_session_close(&c->zs);
	}
out:
	kv_mirror_flush(c->mirror, gw_mono_ms(), 1);
	zk_session_close(&c->zs);
	zk_conn_set_state(c, SOURCE_CONN_STOPPED);
	zk_conn_publish(c);
	LOG_I(c->log, ZK_LOG, "%s: ZooKeeper sync stopped", c->server);
	return NULL;
}

/* ---------------------------------------------------------------- life cycle */

static char *join_hosts(const struct kv_config *kv)
{
	size_t n = 1;
	for (size_t i = 0; i < kv->n_servers; i++)
		n += strlen(kv->servers[i]) + 1;
	char *h = malloc(n), *p = h;
	if (!h)
		return NULL;
	*p = '\0';
	for (size_t i = 0; i < kv->n_servers; i++)
		p += sprintf(p, "%s%s", i ? "," : "", kv->servers[i]);
	return h;
}

int zk_conn_new(struct zk_conn **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	struct zk_conn *c = calloc(1, sizeof *c);
	if (!c)
		return gw_errf(err, "zookeeper source: out of memory");
	c->cfg = cfg;
	c->zc = zk_config(cfg);
	if (!c->zc || !c->zc->kv.n_servers || !c->zc->kv.label) {
		free(c);
		return gw_errf(err, "zookeeper source: no servers configured");
	}
	c->ingest = args->ingest;
	c->log = args->log;
	c->server = c->zc->kv.label;
	c->next_resync_ms = -1;
	c->lost_since_ms = -1;
	c->policy.attempts = cfg->retry_attempts;
	c->policy.interval_ms = cfg->retry_interval_ms;
	c->policy.backoff_ms = cfg->retry_backoff_ms;
	c->policy.startup_backoff_ms = cfg->retry_startup_backoff_ms;
	if (!(c->hosts = join_hosts(&c->zc->kv))) {
		free(c);
		return gw_errf(err, "zookeeper source: out of memory");
	}
	if (kv_layout_init(&c->layout, c->zc->kv.root, cfg->groups, cfg->n_groups, err) != 0) {
		free(c->hosts);
		free(c);
		return gw_err_prefix(err, "%s", zk_config(cfg)->kv.label);
	}
	const struct kv_mirror_args ma = {
	    .layout = &c->layout,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "zookeeper",
	    .server = c->server,
	    .settle_ms = c->zc->kv.settle_ms > 0 ? c->zc->kv.settle_ms : 100,
	};
	if (!(c->mirror = kv_mirror_new(&ma, err))) {
		kv_layout_free(&c->layout);
		free(c->hosts);
		free(c);
		return -1;
	}
	int rc = zk_events_init(&c->q);
	if (rc != 0) {
		kv_mirror_free(c->mirror);
		kv_layout_free(&c->layout);
		free(c->hosts);
		free(c);
		return gw_errf(err, "zookeeper source: %s", strerror(rc));
	}
	pthread_mutex_init(&c->mu, NULL);
	snprintf(c->st.server, sizeof c->st.server, "%s", c->server);
	c->st.state = SOURCE_CONN_CONNECTING;
	zk_walk_init(&c->w, &c->zs, c->mirror, &c->layout, c->server);
	zk_quiet_library();
	*out = c;
	return 0;
}

int zk_conn_sync(struct zk_conn *c, struct gw_err *err)
{
	struct gw_err e = {.kind = SYNC_FAIL_CONNECT};
	enum try_result r = try_session(c, &e);
	if (r == TRY_OK)
		return 0;
	zk_session_close(&c->zs);
	if (r == TRY_STOPPED)
		return gw_errf(err, "start-up sync interrupted");
	/* the thread goes on from this failure on the schedule */
	c->failures = 1;
	zk_conn_count_failure(c, e.kind, e.msg);
	c->pending_pause = 1;
	c->pending = e;
	zk_conn_set_state(c, SOURCE_CONN_RETRYING);
	return gw_errf(err, "%s [%s]", e.msg, sync_fail_name(e.kind));
}

int zk_conn_start(struct zk_conn *c, struct gw_err *err)
{
	if (c->started)
		return 0;
	zk_conn_set_state(c, c->zs.zh ? SOURCE_CONN_CONNECTED : SOURCE_CONN_CONNECTING);
	int rc = gw_thread_start(&c->thread, "zk-0", run, c);
	if (rc != 0)
		return gw_errf(err, "%s: cannot start the source thread: %s", c->server,
		               strerror(rc));
	c->started = 1;
	return 0;
}

void zk_conn_stop(struct zk_conn *c)
{
	if (c)
		zk_events_stop(&c->q);
}

void zk_conn_free(struct zk_conn *c)
{
	if (!c)
		return;
	zk_conn_stop(c);
	if (c->started)
		pthread_join(c->thread, NULL);
	zk_session_free(&c->zs); /* joins the library's threads: no watcher runs after this */
	zk_walk_free(&c->w);
	kv_mirror_free(c->mirror);
	kv_layout_free(&c->layout);
	zk_events_destroy(&c->q);
	pthread_mutex_destroy(&c->mu);
	free(c->hosts);
	free(c);
}

int zk_conn_status(struct zk_conn *c, struct source_conn_status *out)
{
	if (!c)
		return 0;
	struct kv_mirror_stats ms;
	kv_mirror_stats(c->mirror, &ms);
	pthread_mutex_lock(&c->mu);
	int shown = c->shown;
	*out = c->st;
	pthread_mutex_unlock(&c->mu);
	out->last_event_ms = ms.last_event_ms;
	out->repairs = ms.repairs;
	out->changes = ms.versions;
	return shown;
}
