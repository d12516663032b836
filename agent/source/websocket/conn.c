/*
 * One admin server over WebSocket (see conn.h): the connection's thread, its reconnect
 * loop on the admin.retry schedule, and its lifecycle; each connection in it is a session
 * (session.c).
 *
 * Threads: everything but conn_stop() and conn_status() runs in the connection's thread.
 * conn_stop() sets the flag and wakes the thread wherever it waits: in lws_service() via
 * lws_cancel_service() (thread-safe), or in the retry pause via the condition variable.
 */
#include "source/admin/config.h"
#include "source/websocket/conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/thread.h"
#include "source/websocket/config.h"
#include "source/websocket/session.h"

/* ---------------------------------------------------------------- small helpers */

int ws_conn_stopping(struct ws_conn *c)
{
	pthread_mutex_lock(&c->mu);
	int s = c->stop;
	pthread_mutex_unlock(&c->mu);
	return s;
}

void ws_conn_set_state(struct ws_conn *c, enum source_conn_state s)
{
	pthread_mutex_lock(&c->mu);
	c->status.state = s;
	pthread_mutex_unlock(&c->mu);
}

void ws_conn_count_failure(struct ws_conn *c, enum sync_fail why, const char *msg)
{
	pthread_mutex_lock(&c->mu);
	if ((unsigned)why < SYNC_FAIL_COUNT)
		c->status.failures[why]++;
	snprintf(c->status.last_error, sizeof c->status.last_error, "%s", msg);
	c->status.last_error_ms = gw_wall_ms();
	pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- the loop */

/* Sleep `ms` unless stopped first. Returns 1 if stopped. */
static int pause_ms(struct ws_conn *c, int64_t ms)
{
	pthread_mutex_lock(&c->mu);
	if (ms > 0) {
		struct timespec dl = gw_mono_deadline(ms);
		while (!c->stop && pthread_cond_timedwait(&c->cv, &c->mu, &dl) == 0)
			;
	}
	int s = c->stop;
	pthread_mutex_unlock(&c->mu);
	return s;
}

static void *run(void *arg)
{
	struct ws_conn *c = arg;
	uint64_t failures = 0;
	LOG_I(c->sh->log, "websocket", "server %s: WebSocket sync started", c->url);
	while (!ws_conn_stopping(c)) {
		ws_conn_set_state(c, SOURCE_CONN_CONNECTING);
		session_run(c);
		if (ws_conn_stopping(c))
			break;
		if (c->synced) {
			/* it worked, then ended: try again at once, then on the schedule */
			LOG_W(c->sh->log, "websocket", "%s [%s]; reconnecting", c->end.msg,
			      sync_fail_name(c->end.kind));
			ws_conn_count_failure(c, c->end.kind, c->end.msg);
			failures = 0;
			continue;
		}
		if (c->first && c->ap.accepted == 0) {
			/* a session that offered something is not a failed start: the groups
			 * it brought must not be overwritten by the snapshot */
			c->first(c->first_arg, c->index, 0);
			c->first = NULL;
		}
		failures++;
		ws_conn_count_failure(c, c->end.kind, c->end.msg);
		pthread_mutex_lock(&c->mu);
		c->status.consecutive_failures = failures;
		pthread_mutex_unlock(&c->mu);
		int64_t delay;
		enum retry_step step = retry_next(&c->policy, failures, &delay);
		if (step == RETRY_BACKOFF) {
			LOG_E(c->sh->log, "websocket",
			      "%s [%s]; all %d tries of this round failed, next try in %lld ms",
			      c->end.msg, sync_fail_name(c->end.kind), c->policy.attempts,
			      (long long)delay);
			ws_conn_set_state(c, SOURCE_CONN_BACKING_OFF);
		} else {
			LOG_W(c->sh->log, "websocket",
			      "%s [%s]; try %d of %d failed, next try in %lld ms", c->end.msg,
			      sync_fail_name(c->end.kind), retry_try_in_round(&c->policy, failures),
			      c->policy.attempts, (long long)delay);
			ws_conn_set_state(c, SOURCE_CONN_RETRYING);
		}
		if (pause_ms(c, delay))
			break;
	}
	ws_conn_set_state(c, SOURCE_CONN_STOPPED);
	LOG_I(c->sh->log, "websocket", "server %s: WebSocket sync stopped", c->url);
	return NULL;
}

/* ---------------------------------------------------------------- life cycle */

static int parse_url(struct ws_conn *c, struct gw_err *err)
{
	const char *u = c->url, *p = strstr(u, "://");
	c->tls = strncasecmp(u, "wss://", 6) == 0;
	c->port = c->tls ? 443 : 80;
	p = p ? p + 3 : u;
	size_t hl;
	const char *after;
	if (*p == '[') { /* [IPv6] */
		const char *close = strchr(p, ']');
		if (!close)
			return gw_errf(err, "server %s: bad IPv6 address", u);
		hl = (size_t)(close - p - 1);
		snprintf(c->host, sizeof c->host, "%.*s", (int)hl, p + 1);
		after = close + 1;
	} else {
		hl = strcspn(p, ":/");
		snprintf(c->host, sizeof c->host, "%.*s", (int)hl, p);
		after = p + hl;
	}
	if (*after == ':') {
		c->port = atoi(after + 1);
		after += 1 + strspn(after + 1, "0123456789");
	}
	if (c->port <= 0 || c->port > 65535)
		return gw_errf(err, "server %s: bad port", u);
	snprintf(c->path, sizeof c->path, "%s", *after == '/' ? after : "/");
	snprintf(c->host_header, sizeof c->host_header, "%s%s%s:%d", *p == '[' ? "[" : "", c->host,
	         *p == '[' ? "]" : "", c->port);
	return 0;
}

int conn_start(struct ws_conn **out, struct ws_shared *sh, size_t index, ws_first_fn first,
               void *first_arg, struct gw_err *err)
{
	*out = NULL;
	struct ws_conn *c = calloc(1, sizeof *c);
	if (!c)
		return gw_errf(err, "out of memory");
	const struct cfg *cfg = sh->cfg;
	c->sh = sh;
	c->cfg = cfg;
	c->ws = ws_config(cfg);
	c->index = index;
	c->url = admin_config(cfg)->servers[index];
	if (!c->ws) {
		free(c);
		return gw_errf(err, "server %s: no admin.websocket settings in the configuration",
		               admin_config(cfg)->servers[index]);
	}
	c->first = first;
	c->first_arg = first_arg;
	c->policy.attempts = cfg->retry_attempts;
	c->policy.interval_ms = cfg->retry_interval_ms;
	c->policy.backoff_ms = cfg->retry_backoff_ms;
	c->ap.sh = sh;
	c->ap.server = c->url;
	if (parse_url(c, err) != 0) {
		free(c);
		return -1;
	}
	snprintf(c->status.server, sizeof c->status.server, "%s", c->url);
	c->status.state = SOURCE_CONN_CONNECTING;

	struct lws_context_creation_info info;
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = ws_protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.user = c;
	info.fd_limit_per_thread = 8;
	info.connect_timeout_secs = (unsigned)((cfg->connect_timeout_ms + 999) / 1000);
	info.timeout_secs = info.connect_timeout_secs;
	/* libwebsockets reads the TLS files now, by path: regular files only */
	if (c->tls && cfg_tls_check(cfg, err) != 0) {
		free(c);
		return gw_err_prefix(err, "server %s", admin_config(cfg)->servers[index]);
	}
	if (c->tls) {
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
		info.client_ssl_ca_filepath = cfg->tls.ca_file;
		info.client_ssl_cert_filepath = cfg->tls.cert_file;
		info.client_ssl_private_key_filepath = cfg->tls.key_file;
	}
	c->ctx = lws_create_context(&info);
	if (!c->ctx) {
		free(c);
		return gw_errf(err, "server %s: cannot create the WebSocket client context",
		               admin_config(cfg)->servers[index]);
	}
	pthread_mutex_init(&c->mu, NULL);
	gw_cond_init_mono(&c->cv);
	char name[16];
	snprintf(name, sizeof name, "ws-%zu", index);
	int rc = gw_thread_start(&c->thread, name, run, c);
	if (rc != 0) {
		lws_context_destroy(c->ctx);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return gw_errf(err, "server %s: cannot start the WebSocket thread: %s",
		               admin_config(cfg)->servers[index], strerror(rc));
	}
	*out = c;
	return 0;
}

void conn_stop(struct ws_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	lws_cancel_service(c->ctx);
}

void conn_free(struct ws_conn *c)
{
	if (!c)
		return;
	conn_stop(c);
	pthread_join(c->thread, NULL);
	c->destroying = 1;
	lws_context_destroy(c->ctx);
	ws_apply_window_abort(&c->ap);
	strbuf_reset(&c->rx);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void conn_status(struct ws_conn *c, struct source_conn_status *out)
{
	pthread_mutex_lock(&c->mu);
	*out = c->status;
	pthread_mutex_unlock(&c->mu);
}
