/*
 * The status endpoint's routes (see status_routes.h): the table, then one handler per
 * route. A handler fills the response; the table decides 404 and 405 before it runs.
 */
#include "ops/status_routes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops/metrics.h"
#include "ops/status_json.h"

#define TEXT "text/plain; charset=utf-8"

struct route {
	const char *path;
	unsigned methods; /* enum http_method bits */
	const char *allow;
	void (*handle)(struct status_sources *src, const struct http_request *req,
	               struct http_response *resp);
};

/* ---------------------------------------------------------------- building responses */

static void set_static(struct http_response *r, unsigned status, const char *text)
{
	http_response_free(r);
	r->status = status;
	r->content_type = TEXT;
	r->body = text;
	r->len = strlen(text);
}

static void set_owned(struct http_response *r, unsigned status, const char *type, char *body,
                      size_t len)
{
	http_response_free(r);
	r->status = status;
	r->content_type = type;
	r->body = r->owned = body;
	r->len = len;
}

static void add_header(struct http_response *r, const char *name, const char *value)
{
	for (size_t i = 0; i < HTTP_EXTRA_HEADERS; i++)
		if (!r->headers[i][0]) {
			r->headers[i][0] = name;
			r->headers[i][1] = value;
			return;
		}
}

static void set_text(struct http_response *r, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_text(struct http_response *r, unsigned status, const char *fmt, ...)
{
	char *body = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&body, fmt, ap);
	va_end(ap);
	if (n < 0)
		set_static(r, 500, "out of memory\n");
	else
		set_owned(r, status, TEXT, body, (size_t)n);
}

/* The document, indented, with a final newline; takes `doc`. */
static void set_json(struct http_response *r, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
	json_decref(doc);
	size_t len = text ? strlen(text) : 0;
	char *body = text ? realloc(text, len + 2) : NULL;
	if (!body) {
		free(text);
		set_static(r, 500, "out of memory\n");
		return;
	}
	body[len] = '\n';
	body[len + 1] = '\0';
	set_owned(r, status, "application/json", body, len + 1);
}

void http_response_free(struct http_response *resp)
{
	free(resp->owned);
	resp->owned = NULL;
	resp->body = NULL;
	resp->len = 0;
}

/* Take a view or answer 500. */
static int take_view(struct status_sources *src, struct status_view *v, struct http_response *r)
{
	struct gw_err err = {{0}};
	if (status_view_take(src, v, &err) == 0)
		return 0;
	set_text(r, 500, "%s\n", err.msg);
	return -1;
}

/* ---------------------------------------------------------------- GET */

static void get_healthz(struct status_sources *src, const struct http_request *req,
                        struct http_response *r)
{
	(void)req;
	struct status_view v;
	if (take_view(src, &v, r) != 0)
		return;
	char why[512];
	int ok = status_healthy(&v, why, sizeof why);
	status_view_free(&v);
	set_text(r, ok ? 200 : 503, "%s\n", why);
}

static void get_status(struct status_sources *src, const struct http_request *req,
                       struct http_response *r)
{
	(void)req;
	struct status_view v;
	if (take_view(src, &v, r) != 0)
		return;
	json_t *doc = status_json(&v);
	status_view_free(&v);
	set_json(r, 200, doc);
}

static void get_metrics(struct status_sources *src, const struct http_request *req,
                        struct http_response *r)
{
	(void)req;
	struct status_view v;
	if (take_view(src, &v, r) != 0)
		return;
	char *text = NULL;
	size_t len = 0;
	struct gw_err err = {{0}};
	int bad = metrics_render(&v, &text, &len, &err);
	status_view_free(&v);
	if (bad)
		set_text(r, 500, "%s\n", err.msg);
	else
		set_owned(r, 200, METRICS_CONTENT_TYPE, text, len);
}

/* ---------------------------------------------------------------- POST */

int status_same_secret(const char *given, const char *want)
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
static int authorized(struct status_sources *src, const struct http_request *req)
{
	const char *token = src->cfg ? src->cfg->status_token : NULL;
	if (!token)
		return 0;
	char *h = req->header(req, "Authorization");
	int ok = h && strncasecmp(h, "Bearer ", 7) == 0 && status_same_secret(h + 7, token);
	if (h) {
		explicit_bzero(h, strlen(h));
		free(h);
	}
	return ok;
}

static void post_pause(struct status_sources *src, const struct http_request *req,
                       struct http_response *r)
{
	char *origin = req->header(req, "Origin");
	if (origin) {
		free(origin);
		set_static(r, 403,
		           "requests from web pages (with an Origin header) may not change the "
		           "agent\n");
		return;
	}
	if (!authorized(src, req)) {
		set_static(r, 401,
		           src->cfg && src->cfg->status_token
		               ? "a POST needs Authorization: Bearer <status.token>\n"
		               : "this endpoint is read-only (no status.token is configured); "
		                 "pause and resume with gwsyncd --pause / --resume (the control "
		                 "socket)\n");
		add_header(r, "WWW-Authenticate", "Bearer realm=\"gwsync\"");
		return;
	}
	if (!src->pause) {
		set_static(r, 503, "the pause switch is not available\n");
		return;
	}
	int paused = strcmp(req->path, "/sync/pause") == 0;
	char who[128];
	snprintf(who, sizeof who, "POST %.32s from %.64s", req->path, req->peer);
	int changed = 0, persisted = 0;
	struct gw_err err = {{0}};
	int rc = pause_set(src->pause, paused, who, &changed, &persisted, &err);
	json_t *doc = json_pack("{s:b, s:b, s:b, s:s, s:s?}", "paused", paused, "changed", changed,
	                        "persisted", persisted, "stateFile", pause_path(src->pause),
	                        "error", rc != 0 ? err.msg : NULL);
	set_json(r, rc == 0 ? 200 : 500, doc);
}

/* ---------------------------------------------------------------- the table */

static const struct route routes[] = {
    {"/healthz", HTTP_GET | HTTP_HEAD, "GET, HEAD", get_healthz},
    {"/status", HTTP_GET | HTTP_HEAD, "GET, HEAD", get_status},
    {"/metrics", HTTP_GET | HTTP_HEAD, "GET, HEAD", get_metrics},
    {"/sync/pause", HTTP_POST, "POST", post_pause},
    {"/sync/resume", HTTP_POST, "POST", post_pause},
};

void status_route(struct status_sources *src, const struct http_request *req,
                  struct http_response *resp)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const struct route *rt = &routes[i];
		if (strcmp(req->path, rt->path) != 0)
			continue;
		if (!(req->method & rt->methods)) {
			set_text(resp, 405, "%s: use %s\n", rt->path,
			         rt->methods & HTTP_GET ? "GET" : "POST");
			add_header(resp, "Allow", rt->allow);
			return;
		}
		rt->handle(src, req, resp);
		return;
	}
	set_static(resp, 404,
	           "not found; try /healthz, /status, /metrics, POST /sync/pause or POST "
	           "/sync/resume\n");
}
