/*
 * What the status endpoint answers, apart from how HTTP is spoken (status_server.c): one
 * table of routes, each a path, the methods it takes and a handler that fills a response
 * from a request. Handlers never see the HTTP library, so a route is added by writing one
 * function and one table line, and tested without a socket.
 *
 *   GET  /              the status page (status_page.h), with a Content-Security-Policy
 *   GET  /healthz       200 "ok" | 503 and a one-line reason (status_view.h)
 *   GET  /status        the JSON document of status_json.h
 *   GET  /history       the change history (store/history.h); ?group=, ?since=, ?limit=
 *   GET  /config/GROUP  the held version, secrets redacted (redact.h); 404 unless
 *                       status.expose_config is on
 *   GET  /metrics       Prometheus text (metrics.h)
 *   POST /sync/pause    stop delivering to subscribers (pause.h); JSON reply
 *   POST /sync/resume   deliver again
 *
 * Any other path is 404, another method on a known path 405 (with Allow). HEAD works where
 * GET does (the server sends the GET answer's headers without its body). Every answer
 * carries Cache-Control: no-store. A POST changes the agent only with
 * `Authorization: Bearer <status.token>` (compared in constant time); without a configured
 * token the endpoint is read-only. A POST carrying an Origin header (a web browser on some
 * page) is refused with 403, so a page the operator happens to visit cannot pause the agent
 * behind their back.
 *
 * Requests only read snapshots (status_view_take): a handler never waits on a plugin, a
 * poll or the disk, except for the pause file write on POST.
 */
#ifndef GW_STATUS_ROUTES_H
#define GW_STATUS_ROUTES_H

#include <stddef.h>

#include "ops/status_view.h"

enum http_method {
	HTTP_GET = 1 << 0,
	HTTP_HEAD = 1 << 1,
	HTTP_POST = 1 << 2,
	HTTP_PUT = 1 << 3,
	HTTP_DELETE = 1 << 4,
	HTTP_PATCH = 1 << 5,
	HTTP_OPTIONS = 1 << 6,
	HTTP_OTHER = 1 << 7,
};

struct http_request {
	enum http_method method;
	const char *path;  /* decoded, without the query: "/status" */
	const char *query; /* "group=RULE&since=5", "" when none */
	const char *peer;  /* the client's address, "127.0.0.1" */
	/* A request header's value (malloc'd, the caller frees), NULL when absent. */
	char *(*header)(const struct http_request *req, const char *name);
	void *server; /* the server's own, for header() */
};

#define HTTP_EXTRA_HEADERS 4

struct http_response {
	unsigned status;
	const char *content_type;
	const char *body; /* NULL or len bytes */
	size_t len;
	char *owned;        /* what to free once sent (usually body), or NULL for a static body */
	char *owned_header; /* a header value to free with the response (a computed policy) */
	/* further headers, e.g. {"Allow", "GET, HEAD"}; unused slots have a NULL name */
	const char *headers[HTTP_EXTRA_HEADERS][2];
};

/*
 * Answer `req` into `resp` (zeroed by the caller). Always fills a response: a failure to
 * build one (out of memory) is a 500 with a static body. Free with http_response_free().
 */
void status_route(struct status_sources *src, const struct http_request *req,
                  struct http_response *resp);

void http_response_free(struct http_response *resp);

/* Equal in time whatever the input (how long a wrong token takes to refuse must not tell
 * how much of it was right). */
int status_same_secret(const char *given, const char *want);

#endif
