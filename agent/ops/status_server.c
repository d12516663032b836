/*
 * The status endpoint over libwebsockets' HTTP server role (see status_server.h), on an lws
 * context and service thread of its own.
 *
 * Why libwebsockets: it is linked anyway for the WebSocket source, so the endpoint costs no
 * library of its own (its context is some 15 KiB of heap), and it speaks HTTP/1.1 well
 * (keep-alive, pipelining, bounded request heads, discarding unread bodies, per-connection
 * timeouts). The previous server, libmicrohttpd, linked GnuTLS for TLS the endpoint never
 * served (GnuTLS itself stays mapped through Debian's libcurl4: bench/README.md).
 *
 * Why our own listening socket: lws's listener cannot be told which connection to close to
 * make room, and when descriptors run out it retries accept() at once, a busy loop. We
 * accept, apply http_limits.h (room made by closing the least recently active connection,
 * per-address bound, pause when descriptors are gone) and hand each connection to lws
 * (lws_adopt_descriptor_vhost_via_info). The listening socket is itself adopted as a raw
 * descriptor, so its readiness wakes the same poll(). A connection's state is a `struct
 * conn`, the wsi's opaque user data, freed when lws destroys the wsi (LWS_CALLBACK_WSI_DESTROY).
 *
 * Threads: everything but start, stop and free runs on the service thread. Idle means
 * asleep: lws's service loop wakes every 30 s for its own housekeeping (lws_sul_plat_unix in
 * lws 4.1; no option turns it off, and nothing of ours needs it), so while no connection is
 * held the thread does not enter it: it sleeps in its own poll() on the listening socket
 * and a stop eventfd, and hands over to lws_service() when a client connects (lws then runs
 * its overdue housekeeping once). Measured: no wake-up at all when idle.
 */
#include "ops/status_server.h"

#include <errno.h>
#include <libwebsockets.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/thread.h"
#include "ops/http_limits.h"
#include "ops/listen_addr.h"
#include "ops/status_routes.h"

#define PAUSE_ACCEPT_MS 100              /* after accept() found no descriptor to use */
#define WARN_EVERY_US   (60 * 1000000LL) /* one warning a minute per kind, at most */
#define HEADERS_CAP     2048             /* our response heads are a few hundred bytes */
#define TX_CHUNK        65536            /* what one send() may carry */
#define PROTOCOL_HTTP   "gwsync-status"
#define PROTOCOL_LISTEN "gwsync-listen"

struct conn {
	struct http_conn hc; /* hc.handle is the wsi */
	int adopting;        /* lws is still adopting it: a failure there frees it here */
};

struct status_server {
	struct status_sources *src;
	struct gw_log *log;
	char address[300];
	int fd;      /* the listening socket (lws closes it with the context) */
	int wake_fd; /* an eventfd: stop wakes the idle poll() */
	size_t max;
	struct lws_context *ctx;
	struct lws_vhost *vh;
	struct lws *listener;
	/* service thread only: */
	struct http_conns conns;
	lws_sorted_usec_list_t resume; /* accepting again after descriptors ran out */
	int64_t warned_full_us, warned_accept_us;
	int accept_paused;
	pthread_t thread;
	int started;
	atomic_int stop;
};

static char listener_tag; /* the listener's opaque user data: not a connection */

/* ---------------------------------------------------------------- responses */

/* A request header, looked up for status_routes.h's handlers. */
static char *request_header(const struct http_request *req, const char *name)
{
	static const struct {
		const char *name;
		enum lws_token_indexes tok;
	} known[] = {
	    {"authorization", WSI_TOKEN_HTTP_AUTHORIZATION},
	    {"origin", WSI_TOKEN_ORIGIN},
	    {"host", WSI_TOKEN_HOST},
	    {"accept", WSI_TOKEN_HTTP_ACCEPT},
	    {"if-none-match", WSI_TOKEN_HTTP_IF_NONE_MATCH},
	    {"content-length", WSI_TOKEN_HTTP_CONTENT_LENGTH},
	    {"transfer-encoding", WSI_TOKEN_HTTP_TRANSFER_ENCODING},
	    {"user-agent", WSI_TOKEN_HTTP_USER_AGENT},
	};
	struct lws *wsi = req->server;
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
		if (strcasecmp(name, known[i].name) != 0)
			continue;
		int n = lws_hdr_total_length(wsi, known[i].tok);
		if (n <= 0)
			return NULL;
		char *v = malloc((size_t)n + 1);
		if (v && lws_hdr_copy(wsi, v, n + 1, known[i].tok) < 0) {
			free(v);
			v = NULL;
		}
		return v;
	}
	/* any other header: lws keeps unknown ones by their lower-case name and colon */
	char key[64];
	size_t nl = strlen(name);
	if (nl + 2 > sizeof key)
		return NULL;
	for (size_t i = 0; i < nl; i++)
		key[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
	key[nl] = ':';
	key[nl + 1] = '\0';
	int n = lws_hdr_custom_length(wsi, key, (int)nl + 1);
	if (n < 0)
		return NULL;
	char *v = malloc((size_t)n + 1);
	if (v && lws_hdr_custom_copy(wsi, v, n + 1, key, (int)nl + 1) < 0) {
		free(v);
		v = NULL;
	}
	return v;
}

static enum http_method method_of(struct lws *wsi, enum lws_token_indexes *tok)
{
	static const struct {
		enum lws_token_indexes tok;
		enum http_method m;
	} map[] = {
	    {WSI_TOKEN_GET_URI, HTTP_GET},         {WSI_TOKEN_POST_URI, HTTP_POST},
	    {WSI_TOKEN_HEAD_URI, HTTP_HEAD},       {WSI_TOKEN_PUT_URI, HTTP_PUT},
	    {WSI_TOKEN_DELETE_URI, HTTP_DELETE},   {WSI_TOKEN_PATCH_URI, HTTP_PATCH},
	    {WSI_TOKEN_OPTIONS_URI, HTTP_OPTIONS},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (lws_hdr_total_length(wsi, map[i].tok) > 0) {
			*tok = map[i].tok;
			return map[i].m;
		}
	return HTTP_OTHER;
}

/* A token's whole value (malloc'd), "" when absent. */
static char *token_dup(struct lws *wsi, enum lws_token_indexes tok)
{
	int n = lws_hdr_total_length(wsi, tok);
	char *v = malloc(n > 0 ? (size_t)n + 1 : 1);
	if (!v)
		return NULL;
	v[0] = '\0';
	if (n > 0 && lws_hdr_copy(wsi, v, n + 1, tok) < 0)
		v[0] = '\0';
	return v;
}

/* The query string: lws keeps each argument as a fragment of WSI_TOKEN_HTTP_URI_ARGS. */
static char *query_of(struct lws *wsi)
{
	int total = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS);
	char *q = malloc(total > 0 ? (size_t)total * 2 + 2 : 1);
	if (!q)
		return NULL;
	size_t len = 0;
	q[0] = '\0';
	for (int i = 0; total > 0; i++) {
		int n = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i);
		if (n <= 0)
			break;
		if (len)
			q[len++] = '&';
		if (lws_hdr_copy_fragment(wsi, q + len, n + 1, WSI_TOKEN_HTTP_URI_ARGS, i) < 0)
			break;
		len += (size_t)n;
	}
	q[len] = '\0';
	return q;
}

/* Send `r` (headers only for HEAD). 0 to keep the connection, -1 to close it. */
static int send_response(struct lws *wsi, const struct http_response *r, int head, int close_after)
{
	size_t body = head ? 0 : r->len;
	unsigned char *buf = malloc(LWS_PRE + HEADERS_CAP + LWS_PRE + body);
	if (!buf)
		return -1;
	unsigned char *start = buf + LWS_PRE, *p = start, *end = start + HEADERS_CAP - 1;
	int bad = lws_add_http_header_status(wsi, r->status | LWSAHH_FLAG_NO_SERVER_NAME, &p, end);
	const char *fixed[][2] = {{"Content-Type:", r->content_type},
	                          {"Cache-Control:", "no-store"},
	                          {"Connection:", close_after ? "close" : NULL}};
	for (size_t i = 0; !bad && i < sizeof fixed / sizeof fixed[0]; i++)
		if (fixed[i][1])
			bad = lws_add_http_header_by_name(wsi, (const unsigned char *)fixed[i][0],
			                                  (const unsigned char *)fixed[i][1],
			                                  (int)strlen(fixed[i][1]), &p, end);
	for (size_t i = 0; !bad && i < HTTP_EXTRA_HEADERS && r->headers[i][0]; i++) {
		char name[64];
		snprintf(name, sizeof name, "%s:", r->headers[i][0]);
		bad = lws_add_http_header_by_name(wsi, (const unsigned char *)name,
		                                  (const unsigned char *)r->headers[i][1],
		                                  (int)strlen(r->headers[i][1]), &p, end);
	}
	if (!bad)
		bad = lws_add_http_header_content_length(wsi, r->len, &p, end) ||
		      lws_finalize_http_header(wsi, &p, end);
	if (!bad)
		bad = lws_write(wsi, start, (size_t)(p - start), LWS_WRITE_HTTP_HEADERS) < 0;
	if (!bad && body) {
		unsigned char *b = start + HEADERS_CAP + LWS_PRE;
		memcpy(b, r->body, body);
		/* lws keeps what the socket cannot take yet and sends it as it can */
		bad = lws_write(wsi, b, body, LWS_WRITE_HTTP_FINAL) < 0;
	}
	free(buf);
	if (bad || close_after)
		return -1;
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/* One complete request head: route it and answer. */
static int serve(struct status_server *srv, struct lws *wsi, struct conn *c, int upgrade)
{
	if (!c)
		return -1;
	http_conns_touch(&srv->conns, &c->hc, gw_mono_us());
	enum lws_token_indexes tok = WSI_TOKEN_GET_URI;
	enum http_method method = method_of(wsi, &tok);
	char peer[64];
	http_peer_text(&c->hc.peer, peer, sizeof peer);
	char *path = token_dup(wsi, tok), *query = query_of(wsi);
	struct http_request req = {method, path ? path : "", query ? query : "",
	                           peer,   request_header,   wsi};
	struct http_response resp;
	memset(&resp, 0, sizeof resp);
	int close_after = 0;
	char *cl = request_header(&req, "content-length");
	if (cl && strtoull(cl, NULL, 10) > HTTP_MAX_BODY_BYTES) {
		resp.status = 413;
		resp.content_type = "text/plain; charset=utf-8";
		resp.body = "request body too large (no route reads a body)\n";
		resp.len = strlen(resp.body);
		close_after = 1; /* rather than reading it all to throw it away */
	} else if (!path || !query) {
		resp.status = 500;
		resp.content_type = "text/plain; charset=utf-8";
		resp.body = "out of memory\n";
		resp.len = strlen(resp.body);
		close_after = 1;
	} else {
		/* lws does not take chunked request bodies apart, and a request asking for
		 * an upgrade is answered before lws has settled HTTP/1.1 on the connection:
		 * after such an answer the connection is closed */
		close_after =
		    upgrade || lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0;
		status_route(srv->src, &req, &resp);
	}
	int rc = send_response(wsi, &resp, method == HTTP_HEAD, close_after);
	http_response_free(&resp);
	free(cl);
	free(path);
	free(query);
	return rc;
}

/* ---------------------------------------------------------------- accepting */

/* Bytes waiting in c's socket: a request about to be read (a probe, say). */
static int has_input(struct http_conn *hc, void *arg)
{
	(void)arg;
	int fd = lws_get_socket_fd(hc->handle), n = 0;
	return fd >= 0 && ioctl(fd, FIONREAD, &n) == 0 && n > 0;
}

/* Close v to make room. shutdown() first: lws would otherwise close it gracefully, waiting
 * for the peer, which a flood never does. */
static void evict(struct status_server *srv, struct http_conn *v)
{
	http_conns_leave(&srv->conns, v);
	int fd = lws_get_socket_fd(v->handle);
	if (fd >= 0)
		shutdown(fd, SHUT_RDWR);
	lws_set_timeout(v->handle, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static int warn_due(int64_t *last)
{
	int64_t now = gw_mono_us();
	if (*last && now - *last < WARN_EVERY_US)
		return 0;
	*last = now;
	return 1;
}

static void admit(struct status_server *srv, int fd, const struct sockaddr_storage *ss,
                  socklen_t sl)
{
	struct http_peer peer;
	http_peer_from(&peer, (const struct sockaddr *)ss, sl);
	struct http_conn *v = http_conns_victim(&srv->conns, &peer, has_input, srv);
	if (v) {
		if (warn_due(&srv->warned_full_us)) {
			char from[64], old[64];
			http_peer_text(&peer, from, sizeof from);
			http_peer_text(&v->peer, old, sizeof old);
			LOG_W(srv->log, "status",
			      "%s: %zu connections held (at most %zu, %d per address): a new one "
			      "from %s closes the least recently active (from %s); further ones "
			      "are not logged for a minute",
			      srv->address, srv->conns.count, srv->conns.max, HTTP_MAX_PER_PEER,
			      from, old);
		}
		evict(srv, v);
	}
	struct conn *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return;
	}
	c->hc.peer = peer;
	c->adopting = 1;
	lws_adopt_desc_t ad;
	memset(&ad, 0, sizeof ad);
	ad.vh = srv->vh;
	ad.type = LWS_ADOPT_SOCKET | LWS_ADOPT_HTTP;
	ad.fd.sockfd = fd;
	ad.vh_prot_name = PROTOCOL_HTTP;
	ad.opaque = c;
	struct lws *wsi = lws_adopt_descriptor_vhost_via_info(&ad);
	c->adopting = 0;
	if (!wsi) { /* lws has closed fd */
		free(c);
		return;
	}
	c->hc.handle = wsi;
	http_conns_add(&srv->conns, &c->hc, gw_mono_us());
}

static void resume_accepting(lws_sorted_usec_list_t *sul)
{
	struct status_server *srv = lws_container_of(sul, struct status_server, resume);
	srv->accept_paused = 0;
	lws_rx_flow_control(srv->listener, 1);
}

/* accept() failed with `e`: never retry at once (the socket stays readable: a busy loop).
 * Out of descriptors, our least recently active connection makes room if there is one;
 * otherwise accepting pauses for PAUSE_ACCEPT_MS. */
static void cannot_accept(struct status_server *srv, int e)
{
	int no_fds = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
	struct http_conn *v = no_fds ? http_conns_victim(&srv->conns, NULL, has_input, srv) : NULL;
	if (warn_due(&srv->warned_accept_us))
		LOG_W(srv->log, "status",
		      "%s: cannot accept a connection: %s; %s (not logged again for a minute)",
		      srv->address, strerror(e),
		      v ? "closing the least recently active one to make room"
		        : "accepting again in 100 ms");
	if (v) {
		evict(srv, v);
		return;
	}
	srv->accept_paused = 1;
	lws_rx_flow_control(srv->listener, 0);
	lws_sul_schedule(srv->ctx, 0, &srv->resume, resume_accepting,
	                 (lws_usec_t)PAUSE_ACCEPT_MS * LWS_US_PER_MS);
}

/* The listening socket is readable: take what is queued, a burst at a time (the requests
 * of those accepted are read in between). */
static void accept_some(struct status_server *srv)
{
	for (int i = 0; i < HTTP_ACCEPT_BURST; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof ss;
		int fd =
		    accept4(srv->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			admit(srv, fd, &ss, sl);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			cannot_accept(srv, errno);
		return;
	}
}

/* ---------------------------------------------------------------- lws */

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                    size_t len)
{
	(void)user, (void)in, (void)len;
	struct lws_context *ctx = lws_get_context(wsi);
	struct status_server *srv = ctx ? lws_context_user(ctx) : NULL;
	void *opaque = lws_get_opaque_user_data(wsi);
	struct conn *c = opaque && opaque != &listener_tag ? opaque : NULL;
	if (!srv)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (opaque == &listener_tag)
			accept_some(srv);
		return 0;
	case LWS_CALLBACK_HTTP:
		return serve(srv, wsi, c, 0);
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		/* no WebSocket, no h2c: the request is answered as it is, then closed */
		serve(srv, wsi, c, 1);
		return -1;
	case LWS_CALLBACK_RAW_ADOPT:
		return -1; /* a CONNECT request would turn the connection into a raw one */
	case LWS_CALLBACK_WSI_DESTROY:
		if (c && !c->adopting) {
			http_conns_remove(&srv->conns, &c->hc);
			free(c);
		}
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols protocols[] = {
    {PROTOCOL_HTTP, callback, 0, 0, 0, NULL, TX_CHUNK},
    {PROTOCOL_LISTEN, callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* Nothing held and accepting: lws has nothing to do until a client connects. */
static int nothing_held(const struct status_server *srv)
{
	return srv->conns.count == 0 && srv->conns.leaving == 0 && !srv->accept_paused;
}

static void *run(void *arg)
{
	struct status_server *srv = arg;
	while (!atomic_load(&srv->stop)) {
		if (nothing_held(srv)) {
			/* asleep until a client comes: the service's stack pages go back */
			gw_thread_shed_stack();
			struct pollfd p[2] = {{srv->fd, POLLIN, 0}, {srv->wake_fd, POLLIN, 0}};
			if (poll(p, 2, -1) <= 0 || !(p[0].revents & (POLLIN | POLLERR | POLLHUP)))
				continue; /* stopped (or EINTR): the loop's test decides */
		}
		if (lws_service(srv->ctx, 0) < 0) {
			LOG_E(srv->log, "status",
			      "%s: the HTTP service stopped; /healthz no longer answers",
			      srv->address);
			break;
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- start and stop */

/* A listening socket on exactly ai, or -1 with the reason in why. */
static int bind_one(const struct addrinfo *ai, struct gw_err *why)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		gw_errf(why, "cannot create a socket: %s", strerror(errno));
		return -1;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ai->ai_family == AF_INET6) /* [::] means IPv6 only */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
		gw_errf(why, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int serve_on(struct status_server *srv, struct gw_err *err)
{
	/* lws's own log is global and goes to stderr; the agent logs what matters itself */
	lws_set_log_level(0, NULL);
	struct lws_context_creation_info info;
	memset(&info, 0, sizeof info);
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.options =
	    LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_SKIP_SERVER_CANONICAL_NAME;
	info.gid = (gid_t)-1;
	info.uid = (uid_t)-1;
	info.user = srv;
	info.count_threads = 1;
	/* the held connections, a burst of accepted ones whose victims are not closed yet,
	 * the listener and lws's own */
	info.fd_limit_per_thread = (unsigned)(srv->max + HTTP_ACCEPT_BURST + 8);
	info.timeout_secs = HTTP_HEADER_TIMEOUT_S;
	info.max_http_header_data = HTTP_MAX_HEADER_BYTES;
	srv->ctx = lws_create_context(&info);
	if (!srv->ctx)
		return gw_errf(err, "status.listen %s: cannot create the HTTP server",
		               srv->src->cfg->status_listen);
	struct lws_context_creation_info vi;
	memset(&vi, 0, sizeof vi);
	vi.port = CONTEXT_PORT_NO_LISTEN_SERVER;
	vi.protocols = protocols;
	vi.vhost_name = "status";
	vi.keepalive_timeout = HTTP_KEEPALIVE_TIMEOUT_S;
	vi.timeout_secs_ah_idle = HTTP_HEADER_TIMEOUT_S;
	srv->vh = lws_create_vhost(srv->ctx, &vi);
	if (srv->vh) {
		lws_adopt_desc_t ad;
		memset(&ad, 0, sizeof ad);
		ad.vh = srv->vh;
		ad.type = LWS_ADOPT_RAW_FILE_DESC;
		ad.fd.filefd = srv->fd;
		ad.vh_prot_name = PROTOCOL_LISTEN;
		ad.opaque = &listener_tag;
		srv->listener = lws_adopt_descriptor_vhost_via_info(&ad);
	}
	if (!srv->listener) {
		lws_context_destroy(srv->ctx);
		srv->ctx = NULL;
		return gw_errf(err, "status.listen %s: cannot set up the HTTP server",
		               srv->src->cfg->status_listen);
	}
	return 0; /* lws owns the socket now */
}

int status_server_start(struct status_server **out, struct status_sources *src, struct gw_err *err)
{
	*out = NULL;
	const char *listen = src->cfg->status_listen;
	if (!listen)
		return 0;
	struct listen_addr la;
	if (listen_addr_parse(listen, &la, err) != 0)
		return -1;

	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = la.ipv6 ? AF_INET6 : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | (la.ipv6 ? AI_NUMERICHOST : 0);
	int gai = getaddrinfo(la.host, la.port, &hints, &res);
	if (gai != 0)
		return gw_errf(err, "status.listen %s: cannot resolve '%s': %s", listen, la.host,
		               gai_strerror(gai));

	struct status_server *srv = calloc(1, sizeof *srv);
	if (!srv) {
		freeaddrinfo(res);
		return gw_errf(err, "status.listen %s: out of memory", listen);
	}
	srv->src = src;
	srv->log = src->log;
	srv->fd = -1;
	atomic_init(&srv->stop, 0);
	srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->wake_fd < 0) {
		int e = errno;
		freeaddrinfo(res);
		free(srv);
		return gw_errf(err, "status.listen %s: cannot create an eventfd: %s", listen,
		               strerror(e));
	}
	struct gw_err why;
	gw_errf(&why, "no IPv4 or IPv6 address");
	for (const struct addrinfo *ai = res; ai && srv->fd < 0; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		srv->fd = bind_one(ai, &why);
		if (srv->fd >= 0) {
			char host[NI_MAXHOST] = "?";
			getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, NULL, 0,
			            NI_NUMERICHOST);
			snprintf(srv->address, sizeof srv->address,
			         ai->ai_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, la.port);
		}
	}
	freeaddrinfo(res);
	if (srv->fd < 0) {
		gw_errf(err, "status.listen %s: %s", listen, why.msg);
		close(srv->wake_fd);
		free(srv);
		return -1;
	}

	char note[512];
	srv->max = http_fd_budget(HTTP_MAX_CONNECTIONS, HTTP_FD_RESERVE, note, sizeof note);
	http_conns_init(&srv->conns, srv->max, HTTP_MAX_PER_PEER);
	if (serve_on(srv, err) != 0) {
		close(srv->fd);
		close(srv->wake_fd);
		free(srv);
		return -1;
	}
	int rc = gw_thread_start(&srv->thread, "status", run, srv);
	if (rc != 0) {
		lws_context_destroy(srv->ctx);
		close(srv->wake_fd);
		free(srv);
		return gw_errf(err, "status.listen %s: cannot start the thread: %s", listen,
		               strerror(rc));
	}
	srv->started = 1;
	if (note[0])
		LOG_I(srv->log, "status", "%s", note);
	LOG_I(srv->log, "status", "serving http://%s/ (/healthz, /status, /metrics%s)",
	      srv->address,
	      src->cfg && src->cfg->status_token
	          ? ", POST /sync/pause and /sync/resume with the token"
	          : "; read-only");
	*out = srv;
	return 0;
}

void status_server_stop(struct status_server *srv)
{
	if (!srv || atomic_exchange(&srv->stop, 1))
		return;
	uint64_t one = 1;
	ssize_t n = write(srv->wake_fd, &one, sizeof one); /* wakes the idle poll() */
	(void)n;                      /* an eventfd far below its maximum takes it */
	lws_cancel_service(srv->ctx); /* wakes lws_service() */
}

void status_server_free(struct status_server *srv)
{
	if (!srv)
		return;
	status_server_stop(srv);
	if (srv->started)
		pthread_join(srv->thread, NULL);
	lws_sul_cancel(&srv->resume);
	/* closes the listener and every connection; each one's WSI_DESTROY frees its conn */
	lws_context_destroy(srv->ctx);
	close(srv->wake_fd);
	free(srv);
}

const char *status_server_address(const struct status_server *srv)
{
	return srv->address;
}

size_t status_server_max_connections(const struct status_server *srv)
{
	return srv->max;
}
