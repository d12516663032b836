/*
 * Requests to the config services (see client.h). Percent-encoding is libcurl's
 * (curl_easy_escape: everything but A-Z a-z 0-9 - . _ ~), the query's JSON jansson's:
 * the service signs what it received, so any correct encoding verifies.
 */
#include "source/apollo/client.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "source/apollo/reply.h"
#include "source/apollo/sign.h"

struct apollo_client {
	const struct cfg *cfg;
	const struct apollo_config *ac;
	pthread_mutex_t mu; /* guards the handles against apollo_client_interrupt */
	struct http **h;    /* one per service in urls */
	char **urls;
	size_t n, cur;
	struct http *meta;
	atomic_int stopped;
};

static char *escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	if (!e)
		return NULL;
	char *out = strdup(e);
	curl_free(e);
	return out;
}

char *apollo_notifications_path(const char *app_id, const char *cluster, const char *namespace_name,
                                int64_t id)
{
	json_t *n = json_pack("[{s:s, s:I}]", "namespaceName", namespace_name, "notificationId",
	                      (json_int_t)id);
	char *text = n ? json_dumps(n, JSON_COMPACT) : NULL;
	json_decref(n);
	char *a = escape(app_id), *c = escape(cluster), *t = text ? escape(text) : NULL;
	free(text);
	char *out = NULL;
	if (a && c && t) {
		size_t cap = strlen(a) + strlen(c) + strlen(t) + 64;
		if ((out = malloc(cap)))
			snprintf(out, cap, "/notifications/v2?appId=%s&cluster=%s&notifications=%s",
			         a, c, t);
	}
	free(a);
	free(c);
	free(t);
	return out;
}

char *apollo_configs_path(const char *app_id, const char *cluster, const char *namespace_name,
                          const char *release_key)
{
	char *a = escape(app_id), *c = escape(cluster), *n = escape(namespace_name);
	char *r = release_key ? escape(release_key) : NULL;
	char *out = NULL;
	if (a && c && n && (r || !release_key)) {
		size_t cap = strlen(a) + strlen(c) + strlen(n) + (r ? strlen(r) : 0) + 64;
		if ((out = malloc(cap)))
			snprintf(out, cap, "/configs/%s/%s/%s%s%s", a, c, n,
			         r ? "?releaseKey=" : "", r ? r : "");
	}
	free(a);
	free(c);
	free(n);
	free(r);
	return out;
}

/* Replace the services with urls[0..n) (copied); NULL handles on failure. */
static int set_services(struct apollo_client *c, char *const *urls, size_t n, struct gw_err *err)
{
	struct http **h = calloc(n, sizeof *h);
	char **u = calloc(n, sizeof *u);
	if (!h || !u) {
		free(h);
		free(u);
		return gw_errf(err, "apollo: out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		if (!(u[i] = strdup(urls[i])) || http_open(&h[i], c->cfg, urls[i], err) != 0) {
			for (size_t k = 0; k <= i; k++) {
				http_close(h[k]);
				free(u[k]);
			}
			free(h);
			free(u);
			return -1;
		}
	}
	pthread_mutex_lock(&c->mu);
	struct http **old_h = c->h;
	char **old_u = c->urls;
	size_t old_n = c->n;
	c->h = h;
	c->urls = u;
	c->n = n;
	c->cur = 0;
	if (atomic_load(&c->stopped))
		for (size_t i = 0; i < n; i++)
			http_interrupt(h[i]);
	pthread_mutex_unlock(&c->mu);
	for (size_t i = 0; i < old_n; i++) {
		http_close(old_h[i]);
		free(old_u[i]);
	}
	free(old_h);
	free(old_u);
	return 0;
}

int apollo_client_open(struct apollo_client **out, const struct cfg *cfg,
                       const struct apollo_config *ac, struct gw_err *err)
{
	*out = NULL;
	struct apollo_client *c = calloc(1, sizeof *c);
	if (!c)
		return gw_errf(err, "apollo: out of memory");
	c->cfg = cfg;
	c->ac = ac;
	pthread_mutex_init(&c->mu, NULL);
	atomic_init(&c->stopped, 0);
	if ((ac->n_servers && set_services(c, ac->servers, ac->n_servers, err) != 0) ||
	    (ac->meta && http_open(&c->meta, cfg, ac->meta, err) != 0)) {
		apollo_client_close(c);
		return -1;
	}
	*out = c;
	return 0;
}

void apollo_client_close(struct apollo_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		http_close(c->h[i]);
		free(c->urls[i]);
	}
	free(c->h);
	free(c->urls);
	http_close(c->meta);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void apollo_client_interrupt(struct apollo_client *c)
{
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->stopped, 1);
	for (size_t i = 0; i < c->n; i++)
		http_interrupt(c->h[i]);
	if (c->meta)
		http_interrupt(c->meta);
	pthread_mutex_unlock(&c->mu);
}

const char *apollo_client_server(const struct apollo_client *c)
{
	return c->n ? c->urls[c->cur] : (c->ac->meta ? c->ac->meta : "");
}

size_t apollo_client_count(const struct apollo_client *c)
{
	return c->n;
}

void apollo_client_next(struct apollo_client *c)
{
	if (c->n)
		c->cur = (c->cur + 1) % c->n;
}

/* The path part of a base URL ("http://h:p/apollo" -> "/apollo"; "" for none). */
static const char *base_path(const char *url)
{
	const char *p = strstr(url, "://");
	p = p ? strchr(p + 3, '/') : NULL;
	return p ? p : "";
}

static int get(struct apollo_client *c, struct http *h, const char *base, const char *path,
               int held, const char *label, struct http_reply *rep, struct gw_err *err)
{
	char ts_line[64], auth_line[512];
	const char *headers[3] = {NULL, NULL, NULL};
	if (c->ac->secret) {
		const char *bp = base_path(base);
		size_t n = strlen(bp) + strlen(path) + 1;
		char *pwq = malloc(n);
		if (!pwq)
			return gw_errf(err, "apollo: out of memory");
		snprintf(pwq, n, "%s%s", bp, path);
		int rc = apollo_sign_headers(c->ac->app_id, c->ac->secret, gw_wall_ms(), pwq,
		                             ts_line, sizeof ts_line, auth_line, sizeof auth_line);
		free(pwq);
		if (rc != 0)
			return gw_errf(err, "%s: cannot sign the request (app_id too long?)", base);
		headers[0] = ts_line;
		headers[1] = auth_line;
	}
	struct http_request rq = {
	    .method = "GET",
	    .path = path,
	    .headers = headers,
	    .held = held,
	    .label = label,
	};
	return http_do(h, &rq, rep, err);
}

static int no_service(struct apollo_client *c, struct gw_err *err)
{
	err->kind = SYNC_FAIL_CONNECT;
	return gw_errf(err, "apollo: no config service known (the meta server %s listed none yet)",
	               c->ac->meta ? c->ac->meta : "-");
}

int apollo_client_notifications(struct apollo_client *c, int64_t id, struct http_reply *rep,
                                struct gw_err *err)
{
	if (!c->n)
		return no_service(c, err);
	char *path =
	    apollo_notifications_path(c->ac->app_id, c->ac->cluster, c->ac->namespace_name, id);
	if (!path)
		return gw_errf(err, "apollo: out of memory");
	int rc = get(c, c->h[c->cur], c->urls[c->cur], path, 1, "notifications", rep, err);
	free(path);
	return rc;
}

int apollo_client_configs(struct apollo_client *c, const char *release_key, struct http_reply *rep,
                          struct gw_err *err)
{
	if (!c->n)
		return no_service(c, err);
	char *path =
	    apollo_configs_path(c->ac->app_id, c->ac->cluster, c->ac->namespace_name, release_key);
	if (!path)
		return gw_errf(err, "apollo: out of memory");
	int rc = get(c, c->h[c->cur], c->urls[c->cur], path, 0, "configs read", rep, err);
	free(path);
	return rc;
}

void apollo_client_recycle(struct apollo_client *c, struct http_reply *rep)
{
	if (c->n && http_reply_recycle(c->h[c->cur], rep))
		return;
	http_reply_free(rep);
}

int apollo_client_discover(struct apollo_client *c, struct gw_err *err)
{
	if (!c->meta)
		return 0;
	char *a = escape(c->ac->app_id);
	if (!a)
		return gw_errf(err, "apollo: out of memory");
	size_t n = strlen(a) + 64;
	char *path = malloc(n);
	if (!path) {
		free(a);
		return gw_errf(err, "apollo: out of memory");
	}
	snprintf(path, n, "/services/config?appId=%s", a);
	free(a);
	struct http_reply rep = {0};
	int rc = get(c, c->meta, c->ac->meta, path, 0, "config service discovery", &rep, err);
	free(path);
	if (rc != 0)
		return -1;
	if (rep.status != 200) {
		err->kind = SYNC_FAIL_HTTP;
		gw_errf(err, "meta server %s: GET /services/config: HTTP %ld", c->ac->meta,
		        rep.status);
		http_reply_free(&rep);
		return -1;
	}
	char **urls;
	size_t k;
	struct gw_err perr = {0};
	rc = apollo_parse_services(rep.body, rep.len, &urls, &k, &perr);
	http_reply_free(&rep);
	if (rc != 0) {
		err->kind = perr.kind;
		return gw_errf(err, "meta server %s: %s", c->ac->meta, perr.msg);
	}
	rc = set_services(c, urls, k, err);
	apollo_urls_free(urls, k);
	return rc;
}
