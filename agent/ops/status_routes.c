/*
 * The status endpoint's routes (see status_routes.h): the table, then one handler per
 * route. A handler fills the response; the table decides 404 and 405 before it runs.
 */
#include "ops/history_json.h"
#include "ops/status_routes.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "shared/strbuf.h"
#include "model/groups.h"
#include "ops/metrics.h"
#include "ops/redact.h"
#include "ops/status_json.h"
#include "ops/status_page.h"

#define TEXT              "text/plain; charset=utf-8"
#define HISTORY_LIMIT_MAX 100000

struct route {
	const char *path;
	int prefix;       /* the path starts with `path` (which ends in '/') */
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
	free(resp->owned_header);
	resp->owned_header = NULL;
	resp->owned = NULL;
	resp->body = NULL;
	resp->len = 0;
}

/* Take a view or answer 500. */
static int take_view(struct status_sources *src, struct status_view *v, struct http_response *r)
{
	struct gw_err err = {0};
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
	struct gw_err why;
	int ok = status_healthy(&v, &why);
	status_view_free(&v);
	set_text(r, ok ? 200 : 503, "%s\n", why.msg);
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
	struct gw_err err = {0};
	int bad = metrics_render(&v, &text, &len, &err);
	status_view_free(&v);
	if (bad)
		set_text(r, 500, "%s\n", err.msg);
	else
		set_owned(r, 200, METRICS_CONTENT_TYPE, text, len);
}

/* ---------------------------------------------------------------- the history */

/* The configured group called `name` (len bytes), or -1. */
static int configured_group(const struct cfg *cfg, const char *name, size_t len)
{
	for (size_t k = 0; k < cfg->n_groups; k++) {
		const char *g = gw_group_name(cfg->groups[k]);
		if (strlen(g) == len && memcmp(g, name, len) == 0)
			return (int)cfg->groups[k];
	}
	return -1;
}

static void configured_list(const struct cfg *cfg, char *buf, size_t cap)
{
	size_t pos = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < cfg->n_groups && pos < cap; k++) {
		int n = snprintf(buf + pos, cap - pos, "%s%s", k ? ", " : "",
		                 gw_group_name(cfg->groups[k]));
		pos += n > 0 ? (size_t)n : 0;
	}
}

/* A decimal number of at most 18 digits into *out; 0, or -1. */
static int decimal(const char *s, size_t len, int64_t *out)
{
	if (len == 0 || len > 18)
		return -1;
	int64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

struct history_query {
	unsigned groups; /* bits of enum gw_group */
	int64_t since_ms;
	size_t limit;
};

/* group=RULE[,SELECTOR...] (repeatable), since=<ms>, limit=<n>; anything else is refused with
 * the reason in `why` (a 400). */
static int parse_history_query(const struct cfg *cfg, const char *query, struct history_query *q,
                               struct gw_err *why)
{
	memset(q, 0, sizeof *q);
	int any_group = 0;
	for (const char *p = query; *p;) {
		size_t n = strcspn(p, "&");
		const char *eq = memchr(p, '=', n);
		size_t kl = eq ? (size_t)(eq - p) : n;
		const char *v = eq ? eq + 1 : p + n;
		size_t vl = (size_t)(p + n - v);
		if (kl == 5 && memcmp(p, "group", 5) == 0) {
			for (const char *g = v; g < v + vl;) {
				size_t gl = strcspn(g, ",&");
				if (gl > (size_t)(v + vl - g))
					gl = (size_t)(v + vl - g);
				int grp = configured_group(cfg, g, gl);
				if (grp < 0) {
					char list[256];
					configured_list(cfg, list, sizeof list);
					gw_errf(why, "group: '%.*s' is not a configured group (%s)",
					        (int)(gl < 64 ? gl : 64), g, list);
					return -1;
				}
				q->groups |= 1u << grp;
				any_group = 1;
				g += gl + 1;
			}
			if (!vl) {
				gw_errf(why, "group: give a group name, e.g. group=RULE");
				return -1;
			}
		} else if (kl == 5 && memcmp(p, "since", 5) == 0) {
			if (decimal(v, vl, &q->since_ms) != 0) {
				gw_errf(why,
				        "since: expected milliseconds since the epoch (digits), "
				        "got '%.*s'",
				        (int)(vl < 64 ? vl : 64), v);
				return -1;
			}
		} else if (kl == 5 && memcmp(p, "limit", 5) == 0) {
			int64_t l;
			if (decimal(v, vl, &l) != 0 || l < 1 || l > HISTORY_LIMIT_MAX) {
				gw_errf(why, "limit: expected a number from 1 to %d, got '%.*s'",
				        HISTORY_LIMIT_MAX, (int)(vl < 64 ? vl : 64), v);
				return -1;
			}
			q->limit = (size_t)l;
		} else if (n) {
			gw_errf(why, "unknown parameter '%.*s' (group, since, limit)",
			        (int)(kl < 64 ? kl : 64), p);
			return -1;
		}
		p += n + (p[n] == '&');
	}
	if (!any_group)
		q->groups = ~0u;
	return 0;
}

/* The history document of the configured groups, with "now". NULL on out of memory. */
static json_t *history_doc(struct status_sources *src, const struct history_query *q)
{
	history_settle(src->history); /* counts a reader needs now, if the writer has not yet */
	json_t *doc = history_json(src->history, src->cfg->groups, src->cfg->n_groups, q->groups,
	                           q->since_ms, q->limit);
	if (doc && json_object_set_new(doc, "now", json_integer((json_int_t)gw_wall_ms())) != 0) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

static void get_history(struct status_sources *src, const struct http_request *req,
                        struct http_response *r)
{
	if (!src->history) {
		set_static(r, 503, "no history is kept\n");
		return;
	}
	struct history_query q;
	struct gw_err why;
	if (parse_history_query(src->cfg, req->query, &q, &why) != 0) {
		set_text(r, 400, "%s\n", why.msg);
		return;
	}
	set_json(r, 200, history_doc(src, &q));
}

/* ---------------------------------------------------------------- the page */

static void get_page(struct status_sources *src, const struct http_request *req,
                     struct http_response *r)
{
	(void)req;
	struct status_view v;
	if (take_view(src, &v, r) != 0)
		return;
	json_t *status = status_json(&v);
	status_view_free(&v);
	struct history_query q = {~0u, 0, STATUS_PAGE_TIMELINE};
	json_t *history = src->history ? history_doc(src, &q) : NULL;
	char *page = NULL, *csp = malloc(512);
	size_t len = 0;
	int bad = !status || (src->history && !history) || !csp || status_page_csp(csp, 512) != 0 ||
	          status_page_render(status, history, &page, &len) != 0;
	json_decref(status);
	json_decref(history);
	if (bad) {
		free(csp);
		free(page);
		set_static(r, 500, "out of memory\n");
		return;
	}
	set_owned(r, 200, "text/html; charset=utf-8", page, len);
	r->owned_header = csp;
	add_header(r, "Content-Security-Policy", csp);
	add_header(r, "X-Content-Type-Options", "nosniff");
	add_header(r, "Referrer-Policy", "no-referrer");
	add_header(r, "X-Frame-Options", "DENY");
}

/* ---------------------------------------------------------------- /config/GROUP */

static void get_config(struct status_sources *src, const struct http_request *req,
                       struct http_response *r)
{
	const char *name = req->path + strlen("/config/");
	if (!src->cfg->status_expose_config) {
		set_static(r, 404,
		           "not found: /config/<GROUP> is off (status.expose_config: true turns it "
		           "on)\n");
		return;
	}
	int g = configured_group(src->cfg, name, strlen(name));
	if (g < 0) {
		char list[256];
		configured_list(src->cfg, list, sizeof list);
		set_text(r, 404, "not found: '%.64s' is not a configured group (%s)\n", name, list);
		return;
	}
	struct group_data *gd = store_get(src->store, (enum gw_group)g);
	if (!gd) {
		set_text(r, 404, "not found: nothing is held for %s yet\n", name);
		return;
	}
	json_t *head = json_pack(
	    "{s:s, s:s, s:I, s:I, s:s, s:b}", "group", name, "md5", gd->md5, "lastModifyTime",
	    (json_int_t)gd->last_modify_time, "items", (json_int_t)gd->n_items, "source",
	    gd->provisional ? "snapshot" : gd->server, "fromSnapshot", gd->provisional);
	json_t *fields = json_array();
	for (const char *const *f = redact_fields; fields && *f; f++)
		json_array_append_new(fields, json_string(*f));
	if (head && fields)
		json_object_set_new(head, "redactedFields", fields);
	else
		json_decref(fields);
	char *text = head ? json_dumps(head, JSON_COMPACT) : NULL;
	json_decref(head);
	struct strbuf b = {0};
	size_t redacted = 0;
	if (text) {
		strbuf_reserve(&b, gd->json_bytes + gd->n_items * 2 + strlen(text) + 64);
		strbuf_add(&b, text, strlen(text) - 1); /* without its closing brace */
		strbuf_adds(&b, ",\"data\":[");
		for (size_t i = 0; i < gd->n_items; i++) {
			if (i)
				strbuf_adds(&b, ",");
			redact_item(&b, gd->items[i].json, gd->items[i].json_len, &redacted);
		}
		strbuf_addf(&b, "],\"redacted\":%zu}\n", redacted);
	}
	free(text);
	group_data_unref(gd);
	size_t len = b.len;
	char *body = text ? strbuf_finish(&b) : NULL;
	if (!body) {
		strbuf_reset(&b);
		set_static(r, 500, "out of memory\n");
		return;
	}
	set_owned(r, 200, "application/json", body, len);
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
	struct gw_err err = {0};
	int rc = pause_set(src->pause, paused, who, &changed, &persisted, &err);
	json_t *doc = json_pack("{s:b, s:b, s:b, s:s, s:s?}", "paused", paused, "changed", changed,
	                        "persisted", persisted, "stateFile", pause_path(src->pause),
	                        "error", rc != 0 ? err.msg : NULL);
	set_json(r, rc == 0 ? 200 : 500, doc);
}

/* ---------------------------------------------------------------- the table */

static const struct route routes[] = {
    {"/", 0, HTTP_GET | HTTP_HEAD, "GET, HEAD", get_page},
    {"/healthz", 0, HTTP_GET | HTTP_HEAD, "GET, HEAD", get_healthz},
    {"/status", 0, HTTP_GET | HTTP_HEAD, "GET, HEAD", get_status},
    {"/history", 0, HTTP_GET | HTTP_HEAD, "GET, HEAD", get_history},
    {"/config/", 1, HTTP_GET | HTTP_HEAD, "GET, HEAD", get_config},
    {"/metrics", 0, HTTP_GET | HTTP_HEAD, "GET, HEAD", get_metrics},
    {"/sync/pause", 0, HTTP_POST, "POST", post_pause},
    {"/sync/resume", 0, HTTP_POST, "POST", post_pause},
};

void status_route(struct status_sources *src, const struct http_request *req,
                  struct http_response *resp)
{
	for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
		const struct route *rt = &routes[i];
		if (rt->prefix ? strncmp(req->path, rt->path, strlen(rt->path)) != 0
		               : strcmp(req->path, rt->path) != 0)
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
	           "not found; try /, /healthz, /status, /history, /metrics, POST /sync/pause or "
	           "POST /sync/resume\n");
}
