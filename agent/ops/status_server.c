/*
 * The status endpoint over libmicrohttpd (see status_server.h). One internal polling
 * thread serves every connection: each request takes a status view (microseconds, no
 * waiting on plugins or admins) and renders it, so one thread is plenty and the agent's
 * other threads never see the endpoint. MHD binds the address itself (MHD_OPTION_SOCK_ADDR)
 * so it owns the socket's whole life; why a bind failed reaches us through its logger.
 */
#include "ops/status_server.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "ops/listen_addr.h"
#include "ops/metrics.h"
#include "ops/status_json.h"

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

struct status_server {
	struct MHD_Daemon *mhd;
	struct status_sources *src;
	struct gw_log *log;
	char address[300];
	char start_error[512]; /* MHD's last complaint while starting */
	atomic_int starting;   /* the logger runs on MHD's thread once started */
};

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	struct status_server *srv = cls;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	if (atomic_load(&srv->starting))
		snprintf(srv->start_error, sizeof srv->start_error, "%s", msg);
	else
		LOG_W(srv->log, "status", "%s", msg);
}

/* Queue a response owning `body` (malloc'd; freed by MHD). */
static mhd_result respond(struct MHD_Connection *c, unsigned status, const char *type, char *body,
                          size_t len, const char *allow)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	mhd_result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static mhd_result respond_text(struct MHD_Connection *c, unsigned status, const char *allow,
                               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static mhd_result respond_text(struct MHD_Connection *c, unsigned status, const char *allow,
                               const char *fmt, ...)
{
	char *body = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		return MHD_NO;
	return respond(c, status, "text/plain; charset=utf-8", body, (size_t)n, allow);
}

static mhd_result respond_json(struct MHD_Connection *c, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
	json_decref(doc);
	if (!text)
		return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory\n");
	size_t len = strlen(text);
	char *body = realloc(text, len + 2);
	if (!body) {
		free(text);
		return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory\n");
	}
	body[len] = '\n';
	body[len + 1] = '\0';
	return respond(c, status, "application/json", body, len + 1, NULL);
}

/* Take a view or answer 500. */
static int take_view(struct status_server *srv, struct MHD_Connection *c, struct status_view *v,
                     mhd_result *rc)
{
	struct gw_err err = {{0}};
	if (status_view_take(srv->src, v, &err) == 0)
		return 0;
	*rc = respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s\n", err.msg);
	return -1;
}

static mhd_result get_healthz(struct status_server *srv, struct MHD_Connection *c)
{
	struct status_view v;
	mhd_result rc;
	if (take_view(srv, c, &v, &rc) != 0)
		return rc;
	char why[512];
	int ok = status_healthy(&v, why, sizeof why);
	status_view_free(&v);
	return respond_text(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s\n", why);
}

static mhd_result get_status(struct status_server *srv, struct MHD_Connection *c)
{
	struct status_view v;
	mhd_result rc;
	if (take_view(srv, c, &v, &rc) != 0)
		return rc;
	json_t *doc = status_json(&v);
	status_view_free(&v);
	return respond_json(c, MHD_HTTP_OK, doc);
}

static mhd_result get_metrics(struct status_server *srv, struct MHD_Connection *c)
{
	struct status_view v;
	mhd_result rc;
	if (take_view(srv, c, &v, &rc) != 0)
		return rc;
	char *text = NULL;
	size_t len = 0;
	struct gw_err err = {{0}};
	int bad = metrics_render(&v, &text, &len, &err);
	status_view_free(&v);
	if (bad)
		return respond_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s\n", err.msg);
	return respond(c, MHD_HTTP_OK, METRICS_CONTENT_TYPE, text, len, NULL);
}

/* "POST /sync/pause from 127.0.0.1" for the log and the state file. */
static void describe_requester(struct MHD_Connection *c, const char *url, char *buf, size_t cap)
{
	char host[NI_MAXHOST] = "?";
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr) {
		socklen_t len = ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
		                                                       : sizeof(struct sockaddr_in);
		if (getnameinfo(ci->client_addr, len, host, sizeof host, NULL, 0, NI_NUMERICHOST))
			snprintf(host, sizeof host, "?");
	}
	snprintf(buf, cap, "POST %.32s from %.64s", url, host);
}

/* Equal in time whatever the input: how long a wrong token takes to refuse must not tell
 * how much of it was right. */
static int same_secret(const char *given, const char *want)
{
	size_t gl = strlen(given), wl = strlen(want);
	unsigned char diff = (unsigned char)(gl != wl);
	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(want[i] ^ (i < gl ? given[i] : 0));
	return diff == 0;
}

/* POST changes the agent: only with `Authorization: Bearer <status.token>`. Without a
 * configured token the endpoint is read-only (pause and resume go through the control
 * socket, whose file permissions say who may). */
static int authorized(struct status_server *srv, struct MHD_Connection *c)
{
	const char *token = srv->src->cfg ? srv->src->cfg->status_token : NULL;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (!token || !h || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	return same_secret(h + 7, token);
}

static mhd_result respond_unauthorized(struct status_server *srv, struct MHD_Connection *c)
{
	const char *text =
	    srv->src->cfg && srv->src->cfg->status_token
	        ? "a POST needs Authorization: Bearer <status.token>\n"
	        : "this endpoint is read-only (no status.token is configured); pause and resume "
	          "with gwsyncd --pause / --resume (the control socket)\n";
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"gwsync\"");
	mhd_result rc = MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	return rc;
}

static mhd_result post_pause(struct status_server *srv, struct MHD_Connection *c, const char *url,
                             int paused)
{
	if (MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"))
		return respond_text(
		    c, MHD_HTTP_FORBIDDEN, NULL,
		    "requests from web pages (with an Origin header) may not change "
		    "the agent\n");
	if (!authorized(srv, c))
		return respond_unauthorized(srv, c);
	if (!srv->src->pause)
		return respond_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
		                    "the pause switch is not available\n");
	char who[128];
	describe_requester(c, url, who, sizeof who);
	int changed = 0, persisted = 0;
	struct gw_err err = {{0}};
	int rc = pause_set(srv->src->pause, paused, who, &changed, &persisted, &err);
	json_t *doc = json_pack("{s:b, s:b, s:b, s:s, s:s?}", "paused", paused, "changed", changed,
	                        "persisted", persisted, "stateFile", pause_path(srv->src->pause),
	                        "error", rc != 0 ? err.msg : NULL);
	return respond_json(c, rc == 0 ? MHD_HTTP_OK : MHD_HTTP_INTERNAL_SERVER_ERROR, doc);
}

static mhd_result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                         const char *version, const char *upload_data, size_t *upload_data_size,
                         void **con_cls)
{
	struct status_server *srv = cls;
	(void)version, (void)upload_data;
	/* MHD calls again for each piece of a body and once more at its end; we answer on
	 * that last call. A non-NULL *con_cls marks a request whose first call was seen. */
	if (*con_cls == NULL) {
		*con_cls = srv;
		return MHD_YES;
	}
	if (*upload_data_size != 0) {
		*upload_data_size = 0; /* no route reads a body: discard it */
		return MHD_YES;
	}
	int get =
	    strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;

	if (strcmp(url, "/healthz") == 0 || strcmp(url, "/status") == 0 ||
	    strcmp(url, "/metrics") == 0) {
		if (!get)
			return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD",
			                    "%s: use GET\n", url);
		if (strcmp(url, "/healthz") == 0)
			return get_healthz(srv, c);
		if (strcmp(url, "/status") == 0)
			return get_status(srv, c);
		return get_metrics(srv, c);
	}
	if (strcmp(url, "/sync/pause") == 0 || strcmp(url, "/sync/resume") == 0) {
		if (!post)
			return respond_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "POST",
			                    "%s: use POST\n", url);
		return post_pause(srv, c, url, strcmp(url, "/sync/pause") == 0);
	}
	return respond_text(c, MHD_HTTP_NOT_FOUND, NULL,
	                    "not found; try /healthz, /status, /metrics, POST /sync/pause or "
	                    "POST /sync/resume\n");
}

static struct MHD_Daemon *start_on(struct status_server *srv, const struct addrinfo *ai,
                                   uint16_t port)
{
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6; /* without MHD_USE_DUAL_STACK: IPv6 only */
	/* MHD binds ai_addr; the port argument only makes its messages name the port */
	return MHD_start_daemon(flags, port, NULL, NULL, handle, srv, MHD_OPTION_SOCK_ADDR,
	                        ai->ai_addr, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
	                        MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
	                        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
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
	atomic_init(&srv->starting, 1);
	snprintf(srv->start_error, sizeof srv->start_error, "cannot start the HTTP server");
	for (const struct addrinfo *ai = res; ai && !srv->mhd; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		srv->mhd = start_on(srv, ai, (uint16_t)atoi(la.port));
		if (srv->mhd) {
			char host[NI_MAXHOST] = "?";
			getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, NULL, 0,
			            NI_NUMERICHOST);
			snprintf(srv->address, sizeof srv->address,
			         ai->ai_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, la.port);
		}
	}
	freeaddrinfo(res);
	if (!srv->mhd) {
		gw_errf(err, "status.listen %s: %s", listen, srv->start_error);
		free(srv);
		return -1;
	}
	atomic_store(&srv->starting, 0);
	LOG_I(srv->log, "status", "serving http://%s/ (/healthz, /status, /metrics%s)",
	      srv->address,
	      src->cfg && src->cfg->status_token
	          ? ", POST /sync/pause and /sync/resume with the token"
	          : "; read-only");
	*out = srv;
	return 0;
}

void status_server_free(struct status_server *srv)
{
	if (!srv)
		return;
	MHD_stop_daemon(srv->mhd);
	free(srv);
}

const char *status_server_address(const struct status_server *srv)
{
	return srv->address;
}
