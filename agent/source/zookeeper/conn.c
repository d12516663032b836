/*
 * The ZooKeeper source thread (see conn.h): new sessions on the retry schedule, the event
 * loop, recovery and anti-entropy. The status block is the only state shared with other
 * threads (under mu); everything else belongs to whichever thread runs the source (the
 * caller of zk_conn_sync, then the source thread, handed over by pthread_create).
 */
#include "source/zookeeper/conn.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "source/kv/mirror.h"
#include "source/retry.h"
#include "source/zookeeper/events.h"
#include "source/zookeeper/session.h"
#include "source/zookeeper/walk.h"

#define LOGC "zookeeper"

struct zk_conn {
	const struct cfg *cfg;
	struct ingest *ingest;
	struct gw_log *log;
	const char *server; /* cfg->servers[0]: "zookeeper://h:2181/ns/shenyu" */
	char *hosts;        /* "h1:2181,h2:2181" for the library */
	struct kv_layout layout;
	struct kv_mirror *mirror;
	struct zk_events q;
	struct zk_session zs;
	struct zk_walk w;
	struct retry_policy policy;
	pthread_t thread;
	int started;

	pthread_mutex_t mu; /* guards st and shown */
	struct source_conn_status st;
	int shown;

	/* the running thread's own */
	uint64_t failures;      /* consecutive failed tries at a session */
	int filled;             /* a full read has been offered (the next is a recovery) */
	int need_full;          /* a read failed or an event was lost: read everything */
	int64_t full_retry_ms;  /* monotonic: the next try at that read (after a failed one) */
	int64_t next_resync_ms; /* monotonic; -1: anti-entropy off */
	int64_t lost_since_ms;  /* monotonic; -1: connected */
	char session[32];       /* "0x..." of the session last established, for messages */
	int pending_pause;      /* the start-up try failed: the thread waits the schedule first */
	enum sync_fail pending_why;
	char pending_msg[1024];
};

/* ---------------------------------------------------------------- status */

static void set_state(struct zk_conn *c, enum source_conn_state s)
{
	pthread_mutex_lock(&c->mu);
	c->st.state = s;
	c->shown = 1;
	pthread_mutex_unlock(&c->mu);
}

static void count_failure(struct zk_conn *c, enum sync_fail why, const char *msg)
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
static void publish(struct zk_conn *c)
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

static int full_read(struct zk_conn *c, enum kv_full_kind kind)
{
	int n = zk_walk_full(&c->w, kind, gw_mono_ms());
	if (n < 0)
		return -1;
	c->filled = 1;
	c->need_full = 0;
	c->next_resync_ms =
	    c->cfg->kv_resync_interval_ms > 0 ? gw_mono_ms() + c->cfg->kv_resync_interval_ms : -1;
	publish(c);
	return n;
}

/* ---------------------------------------------------------------- one new session */

enum try_result { TRY_OK = 0, TRY_FAILED = -1, TRY_STOPPED = -2 };

/* A new session and a full read. On TRY_FAILED, *why and msg say what went wrong. */
static enum try_result try_session(struct zk_conn *c, enum sync_fail *why, char *msg, size_t cap)
{
	zk_session_close(&c->zs);
	zk_events_clear(&c->q);
	c->lost_since_ms = -1;
	set_state(c, SOURCE_CONN_CONNECTING);
	publish(c);
	int64_t timeout =
	    c->cfg->zk_session_timeout_ms < INT_MAX ? c->cfg->zk_session_timeout_ms : INT_MAX;
	if (zk_session_open(&c->zs, c->hosts, (int)timeout, &c->q) != 0) {
		*why = SYNC_FAIL_CONNECT;
		snprintf(msg, cap, "%s: cannot make a client handle: %s", c->server,
		         strerror(errno));
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
			*why = s == ZOO_AUTH_FAILED_STATE ? SYNC_FAIL_AUTH : SYNC_FAIL_SESSION;
			snprintf(msg, cap, "%s: the session was refused (%s)", c->server,
			         s == ZOO_AUTH_FAILED_STATE ? "authentication failed" : "expired");
			return TRY_FAILED;
		}
		if (zk_events_stopping(&c->q))
			return TRY_STOPPED;
		if (gw_mono_ms() >= deadline) {
			*why = SYNC_FAIL_CONNECT;
			snprintf(msg, cap, "%s: no session with any server within %lld ms",
			         c->server, (long long)wait);
			return TRY_FAILED;
		}
		/* before the session there are no watches: only session events come */
		zk_events_wait(&c->q, deadline);
		zk_events_free_list(zk_events_take(&c->q, NULL));
	}
	set_state(c, SOURCE_CONN_CONNECTED);
	publish(c);
	snprintf(c->session, sizeof c->session, "0x%llx",
	         (unsigned long long)zk_session_id(&c->zs));
	enum kv_full_kind kind = c->filled ? KV_FULL_RECOVER : KV_FULL_START;
	int n = full_read(c, kind);
	if (n < 0 && zk_events_stopping(&c->q))
		return TRY_STOPPED;
	if (n < 0) {
		*why = c->w.why;
		snprintf(msg, cap, "%s", c->w.err);
		return TRY_FAILED;
	}
	LOG_I(c->log, LOGC, "%s: session %s: %s: %llu node(s) watched, %d version(s) accepted",
	      c->server, c->session,
	      kind == KV_FULL_START ? "everything read" : "everything read again",
	      (unsigned long long)zk_walk_watches(&c->w), n);
	succeeded(c);
	return TRY_OK;
}

/* ---------------------------------------------------------------- the event loop */

static int64_t earliest(int64_t a, int64_t b)
{
	if (a < 0)
		return b;
	if (b < 0)
		return a;
	return a < b ? a : b;
}

/* The session timeout the server granted (it bounds what is asked), else the configured. */
static int64_t session_ms(const struct zk_conn *c)
{
	int granted = c->zs.zh ? zoo_recv_timeout(c->zs.zh) : 0;
	return granted > 0 ? granted : c->cfg->zk_session_timeout_ms;
}

/* A session event. Returns 1 if the session is over (a new one is needed). */
static int on_session(struct zk_conn *c, int state)
{
	char msg[512];
	if (state == ZOO_CONNECTED_STATE) {
		if (c->lost_since_ms >= 0)
			LOG_I(c->log, LOGC, "%s: connected again, session kept", c->server);
		c->lost_since_ms = -1;
		set_state(c, SOURCE_CONN_CONNECTED);
		return 0;
	}
	if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
		if (c->lost_since_ms < 0) {
			c->lost_since_ms = gw_mono_ms();
			snprintf(msg, sizeof msg, "%s: connection lost", c->server);
			LOG_W(c->log, LOGC,
			      "%s: connection lost; the client reconnects, the session is kept for "
			      "up to %lld ms",
			      c->server, (long long)session_ms(c));
			count_failure(c, SYNC_FAIL_CONNECT, msg);
		}
		set_state(c, SOURCE_CONN_CONNECTING);
		return 0;
	}
	if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
		int auth = state == ZOO_AUTH_FAILED_STATE;
		snprintf(msg, sizeof msg, "%s: session %s %s", c->server, c->session,
		         auth ? "refused: authentication failed" : "expired");
		LOG_W(c->log, LOGC, "%s: session %s %s; a new session reads everything again",
		      c->server, c->session, auth ? "refused" : "expired");
		count_failure(c, auth ? SYNC_FAIL_AUTH : SYNC_FAIL_SESSION, msg);
		return 1;
	}
	return 0;
}

/* A read that should have re-armed a watch failed. Returns 1 if the session is over. */
static int on_read_failure(struct zk_conn *c)
{
	if (zk_events_stopping(&c->q))
		return 1; /* the read was cut short by stop: no failure */
	if (zk_rc_ends_session(c->w.rc)) {
		/* the read found the session over before its session event came: say so
		 * in the same words */
		int state = zk_session_state(&c->zs);
		if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
			return on_session(c, state);
		count_failure(c, c->w.why, c->w.err);
		LOG_W(c->log, LOGC, "%s; a new session reads everything again", c->w.err);
		return 1;
	}
	count_failure(c, c->w.why, c->w.err);
	LOG_W(c->log, LOGC, "%s; everything is read again once connected", c->w.err);
	if (!c->need_full)
		c->full_retry_ms = 0; /* at once, the first time */
	c->need_full = 1;
	return 0;
}

/* When the thread must wake without an event: the mirror's settle deadline; while
 * connected, anti-entropy and a recovery read to try again; while the connection is lost,
 * the moment the session is given up. -1: only an event or stop. */
static int64_t wake_at(const struct zk_conn *c, int connected)
{
	int64_t at = kv_mirror_deadline(c->mirror);
	if (connected) {
		at = earliest(at, c->next_resync_ms);
		if (c->need_full)
			at = earliest(at, c->full_retry_ms);
	}
	if (c->lost_since_ms >= 0)
		at = earliest(at, c->lost_since_ms + session_ms(c));
	return at;
}

/* Apply what the queue holds. Returns 1 if the session is over. */
static int drain(struct zk_conn *c)
{
	int lost = 0, over = 0;
	struct zk_event *list = zk_events_take(&c->q, &lost);
	for (struct zk_event *e = list; e && !over; e = e->next) {
		if (e->type == ZOO_SESSION_EVENT)
			over = on_session(c, e->state);
		else if (!c->need_full && zk_walk_event(&c->w, e, gw_mono_ms()) < 0)
			over = on_read_failure(c);
	}
	zk_events_free_list(list);
	if (lost && !c->need_full) {
		LOG_W(c->log, LOGC,
		      "%s: an event was lost (out of memory); everything is read again", c->server);
		c->need_full = 1;
	}
	if (!over && c->lost_since_ms >= 0 && gw_mono_ms() - c->lost_since_ms >= session_ms(c)) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s: no server answered for %lld ms", c->server,
		         (long long)session_ms(c));
		LOG_W(c->log, LOGC,
		      "%s: no server answered for the session timeout (%lld ms); a new session "
		      "reads everything again",
		      c->server, (long long)session_ms(c));
		count_failure(c, SYNC_FAIL_TIMEOUT, msg);
		over = 1;
	}
	return over;
}

/* While connected: the recovery read owed, then anti-entropy when due. A failed read is
 * tried again after the retry interval, never in a loop. Returns 1 if the session is
 * over. */
static int catch_up(struct zk_conn *c)
{
	int64_t now = gw_mono_ms();
	if (c->need_full && now >= c->full_retry_ms && full_read(c, KV_FULL_RECOVER) < 0) {
		c->full_retry_ms = gw_mono_ms() + c->policy.interval_ms;
		if (on_read_failure(c))
			return 1;
	}
	if (c->next_resync_ms >= 0 && now >= c->next_resync_ms && !c->need_full) {
		LOG_D(c->log, LOGC, "%s: anti-entropy: reading everything again", c->server);
		c->next_resync_ms = now + c->cfg->kv_resync_interval_ms;
		if (full_read(c, KV_FULL_RESYNC) < 0 && on_read_failure(c))
			return 1;
	}
	return 0;
}

/* Serve the session until it is over or stop is asked. */
static void serve(struct zk_conn *c)
{
	while (!zk_events_stopping(&c->q)) {
		int connected = zk_session_state(&c->zs) == ZOO_CONNECTED_STATE;
		zk_events_wait(&c->q, wake_at(c, connected));
		if (zk_events_stopping(&c->q))
			return;
		int over = drain(c);
		if (!over && zk_session_state(&c->zs) == ZOO_CONNECTED_STATE)
			over = catch_up(c);
		if (over) {
			/* deliver what settled on the old session before reading anew */
			kv_mirror_flush(c->mirror, gw_mono_ms(), 1);
			return;
		}
		kv_mirror_flush(c->mirror, gw_mono_ms(), 0);
		publish(c);
	}
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
		LOG_E(c->log, LOGC,
		      "%s [%s]; all %d tries of this round failed, next try in %lld ms", msg,
		      sync_fail_name(why), c->policy.attempts, (long long)delay);
		set_state(c, SOURCE_CONN_BACKING_OFF);
	} else {
		LOG_W(c->log, LOGC, "%s [%s]; try %d of %d failed, next try in %lld ms", msg,
		      sync_fail_name(why), retry_try_in_round(&c->policy, c->failures),
		      c->policy.attempts, (long long)delay);
		set_state(c, SOURCE_CONN_RETRYING);
	}
	publish(c);
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
	char msg[1024];
	enum sync_fail why = SYNC_FAIL_CONNECT;
	enum try_result r = try_session(c, &why, msg, sizeof msg);
	if (r != TRY_FAILED)
		return r;
	zk_session_close(&c->zs);
	c->failures++;
	count_failure(c, why, msg);
	return pause_after(c, msg, why) ? TRY_STOPPED : TRY_FAILED;
}

static void *run(void *arg)
{
	struct zk_conn *c = arg;
	LOG_I(c->log, LOGC, "%s: ZooKeeper sync started", c->server);
	if (c->pending_pause && pause_after(c, c->pending_msg, c->pending_why))
		goto out;
	c->pending_pause = 0;
	while (!zk_events_stopping(&c->q)) {
		if (!c->zs.zh) {
			if (attempt(c) == TRY_STOPPED)
				break;
			if (!c->zs.zh)
				continue;
		}
		serve(c);
		zk_session_close(&c->zs);
	}
out:
	kv_mirror_flush(c->mirror, gw_mono_ms(), 1);
	zk_session_close(&c->zs);
	set_state(c, SOURCE_CONN_STOPPED);
	publish(c);
	LOG_I(c->log, LOGC, "%s: ZooKeeper sync stopped", c->server);
	return NULL;
}

/* ---------------------------------------------------------------- life cycle */

static char *join_hosts(const struct cfg *cfg)
{
	size_t n = 1;
	for (size_t i = 0; i < cfg->n_kv_servers; i++)
		n += strlen(cfg->kv_servers[i]) + 1;
	char *h = malloc(n), *p = h;
	if (!h)
		return NULL;
	*p = '\0';
	for (size_t i = 0; i < cfg->n_kv_servers; i++)
		p += sprintf(p, "%s%s", i ? "," : "", cfg->kv_servers[i]);
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
	c->ingest = args->ingest;
	c->log = args->log;
	c->server = cfg->servers[0]; /* the config always sets one label (config_kv.c) */
	c->next_resync_ms = -1;
	c->lost_since_ms = -1;
	c->policy.attempts = cfg->retry_attempts;
	c->policy.interval_ms = cfg->retry_interval_ms;
	c->policy.backoff_ms = cfg->retry_backoff_ms;
	c->policy.startup_backoff_ms = cfg->retry_startup_backoff_ms;
	if (!cfg->n_kv_servers) {
		free(c);
		return gw_errf(err, "zookeeper source: no servers configured");
	}
	if (!(c->hosts = join_hosts(cfg))) {
		free(c);
		return gw_errf(err, "zookeeper source: out of memory");
	}
	if (kv_layout_init(&c->layout, cfg->kv_root, cfg->groups, cfg->n_groups, err) != 0) {
		free(c->hosts);
		free(c);
		return gw_err_prefix(err, "%s", cfg->servers[0]);
	}
	const struct kv_mirror_args ma = {
	    .layout = &c->layout,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "zookeeper",
	    .server = c->server,
	    .settle_ms = cfg->kv_settle_ms > 0 ? cfg->kv_settle_ms : 100,
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
	char msg[1024];
	enum sync_fail why = SYNC_FAIL_CONNECT;
	enum try_result r = try_session(c, &why, msg, sizeof msg);
	if (r == TRY_OK)
		return 0;
	zk_session_close(&c->zs);
	if (r == TRY_STOPPED)
		return gw_errf(err, "start-up sync interrupted");
	/* the thread goes on from this failure on the schedule */
	c->failures = 1;
	count_failure(c, why, msg);
	c->pending_pause = 1;
	c->pending_why = why;
	snprintf(c->pending_msg, sizeof c->pending_msg, "%s", msg);
	set_state(c, SOURCE_CONN_RETRYING);
	return gw_errf(err, "%s [%s]", msg, sync_fail_name(why));
}

int zk_conn_start(struct zk_conn *c, struct gw_err *err)
{
	if (c->started)
		return 0;
	set_state(c, c->zs.zh ? SOURCE_CONN_CONNECTED : SOURCE_CONN_CONNECTING);
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
