/*
 * One established ZooKeeper session, served (see conn_state.h): the thread sleeps on the
 * event queue until an event, stop, or a deadline of its own (the mirror's settle, the
 * resync, a recovery read to try again, the end of a lost connection's grace), applies
 * node events through walk.h, answers session events, and reads everything again when a
 * read failed or an event was lost. A lost connection keeps the session (the library
 * reconnects and the server reports what changed to the watches it kept); an expiry, or a
 * connection lost for the whole session timeout, ends it and conn.c starts a new one.
 */
#include <stdio.h>

#include "core/clock.h"
#include "source/zookeeper/conn_state.h"

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
	return granted > 0 ? granted : c->zc->session_timeout_ms;
}

/* A session event. Returns 1 if the session is over (a new one is needed). */
static int on_session(struct zk_conn *c, int state)
{
	char msg[512];
	if (state == ZOO_CONNECTED_STATE) {
		if (c->lost_since_ms >= 0)
			LOG_I(c->log, ZK_LOG, "%s: connected again, session kept", c->server);
		c->lost_since_ms = -1;
		zk_conn_set_state(c, SOURCE_CONN_CONNECTED);
		return 0;
	}
	if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
		if (c->lost_since_ms < 0) {
			c->lost_since_ms = gw_mono_ms();
			snprintf(msg, sizeof msg, "%s: connection lost", c->server);
			LOG_W(c->log, ZK_LOG,
			      "%s: connection lost; the client reconnects, the session is kept for "
			      "up to %lld ms",
			      c->server, (long long)session_ms(c));
			zk_conn_count_failure(c, SYNC_FAIL_CONNECT, msg);
		}
		zk_conn_set_state(c, SOURCE_CONN_CONNECTING);
		return 0;
	}
	if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
		int auth = state == ZOO_AUTH_FAILED_STATE;
		snprintf(msg, sizeof msg, "%s: session %s %s", c->server, c->session,
		         auth ? "refused: authentication failed" : "expired");
		LOG_W(c->log, ZK_LOG, "%s: session %s %s; a new session reads everything again",
		      c->server, c->session, auth ? "refused" : "expired");
		zk_conn_count_failure(c, auth ? SYNC_FAIL_AUTH : SYNC_FAIL_SESSION, msg);
		return 1;
	}
	return 0;
}

/* A read that should have re-armed a watch failed. Returns 1 if the session is over. */
static int on_read_failure(struct zk_conn *c, const struct gw_err *err)
{
	if (zk_events_stopping(&c->q))
		return 1; /* the read was cut short by stop: no failure */
	if (zk_rc_ends_session(c->w.rc)) {
		/* the read found the session over before its session event came: say so
		 * in the same words */
		int state = zk_session_state(&c->zs);
		if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
			return on_session(c, state);
		zk_conn_count_failure(c, err->kind, err->msg);
		LOG_W(c->log, ZK_LOG, "%s; a new session reads everything again", err->msg);
		return 1;
	}
	zk_conn_count_failure(c, err->kind, err->msg);
	LOG_W(c->log, ZK_LOG, "%s; everything is read again once connected", err->msg);
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
	struct gw_err err = {0};
	struct zk_event *list = zk_events_take(&c->q, &lost);
	for (struct zk_event *e = list; e && !over; e = e->next) {
		if (e->type == ZOO_SESSION_EVENT)
			over = on_session(c, e->state);
		else if (!c->need_full && zk_walk_event(&c->w, &err, e, gw_mono_ms()) < 0)
			over = on_read_failure(c, &err);
	}
	zk_events_free_list(list);
	if (lost && !c->need_full) {
		LOG_W(c->log, ZK_LOG,
		      "%s: an event was lost (out of memory); everything is read again", c->server);
		c->need_full = 1;
	}
	if (!over && c->lost_since_ms >= 0 && gw_mono_ms() - c->lost_since_ms >= session_ms(c)) {
		char msg[512];
		snprintf(msg, sizeof msg, "%s: no server answered for %lld ms", c->server,
		         (long long)session_ms(c));
		LOG_W(c->log, ZK_LOG,
		      "%s: no server answered for the session timeout (%lld ms); a new session "
		      "reads everything again",
		      c->server, (long long)session_ms(c));
		zk_conn_count_failure(c, SYNC_FAIL_TIMEOUT, msg);
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
	struct gw_err err = {0};
	if (c->need_full && now >= c->full_retry_ms &&
	    zk_conn_full_read(c, KV_FULL_RECOVER, &err) < 0) {
		c->full_retry_ms = gw_mono_ms() + c->policy.interval_ms;
		if (on_read_failure(c, &err))
			return 1;
	}
	if (c->next_resync_ms >= 0 && now >= c->next_resync_ms && !c->need_full) {
		LOG_D(c->log, ZK_LOG, "%s: anti-entropy: reading everything again", c->server);
		c->next_resync_ms = now + c->zc->kv.resync_interval_ms;
		if (zk_conn_full_read(c, KV_FULL_RESYNC, &err) < 0 && on_read_failure(c, &err))
			return 1;
	}
	return 0;
}

/* Serve the session until it is over or stop is asked. */
void zk_serve(struct zk_conn *c)
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
		zk_conn_publish(c);
	}
}
