/*
 * One admin server over WebSocket (see conn.h). Reading order: run() (reconnect loop and
 * retry schedule) -> session() (one connection, serviced until it ends) -> callback()
 * (libwebsockets events) -> on_message() -> ws_apply_message() (apply.c).
 *
 * Threads: everything but conn_stop() and conn_status() runs in the connection's thread.
 * conn_stop() sets the flag and wakes the thread wherever it waits: in lws_service() via
 * lws_cancel_service() (thread-safe), or in the retry pause via the condition variable.
 * Timers are lws sorted-usec-list entries, so an idle connection sleeps until the next
 * ping or resync deadline and nothing else.
 */
#include "source/websocket/conn.h"

#include <libwebsockets.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "core/thread.h"
#include "source/retry.h"

#define QUIET_US      (1500 * 1000LL) /* an admin that does not answer RUNNING_MODE: its   */
#define WINDOW_MAX_US (10 * LWS_USEC_PER_SEC) /* MYSELF answer ends with this silence */
#define MAX_OUT       8

struct ws_conn {
	struct ws_shared *sh;
	const struct cfg *cfg;
	size_t index;
	const char *url;
	char host[256];
	char path[512];
	char host_header[300]; /* host:port, as Host: carries it */
	int port, tls;
	struct retry_policy policy;
	ws_first_fn first;
	void *first_arg;
	struct lws_context *ctx;
	pthread_t thread;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;                         /* under mu */
	struct source_conn_status status; /* under mu */

	/* the connection's thread only */
	struct ws_apply ap;
	struct lws *wsi;
	struct strbuf rx;
	int rx_binary;
	int done;        /* the session ended */
	int established; /* the handshake succeeded */
	int synced;      /* a full sync ended in this session */
	int messages;    /* received in this session */
	int rm_pending;  /* RUNNING_MODE replies due before the full sync's end */
	int myself_seen; /* a MYSELF-typed message in the open full sync */
	int64_t window_start_us, last_rx_us;
	const char *out[MAX_OUT];
	int n_out, want_ping;
	int destroying; /* conn_free: the context is going, callbacks do nothing */
	int closing;    /* close with close_code at the next writeable */
	enum lws_close_status close_code;
	int peer_close_code;
	char peer_close_reason[124];
	enum sync_fail why;
	char err[900];
	lws_sorted_usec_list_t sul_ping, sul_window, sul_resync;
};

/* ---------------------------------------------------------------- small helpers */

static int stopping(struct ws_conn *c)
{
	pthread_mutex_lock(&c->mu);
	int s = c->stop;
	pthread_mutex_unlock(&c->mu);
	return s;
}

static void set_state(struct ws_conn *c, enum source_conn_state s)
{
	pthread_mutex_lock(&c->mu);
	c->status.state = s;
	pthread_mutex_unlock(&c->mu);
}

/* The session failed: remember why (the first reason wins) and close. */
static void fail(struct ws_conn *c, enum sync_fail why, enum lws_close_status code, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
static void fail(struct ws_conn *c, enum sync_fail why, enum lws_close_status code, const char *fmt,
                 ...)
{
	if (c->why == SYNC_OK) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, sizeof c->err, fmt, ap);
		va_end(ap);
		c->why = why;
	}
	c->closing = 1;
	c->close_code = code;
	if (c->wsi)
		lws_callback_on_writable(c->wsi);
}

static void queue_text(struct ws_conn *c, const char *text)
{
	if (c->n_out < MAX_OUT)
		c->out[c->n_out++] = text;
	if (c->wsi)
		lws_callback_on_writable(c->wsi);
}

static void count_failure(struct ws_conn *c, enum sync_fail why, const char *msg)
{
	pthread_mutex_lock(&c->mu);
	if ((unsigned)why < SYNC_FAIL_COUNT)
		c->status.failures[why]++;
	snprintf(c->status.last_error, sizeof c->status.last_error, "%s", msg);
	c->status.last_error_ms = gw_wall_ms();
	pthread_mutex_unlock(&c->mu);
}

static void publish_counts(struct ws_conn *c)
{
	pthread_mutex_lock(&c->mu);
	c->status.changes = c->ap.accepted;
	c->status.repairs = c->ap.repairs;
	pthread_mutex_unlock(&c->mu);
}

/* ---------------------------------------------------------------- full syncs */

static void window_timer(lws_sorted_usec_list_t *sul);

/* RUNNING_MODE, MYSELF, RUNNING_MODE: the second reply comes after the whole answer. */
static void full_sync(struct ws_conn *c, int repair)
{
	if (c->ap.window)
		return;
	ws_apply_window_open(&c->ap, repair);
	c->rm_pending = 2;
	c->myself_seen = 0;
	c->window_start_us = gw_mono_us();
	queue_text(c, "RUNNING_MODE");
	queue_text(c, "MYSELF");
	queue_text(c, "RUNNING_MODE");
	pthread_mutex_lock(&c->mu);
	c->status.fetches++; /* full syncs asked for */
	pthread_mutex_unlock(&c->mu);
	lws_sul_schedule(c->ctx, 0, &c->sul_window, window_timer, QUIET_US);
}

static void window_end(struct ws_conn *c, int complete)
{
	lws_sul_cancel(&c->sul_window);
	int repair = c->ap.repair;
	ws_apply_window_close(&c->ap, complete);
	publish_counts(c);
	LOG_D(c->sh->log, "websocket", "server %s: %s ended (%s)", c->url,
	      repair ? "anti-entropy full sync" : "full sync",
	      complete ? "the admin's answer is complete" : "no end marker: an older admin");
	pthread_mutex_lock(&c->mu);
	c->status.last_success_ms = gw_wall_ms();
	c->status.consecutive_failures = 0;
	pthread_mutex_unlock(&c->mu);
	if (!c->synced) {
		c->synced = 1;
		if (c->first) {
			c->first(c->first_arg, c->index, 1);
			c->first = NULL;
		}
	}
}

static void window_timer(lws_sorted_usec_list_t *sul)
{
	struct ws_conn *c = lws_container_of(sul, struct ws_conn, sul_window);
	int64_t now = gw_mono_us(), idle = now - c->last_rx_us;
	if (!c->ap.window)
		return;
	if (idle >= QUIET_US && (c->myself_seen || now - c->window_start_us >= WINDOW_MAX_US)) {
		window_end(c, c->myself_seen);
		return;
	}
	lws_sul_schedule(c->ctx, 0, &c->sul_window, window_timer,
	                 idle < QUIET_US ? QUIET_US - idle : QUIET_US);
}

static void resync_timer(lws_sorted_usec_list_t *sul)
{
	struct ws_conn *c = lws_container_of(sul, struct ws_conn, sul_resync);
	LOG_D(c->sh->log, "websocket", "server %s: anti-entropy: asking for a full sync", c->url);
	full_sync(c, 1);
	lws_sul_schedule(c->ctx, 0, &c->sul_resync, resync_timer,
	                 c->cfg->ws_resync_interval_ms * 1000);
}

static void ping_timer(lws_sorted_usec_list_t *sul)
{
	struct ws_conn *c = lws_container_of(sul, struct ws_conn, sul_ping);
	int64_t interval = c->cfg->ws_ping_interval_ms * 1000;
	if (gw_mono_us() - c->last_rx_us >= 3 * interval) {
		fail(c, SYNC_FAIL_TIMEOUT, LWS_CLOSE_STATUS_GOINGAWAY,
		     "server %s: nothing received for 3 ping intervals (%lld ms): the connection "
		     "is dead",
		     c->url, (long long)(3 * c->cfg->ws_ping_interval_ms));
		return;
	}
	c->want_ping = 1;
	lws_callback_on_writable(c->wsi);
	lws_sul_schedule(c->ctx, 0, &c->sul_ping, ping_timer, interval);
}

/* ---------------------------------------------------------------- messages */

static void on_message(struct ws_conn *c, const char *text, size_t len)
{
	struct ws_msg m;
	struct gw_err err = {""};
	c->messages++;
	if (ws_msg_parse(text, len, &m, &err) != 0) {
		LOG_E(c->sh->log, "websocket",
		      "server %s: message refused (%zu bytes), keeping the last good version: %s",
		      c->url, len, err.msg);
		goto malformed;
	}
	if (m.kind == WS_MSG_RUNNING_MODE) {
		LOG_D(c->sh->log, "websocket", "server %s: running mode %s, %s, master %s", c->url,
		      m.cluster ? "CLUSTER" : "STANDALONE", m.is_master ? "master" : "not master",
		      m.master_url);
		if (m.cluster && !m.is_master) {
			ws_apply_window_abort(&c->ap);
			lws_sul_cancel(&c->sul_window);
			fail(
			    c, SYNC_FAIL_CODE, LWS_CLOSE_STATUS_NORMAL,
			    "server %s is not the master of its ShenYu cluster (the master is %s): "
			    "a non-master admin pushes nothing; closing, as the Java gateway does, "
			    "and retrying on the admin.retry schedule",
			    c->url, *m.master_url ? m.master_url : "not named");
			return;
		}
		if (c->rm_pending > 0 && --c->rm_pending == 0 && c->ap.window)
			window_end(c, 1);
		return;
	}
	if (m.kind == WS_MSG_IGNORED) {
		LOG_D(c->sh->log, "websocket",
		      "server %s: ignored a message of groupType '%s', eventType '%s'", c->url,
		      m.group_name, m.event_name);
		return;
	}
	if (m.event == WS_EV_MYSELF)
		c->myself_seen = 1;
	if (ws_apply_message(&c->ap, &m, &err) != 0) {
		LOG_E(c->sh->log, "websocket",
		      "server %s: group %s: %s message refused, keeping the last good version: %s",
		      c->url, m.group_name, ws_event_name(m.event), err.msg);
		goto malformed;
	}
	pthread_mutex_lock(&c->mu);
	c->status.polls++; /* data messages */
	c->status.last_event_ms = gw_wall_ms();
	c->status.bytes_fetched += len;
	pthread_mutex_unlock(&c->mu);
	publish_counts(c);
	return;
malformed:
	count_failure(c, SYNC_FAIL_PARSE, err.msg);
	if (!c->ap.window) {
		LOG_W(c->sh->log, "websocket",
		      "server %s: asking for a full sync (MYSELF) to repair", c->url);
		full_sync(c, 1);
	}
}

/* ---------------------------------------------------------------- libwebsockets */

static int add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p,
                      unsigned char *end)
{
	return lws_add_http_header_by_name(wsi, (const unsigned char *)name,
	                                   (const unsigned char *)value, (int)strlen(value), p,
	                                   end);
}

static const char *refusal_hint(const struct ws_conn *c, int status)
{
	switch (status) {
	case 403:
		return c->cfg->ws_origin ? " (the admin's allowOrigins does not list "
		                           "admin.websocket.origin)"
		                         : " (a ShenYu 2.5+ admin with allowOrigins set needs "
		                           "admin.websocket.origin)";
	case 500:
		return " (a ShenYu admin answers 500 when X-Shenyu-Sync-Token is missing or "
		       "wrong, or when it has no token configured: check admin.websocket.token)";
	case 404:
		return " (no WebSocket endpoint at this path: is WebSocket sync enabled on the "
		       "admin, and is the URL .../websocket?)";
	default:
		return "";
	}
}

static int write_next(struct ws_conn *c, struct lws *wsi)
{
	unsigned char buf[LWS_PRE + 64];
	if (c->closing) {
		lws_close_reason(wsi, c->close_code, NULL, 0);
		return -1;
	}
	if (c->want_ping) {
		c->want_ping = 0;
		if (lws_write(wsi, buf + LWS_PRE, 0, LWS_WRITE_PING) < 0)
			return -1;
	} else if (c->n_out > 0) {
		size_t n = strlen(c->out[0]);
		memcpy(buf + LWS_PRE, c->out[0], n);
		memmove(c->out, c->out + 1, (size_t)(c->n_out - 1) * sizeof c->out[0]);
		c->n_out--;
		if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_TEXT) < (int)n)
			return -1;
	}
	if (c->want_ping || c->n_out > 0)
		lws_callback_on_writable(wsi);
	return 0;
}

static int on_receive(struct ws_conn *c, struct lws *wsi, const char *in, size_t len)
{
	c->last_rx_us = gw_mono_us();
	if (lws_is_first_fragment(wsi)) {
		strbuf_reset(&c->rx);
		c->rx_binary = lws_frame_is_binary(wsi);
	}
	if (!c->rx_binary) {
		if ((int64_t)(c->rx.len + len) > c->cfg->max_response) {
			fail(c, SYNC_FAIL_TOO_LARGE, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
			     "server %s: a message larger than admin.max_response (%lld bytes) "
			     "refused; the last good versions stay (raise admin.max_response "
			     "if the admin's configuration is really this large)",
			     c->url, (long long)c->cfg->max_response);
			strbuf_reset(&c->rx);
			return -1;
		}
		if (strbuf_add(&c->rx, in, len) != 0) {
			fail(c, SYNC_FAIL_TOO_LARGE, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE,
			     "server %s: out of memory for a message", c->url);
			return -1;
		}
	}
	if (lws_is_final_fragment(wsi) && lws_remaining_packet_payload(wsi) == 0) {
		if (!c->rx_binary)
			on_message(c, c->rx.p ? c->rx.p : "", c->rx.len);
		strbuf_reset(&c->rx);
	}
	return 0;
}

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
	(void)user;
	struct lws_context *ctx = lws_get_context(wsi);
	struct ws_conn *c = ctx ? lws_context_user(ctx) : NULL;
	if (!c || c->destroying)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER: {
		unsigned char **p = (unsigned char **)in, *end = *p + len;
		char port[16];
		if (c->cfg->ws_origin && add_header(wsi, "Origin:", c->cfg->ws_origin, p, end))
			return -1;
		if (c->cfg->ws_token &&
		    add_header(wsi, "X-Shenyu-Sync-Token:", c->cfg->ws_token, p, end))
			return -1;
		if (c->cfg->namespace_id && *c->cfg->namespace_id &&
		    add_header(wsi, "namespaceId:", c->cfg->namespace_id, p, end))
			return -1;
		snprintf(port, sizeof port, "%d", c->cfg->gateway_port);
		if (c->cfg->gateway_port > 0 && add_header(wsi, "ClientPort:", port, p, end))
			return -1;
		if (add_header(wsi, "User-Agent:", "gwsync/" GWSYNC_VERSION, p, end))
			return -1;
		break;
	}
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		c->established = 1;
		c->last_rx_us = gw_mono_us();
		set_state(c, SOURCE_CONN_CONNECTED);
		LOG_I(c->sh->log, "websocket", "server %s: connected", c->url);
		full_sync(c, 0);
		lws_sul_schedule(c->ctx, 0, &c->sul_ping, ping_timer,
		                 c->cfg->ws_ping_interval_ms * 1000);
		if (c->cfg->ws_resync_interval_ms > 0)
			lws_sul_schedule(c->ctx, 0, &c->sul_resync, resync_timer,
			                 c->cfg->ws_resync_interval_ms * 1000);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		if (on_receive(c, wsi, in, len) < 0)
			return -1;
		if (c->closing)
			lws_callback_on_writable(wsi);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE_PONG:
		c->last_rx_us = gw_mono_us();
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return write_next(c, wsi);
	case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
		if (len >= 2) {
			const unsigned char *b = in;
			c->peer_close_code = (b[0] << 8) | b[1];
			snprintf(c->peer_close_reason, sizeof c->peer_close_reason, "%.*s",
			         (int)(len - 2 > 120 ? 120 : len - 2), (const char *)in + 2);
		}
		break;
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
		int status = (int)lws_http_client_http_response(wsi);
		const char *why = in ? (const char *)in : "connection failed";
		if (status > 0 && status != 101)
			fail(c, SYNC_FAIL_HTTP, LWS_CLOSE_STATUS_NOSTATUS,
			     "server %s: WebSocket handshake refused: HTTP %d%s", c->url, status,
			     refusal_hint(c, status));
		else if (strstr(why, "timed out") || strstr(why, "timeout"))
			fail(c, SYNC_FAIL_TIMEOUT, LWS_CLOSE_STATUS_NOSTATUS,
			     "server %s: cannot connect: %s", c->url, why);
		else
			fail(c, SYNC_FAIL_CONNECT, LWS_CLOSE_STATUS_NOSTATUS,
			     "server %s: cannot connect: %s%s", c->url, why,
			     c->tls && (strcasestr(why, "ssl") || strcasestr(why, "tls") ||
			                strcasestr(why, "cert"))
			         ? " (check admin.tls.ca_file and that the URL names the host the "
			           "certificate was issued for)"
			         : "");
		c->wsi = NULL;
		c->done = 1;
		break;
	}
	case LWS_CALLBACK_CLIENT_CLOSED:
		if (c->why == SYNC_OK) {
			char how[200] = "without a close frame";
			if (c->peer_close_code)
				snprintf(how, sizeof how, "with close code %d%s%s",
				         c->peer_close_code, *c->peer_close_reason ? ", " : "",
				         c->peer_close_reason);
			if (c->established && !c->synced && c->messages == 0)
				fail(c, SYNC_FAIL_CONNECT, LWS_CLOSE_STATUS_NOSTATUS,
				     "server %s: the admin closed the connection right after the "
				     "handshake (%s): a ShenYu 2.7+ admin does this when the "
				     "namespaceId header is missing or refused; check "
				     "admin.namespace",
				     c->url, how);
			else
				fail(c, SYNC_FAIL_CONNECT, LWS_CLOSE_STATUS_NOSTATUS,
				     "server %s: connection closed by the admin (%s)", c->url, how);
		}
		c->wsi = NULL;
		c->done = 1;
		break;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		break; /* conn_stop(): the service loop looks at the flag */
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
    {"gwsync-shenyu", callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* ---------------------------------------------------------------- one session */

static void session(struct ws_conn *c)
{
	c->done = c->established = c->synced = c->messages = 0;
	c->n_out = c->want_ping = c->closing = 0;
	c->peer_close_code = 0;
	c->peer_close_reason[0] = '\0';
	c->why = SYNC_OK;
	c->err[0] = '\0';
	c->last_rx_us = gw_mono_us();
	strbuf_reset(&c->rx);

	struct lws_client_connect_info ci;
	memset(&ci, 0, sizeof ci);
	ci.context = c->ctx;
	ci.address = c->host;
	ci.port = c->port;
	ci.path = c->path;
	ci.host = c->host_header;
	ci.origin = NULL;   /* sent as written by callback(): lws would prefix "http://" */
	ci.protocol = NULL; /* ShenYu negotiates no subprotocol */
	ci.local_protocol_name = protocols[0].name;
	ci.ietf_version_or_minus_one = -1;
	ci.pwsi = &c->wsi;
	if (c->tls) {
		ci.ssl_connection = LCCSCF_USE_SSL;
		if (c->cfg->tls.insecure_skip_verify)
			ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED |
			                     LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK |
			                     LCCSCF_ALLOW_EXPIRED | LCCSCF_ALLOW_INSECURE;
	}
	if (!lws_client_connect_via_info(&ci) && !c->done) {
		fail(c, SYNC_FAIL_CONNECT, LWS_CLOSE_STATUS_NOSTATUS,
		     "server %s: cannot connect: %s", c->url,
		     c->err[0] ? c->err : "the connection could not be started");
		c->done = 1;
	}
	while (!c->done && !stopping(c))
		if (lws_service(c->ctx, 0) < 0)
			break;
	lws_sul_cancel(&c->sul_ping);
	lws_sul_cancel(&c->sul_window);
	lws_sul_cancel(&c->sul_resync);
	ws_apply_window_abort(&c->ap);
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
	while (!stopping(c)) {
		set_state(c, SOURCE_CONN_CONNECTING);
		session(c);
		if (stopping(c))
			break;
		if (c->synced) {
			/* it worked, then ended: try again at once, then on the schedule */
			LOG_W(c->sh->log, "websocket", "%s [%s]; reconnecting", c->err,
			      sync_fail_name(c->why));
			count_failure(c, c->why, c->err);
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
		count_failure(c, c->why, c->err);
		pthread_mutex_lock(&c->mu);
		c->status.consecutive_failures = failures;
		pthread_mutex_unlock(&c->mu);
		int64_t delay;
		enum retry_step step = retry_next(&c->policy, failures, &delay);
		if (step == RETRY_BACKOFF) {
			LOG_E(c->sh->log, "websocket",
			      "%s [%s]; all %d tries of this round failed, next try in %lld ms",
			      c->err, sync_fail_name(c->why), c->policy.attempts, (long long)delay);
			set_state(c, SOURCE_CONN_BACKING_OFF);
		} else {
			LOG_W(c->sh->log, "websocket",
			      "%s [%s]; try %d of %d failed, next try in %lld ms", c->err,
			      sync_fail_name(c->why), retry_try_in_round(&c->policy, failures),
			      c->policy.attempts, (long long)delay);
			set_state(c, SOURCE_CONN_RETRYING);
		}
		if (pause_ms(c, delay))
			break;
	}
	set_state(c, SOURCE_CONN_STOPPED);
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
	c->index = index;
	c->url = cfg->servers[index];
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
	info.protocols = protocols;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.user = c;
	info.fd_limit_per_thread = 8;
	info.connect_timeout_secs = (unsigned)((cfg->connect_timeout_ms + 999) / 1000);
	info.timeout_secs = info.connect_timeout_secs;
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
		               cfg->servers[index]);
	}
	pthread_mutex_init(&c->mu, NULL);
	gw_cond_init_mono(&c->cv);
	int rc = gw_thread_start(&c->thread, run, c);
	if (rc != 0) {
		lws_context_destroy(c->ctx);
		pthread_cond_destroy(&c->cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return gw_errf(err, "server %s: cannot start the WebSocket thread: %s",
		               cfg->servers[index], strerror(rc));
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
