/*
 * One session with an admin over WebSocket (see session.h). Reading order: session_run()
 * (connect, service until the end) -> callback() (libwebsockets events) -> on_message()
 * -> ws_apply_message() (apply.c). After the handshake: RUNNING_MODE, MYSELF, RUNNING_MODE
 * (the second reply marks the end of the MYSELF answer; an admin before 2.7 answers no
 * RUNNING_MODE, and its answer ends with a silence instead). Timers are lws sorted-usec-list
 * entries, so an idle session sleeps until the next ping or resync deadline and nothing
 * else.
 */
#include "source/websocket/session.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/clock.h"
#include "source/websocket/config.h"

/* The session failed: remember why (the first reason wins) and close. */
static void fail(struct ws_conn *c, enum sync_fail why, enum lws_close_status code, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
static void fail(struct ws_conn *c, enum sync_fail why, enum lws_close_status code, const char *fmt,
                 ...)
{
	if (c->end.kind == SYNC_OK) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->end.msg, sizeof c->end.msg, fmt, ap);
		va_end(ap);
		c->end.kind = why;
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
	if (!c->speaks_rm)
		lws_sul_schedule(c->ctx, 0, &c->sul_window, window_timer, QUIET_US);
}

static void window_end(struct ws_conn *c, enum ws_end how)
{
	lws_sul_cancel(&c->sul_window);
	int repair = c->ap.repair;
	ws_apply_window_close(&c->ap, how);
	publish_counts(c);
	LOG_D(c->sh->log, "websocket", "server %s: %s ended (%s)", c->url,
	      repair ? "anti-entropy full sync" : "full sync",
	      how == WS_END_MARKER    ? "the admin's answer is complete"
	      : how == WS_END_SILENCE ? "no end marker, then silence: an admin before 2.7"
	                              : "no answer to MYSELF");
	if (c->ap.empty_answer) {
		/* not a start: the snapshot (if any) serves until data comes */
		if (c->first && c->ap.accepted == 0) {
			c->first(c->first_arg, c->index, 0);
			c->first = NULL;
		}
		return;
	}
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
	if (!c->ap.window || c->speaks_rm)
		return; /* the end marker will come */
	if (idle >= QUIET_US && (c->myself_seen || now - c->window_start_us >= WINDOW_MAX_US)) {
		window_end(c, c->myself_seen ? WS_END_SILENCE : WS_END_TIMEOUT);
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
	lws_sul_schedule(c->ctx, 0, &c->sul_resync, resync_timer, c->ws->sync_every_ms * 1000);
}

static void ping_timer(lws_sorted_usec_list_t *sul)
{
	struct ws_conn *c = lws_container_of(sul, struct ws_conn, sul_ping);
	int64_t interval = c->ws->ping_interval_ms * 1000;
	if (gw_mono_us() - c->last_rx_us >= 3 * interval) {
		fail(c, SYNC_FAIL_TIMEOUT, LWS_CLOSE_STATUS_GOINGAWAY,
		     "server %s: nothing received for 3 ping intervals (%lld ms): the connection "
		     "is dead",
		     c->url, (long long)(3 * c->ws->ping_interval_ms));
		return;
	}
	c->want_ping = 1;
	lws_callback_on_writable(c->wsi);
	lws_sul_schedule(c->ctx, 0, &c->sul_ping, ping_timer, interval);
}

/*
 * The connection and the upgrade must be done within admin.connect_timeout, whole.
 * libwebsockets' own timeout for the server's answer does not end an answer trickled in a
 * few bytes a second (a 101 line and headers that never finish), which held the
 * connection's thread for good; this deadline is ours, one timer, cancelled at
 * ESTABLISHED.
 */
static void handshake_timer(lws_sorted_usec_list_t *sul)
{
	struct ws_conn *c = lws_container_of(sul, struct ws_conn, sul_handshake);
	if (c->established || !c->wsi)
		return;
	fail(c, SYNC_FAIL_TIMEOUT, LWS_CLOSE_STATUS_NOSTATUS,
	     "server %s: the WebSocket handshake did not complete within %lld ms "
	     "(admin.connect_timeout): the connection or the admin's answer to the upgrade "
	     "never finished",
	     c->url, (long long)c->cfg->connect_timeout_ms);
	lws_set_timeout(c->wsi, PENDING_TIMEOUT_AWAITING_SERVER_RESPONSE, LWS_TO_KILL_ASYNC);
}

/* ---------------------------------------------------------------- messages */

static void on_message(struct ws_conn *c, const char *text, size_t len)
{
	struct ws_msg m;
	struct gw_err err = {0};
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
		c->speaks_rm = 1;
		lws_sul_cancel(&c->sul_window);
		if (c->rm_pending > 0 && --c->rm_pending == 0 && c->ap.window)
			window_end(c, WS_END_MARKER);
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
	ws_conn_count_failure(c, SYNC_FAIL_PARSE, err.msg);
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
		return c->ws->origin ? " (the admin's allowOrigins does not list "
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

/*
 * Why libwebsockets closed a connection the admin did not close. libwebsockets (4.1) ends a
 * connection whose frames break RFC 6455 (a reserved opcode, RSV bits, a fragmented or
 * oversized control frame) without telling why: the close looks like the admin's own. They
 * differ in one thing still visible when CLIENT_CLOSED arrives, before libwebsockets closes
 * the descriptor: an admin that closed the connection has sent its FIN (a read would see
 * the end, 0) or reset it; one whose frame was refused is still there (nothing to read, or
 * more bytes). A peek (MSG_PEEK | MSG_DONTWAIT) reads nothing away.
 */
static int peer_still_there(struct lws *wsi)
{
	lws_sockfd_type fd = lws_get_socket_fd(wsi);
	if (fd < 0)
		return 0;
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

/* libwebsockets' protocol callback. One piece: libwebsockets calls one function per protocol
 * with the reason, so this is the switch over the reasons the session handles, each case a
 * few lines that hand the work to the functions above. */
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
		if (c->ws->origin && add_header(wsi, "Origin:", c->ws->origin, p, end))
			return -1;
		if (c->ws->token && add_header(wsi, "X-Shenyu-Sync-Token:", c->ws->token, p, end))
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
		lws_sul_cancel(&c->sul_handshake);
		c->established = 1;
		c->last_rx_us = gw_mono_us();
		ws_conn_set_state(c, SOURCE_CONN_CONNECTED);
		LOG_I(c->sh->log, "websocket", "server %s: connected", c->url);
		full_sync(c, 0);
		lws_sul_schedule(c->ctx, 0, &c->sul_ping, ping_timer,
		                 c->ws->ping_interval_ms * 1000);
		if (c->ws->sync_every_ms > 0)
			lws_sul_schedule(c->ctx, 0, &c->sul_resync, resync_timer,
			                 c->ws->sync_every_ms * 1000);
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
		if (c->end.kind == SYNC_OK && !c->peer_close_code && c->established &&
		    peer_still_there(wsi)) {
			fail(c, SYNC_FAIL_PARSE, LWS_CLOSE_STATUS_PROTOCOL_ERR,
			     "server %s: WebSocket protocol error: libwebsockets refused what the "
			     "admin sent (a frame RFC 6455 forbids: a reserved opcode, RSV bits "
			     "without an extension, a fragmented or oversized control frame, a "
			     "continuation with no message...%s) and closed the connection",
			     c->url, c->tls ? "; or a TLS record it could not read" : "");
		} else if (c->end.kind == SYNC_OK) {
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
	case LWS_CALLBACK_CLOSED_CLIENT_HTTP:
	case LWS_CALLBACK_WSI_DESTROY:
		/* A connection closed before the upgrade completed (our handshake deadline, or
		 * a timeout of libwebsockets') ends as an HTTP client, not as a WebSocket one:
		 * without this the session would wait for an end that never comes. */
		if (wsi != c->wsi)
			break;
		if (c->end.kind == SYNC_OK)
			fail(c, SYNC_FAIL_CONNECT, LWS_CLOSE_STATUS_NOSTATUS,
			     "server %s: the connection ended before the WebSocket handshake "
			     "completed",
			     c->url);
		c->wsi = NULL;
		c->done = 1;
		/* closed from a timer, before lws_service() polls: end that wait now */
		lws_cancel_service(c->ctx);
		break;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		break; /* conn_stop(): the service loop looks at the flag */
	default:
		break;
	}
	return 0;
}

const struct lws_protocols ws_protocols[] = {
    {"gwsync-shenyu", callback, 0, 65536, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* ---------------------------------------------------------------- one session */

void session_run(struct ws_conn *c)
{
	c->done = c->established = c->synced = c->messages = c->speaks_rm = 0;
	c->n_out = c->want_ping = c->closing = 0;
	c->peer_close_code = 0;
	c->peer_close_reason[0] = '\0';
	c->end.kind = SYNC_OK;
	c->end.msg[0] = '\0';
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
	ci.local_protocol_name = ws_protocols[0].name;
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
		     c->end.msg[0] ? c->end.msg : "the connection could not be started");
		c->done = 1;
	}
	if (!c->done)
		lws_sul_schedule(c->ctx, 0, &c->sul_handshake, handshake_timer,
		                 c->cfg->connect_timeout_ms * 1000);
	while (!c->done && !ws_conn_stopping(c))
		if (lws_service(c->ctx, 0) < 0)
			break;
	lws_sul_cancel(&c->sul_handshake);
	lws_sul_cancel(&c->sul_ping);
	lws_sul_cancel(&c->sul_window);
	lws_sul_cancel(&c->sul_resync);
	ws_apply_window_abort(&c->ap);
}
