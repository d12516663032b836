/*
 * Inside one WebSocket connection (private to source/websocket/): the state a connection's
 * thread keeps (conn.c: the thread, its reconnect loop and retry schedule) and its
 * sessions use (session.c: one connection to the admin, serviced until it ends, with its
 * libwebsockets callbacks, messages and timers). Only conn_stop() and conn_status() touch
 * it from another thread, under `mu`.
 */
#ifndef GW_WS_SESSION_H
#define GW_WS_SESSION_H

#include <libwebsockets.h>
#include <pthread.h>

#include "shared/strbuf.h"
#include "source/retry.h"
#include "source/websocket/conn.h"

/* An admin before 2.7 answers no RUNNING_MODE, so its MYSELF answer is taken as ended
 * after QUIET_US without a byte once a MYSELF message came, or after WINDOW_MAX_US. An
 * admin that answered RUNNING_MODE once is waited for until its end marker comes (a big
 * group can take it long to write; a dead connection is found by the pings). */
#define QUIET_US      (3 * LWS_USEC_PER_SEC)
#define WINDOW_MAX_US (10 * LWS_USEC_PER_SEC)
#define MAX_OUT       8

struct ws_config;

struct ws_conn {
	struct ws_shared *sh;
	const struct cfg *cfg;
	const struct ws_config *ws; /* admin.websocket (config.h) */
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
	int speaks_rm;   /* the admin answered RUNNING_MODE in this session (2.7+) */
	int64_t window_start_us, last_rx_us;
	const char *out[MAX_OUT];
	int n_out, want_ping;
	int destroying; /* conn_free: the context is going, callbacks do nothing */
	int closing;    /* close with close_code at the next writeable */
	enum lws_close_status close_code;
	int peer_close_code;
	char peer_close_reason[124];
	struct gw_err end; /* why the session ended; kind SYNC_OK: it has not failed */
	lws_sorted_usec_list_t sul_ping, sul_window, sul_resync;
	lws_sorted_usec_list_t sul_handshake; /* connect + upgrade within connect_timeout */
};

/* The protocol table every connection's context is made with. */
extern const struct lws_protocols ws_protocols[];

/* One session: connect, handshake, full sync, messages, until it ends or stop. c->end then
 * says why it ended; c->synced whether a full sync completed. */
void session_run(struct ws_conn *c);

/* conn.c, for the session: the stop flag, the state /status shows, a counted failure. */
int ws_conn_stopping(struct ws_conn *c);
void ws_conn_set_state(struct ws_conn *c, enum source_conn_state s);
void ws_conn_count_failure(struct ws_conn *c, enum sync_fail why, const char *msg);

#endif
