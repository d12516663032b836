/*
 * Nacos's v1 calls (see client.h). The paths are {context_path}/v1/auth/login,
 * {context_path}/v1/cs/configs and {context_path}/v1/cs/configs/listener; a reply's status
 * decides (200 content, 404 absent, 403 the token); the body of a refusal is Nacos's text
 * and is quoted, cut short, in the error.
 */
#include "source/nacos/client.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "shared/strbuf.h"

struct nacos_client {
	const struct cfg *cfg;
	const struct nacos_config *nc;
	struct gw_log *log;
	struct http **eps; /* the reader's handle on each server */
	size_t n;
	pthread_mutex_t mu;
	char *token; /* under mu; NULL: none */
	int64_t token_due;
	uint64_t logins;
};

int nacos_client_open(struct nacos_client **out, const struct cfg *cfg, struct gw_log *log,
                      struct gw_err *err)
{
	*out = NULL;
	const struct nacos_config *nc = nacos_config(cfg);
	if (!nc)
		return gw_errf(err, "nacos: no nacos: settings in the configuration");
	struct nacos_client *c = calloc(1, sizeof *c);
	if (c)
		c->eps = calloc(nc->kv.n_servers ? nc->kv.n_servers : 1, sizeof *c->eps);
	if (!c || !c->eps) {
		free(c);
		return gw_errf(err, "nacos: out of memory");
	}
	c->cfg = cfg;
	c->nc = nc;
	c->log = log;
	c->token_due = -1;
	pthread_mutex_init(&c->mu, NULL);
	for (size_t i = 0; i < nc->kv.n_servers; i++) {
		if (http_open(&c->eps[i], cfg, nc->kv.servers[i], err) != 0) {
			nacos_client_close(c);
			return -1;
		}
		c->n = i + 1;
	}
	*out = c;
	return 0;
}

static void forget_token(struct nacos_client *c)
{
	if (c->token)
		memset(c->token, 0, strlen(c->token));
	free(c->token);
	c->token = NULL;
}

void nacos_client_close(struct nacos_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		http_close(c->eps[i]);
	free(c->eps);
	forget_token(c);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void nacos_client_interrupt(struct nacos_client *c)
{
	for (size_t i = 0; i < c->n; i++)
		http_interrupt(c->eps[i]);
}

int nacos_client_open_handle(struct nacos_client *c, size_t ep, struct http **out,
                             struct gw_err *err)
{
	return http_open(out, c->cfg, c->nc->kv.servers[ep], err);
}

int64_t nacos_client_token_due(struct nacos_client *c)
{
	pthread_mutex_lock(&c->mu);
	int64_t d = c->token_due;
	pthread_mutex_unlock(&c->mu);
	return d;
}

uint64_t nacos_client_logins(struct nacos_client *c)
{
	pthread_mutex_lock(&c->mu);
	uint64_t n = c->logins;
	pthread_mutex_unlock(&c->mu);
	return n;
}

/* The start of a refusal's body, for a message: printable ASCII, at most 200 bytes. */
static void excerpt(const struct http_reply *rep, char *buf, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < rep->len && o + 1 < cap && i < 200; i++) {
		unsigned char ch = (unsigned char)rep->body[i];
		buf[o++] = ch >= 32 && ch < 127 ? (char)ch : ' ';
	}
	buf[o] = '\0';
}

int nacos_client_login(struct nacos_client *c, size_t ep, struct gw_err *err)
{
	const struct cfg *cfg = c->cfg;
	const char *server = c->nc->kv.servers[ep];
	if (!cfg->username)
		return 0;
	struct strbuf b = {0}, path = {0};
	strbuf_adds(&b, "username=");
	strbuf_add_escaped(&b, cfg->username);
	strbuf_adds(&b, "&password=");
	strbuf_add_escaped(&b, cfg->password ? cfg->password : "");
	strbuf_addf(&path, "%s/v1/auth/login", c->nc->context_path);
	char *body = strbuf_finish(&b), *p = strbuf_finish(&path);
	if (!body || !p) {
		free(body);
		free(p);
		err->kind = SYNC_FAIL_AUTH;
		return gw_errf(err, "server %s: login: out of memory", server);
	}
	struct http_request rq = {
	    .method = "POST",
	    .path = p,
	    .body = body,
	    .body_len = strlen(body),
	    .content_type = "application/x-www-form-urlencoded",
	    .label = "login",
	};
	struct http_reply rep;
	int rc = http_do(c->eps[ep], &rq, &rep, err);
	memset(body, 0, strlen(body)); /* the password */
	free(body);
	free(p);
	if (rc != 0)
		return -1;
	rc = -1;
	json_t *j = rep.status == 200 ? json_loadb(rep.body, rep.len, 0, NULL) : NULL;
	const char *tok = json_string_value(json_object_get(j, "accessToken"));
	json_t *ttl = json_object_get(j, "tokenTtl");
	if (rep.status != 200) {
		char ex[256];
		excerpt(&rep, ex, sizeof ex);
		err->kind = rep.status == 403 || rep.status == 401 || rep.status == 400
		                ? SYNC_FAIL_AUTH
		                : SYNC_FAIL_HTTP;
		gw_errf(err, "server %s: login as %s refused: HTTP %ld: %s", server, cfg->username,
		        rep.status, ex);
	} else if (!tok || !*tok || !json_is_integer(ttl) || json_integer_value(ttl) <= 0) {
		err->kind = SYNC_FAIL_PARSE;
		gw_errf(err, "server %s: login as %s: the reply has no accessToken and tokenTtl",
		        server, cfg->username);
	} else {
		char *t = strdup(tok);
		if (t) {
			int64_t ttl_ms = (int64_t)json_integer_value(ttl) * 1000;
			pthread_mutex_lock(&c->mu);
			forget_token(c);
			c->token = t;
			c->token_due = gw_mono_ms() + ttl_ms - ttl_ms / 10;
			c->logins++;
			pthread_mutex_unlock(&c->mu);
			gw_log_secret(c->log, t);
			rc = 0;
		} else {
			err->kind = SYNC_FAIL_AUTH;
			gw_errf(err, "server %s: login: out of memory", server);
		}
	}
	json_decref(j);
	http_reply_free(&rep);
	return rc;
}

/* "&accessToken=..." when logged in. */
static void add_token(struct nacos_client *c, struct strbuf *b)
{
	pthread_mutex_lock(&c->mu);
	if (c->token) {
		strbuf_adds(b, "accessToken=");
		strbuf_add_escaped(b, c->token);
	}
	pthread_mutex_unlock(&c->mu);
}

static int get_once(struct nacos_client *c, size_t ep, const char *data_id, char **value,
                    size_t *len, struct gw_err *err)
{
	const struct nacos_config *nc = c->nc;
	const char *server = nc->kv.servers[ep];
	struct strbuf p = {0};
	strbuf_addf(&p, "%s/v1/cs/configs?dataId=", nc->context_path);
	strbuf_add_escaped(&p, data_id);
	strbuf_adds(&p, "&group=");
	strbuf_add_escaped(&p, nc->group);
	if (nc->tenant) {
		strbuf_adds(&p, "&tenant=");
		strbuf_add_escaped(&p, nc->tenant);
	}
	strbuf_adds(&p, "&");
	add_token(c, &p);
	char *path = strbuf_finish(&p);
	if (!path) {
		err->kind = SYNC_FAIL_CONNECT;
		return gw_errf(err, "server %s: read of %s: out of memory", server, data_id);
	}
	char label[320];
	snprintf(label, sizeof label, "read of %.280s", data_id);
	struct http_request rq = {.method = "GET", .path = path, .label = label};
	struct http_reply rep;
	int rc = http_do(c->eps[ep], &rq, &rep, err);
	free(path);
	if (rc != 0)
		return -1;
	if (rep.status == 200) {
		*value = rep.body; /* the reply's buffer is the value */
		*len = rep.len;
		return 1;
	}
	char ex[256];
	excerpt(&rep, ex, sizeof ex);
	long status = rep.status;
	http_reply_free(&rep);
	if (status == 404)
		return 0;
	err->kind = status == 403 || status == 401 ? SYNC_FAIL_AUTH : SYNC_FAIL_HTTP;
	gw_errf(err, "server %s: read of %s (group %s): HTTP %ld: %s", server, data_id, nc->group,
	        status, ex);
	return status == 403 ? 2 : -1;
}

int nacos_client_get(struct nacos_client *c, size_t ep, const char *data_id, char **value,
                     size_t *len, struct gw_err *err)
{
	*value = NULL;
	*len = 0;
	err->kind = SYNC_OK;
	int rc = get_once(c, ep, data_id, value, len, err);
	if (rc == 2 && c->cfg->username) { /* the token expired: once more with a new one */
		LOG_I(c->log, "nacos", "%s; logging in again", err->msg);
		if (nacos_client_login(c, ep, err) != 0)
			return -1;
		rc = get_once(c, ep, data_id, value, len, err);
	}
	return rc == 2 ? -1 : rc;
}

int nacos_client_listen(struct nacos_client *c, struct http *h, const char *body, size_t len,
                        struct http_reply *rep, struct gw_err *err)
{
	const struct nacos_config *nc = c->nc;
	struct strbuf p = {0};
	strbuf_addf(&p, "%s/v1/cs/configs/listener?", nc->context_path);
	add_token(c, &p);
	char *path = strbuf_finish(&p);
	if (!path) {
		err->kind = SYNC_FAIL_CONNECT;
		return gw_errf(err, "server %s: listener: out of memory", http_server(h));
	}
	static const char *const headers[] = {"Long-Pulling-Timeout: 30000", NULL};
	struct http_request rq = {
	    .method = "POST",
	    .path = path,
	    .body = body,
	    .body_len = len,
	    .content_type = "application/x-www-form-urlencoded",
	    .headers = headers,
	    .held = 1,
	    .label = "listener",
	};
	int rc = http_do(h, &rq, rep, err);
	free(path);
	if (rc != 0)
		return -1;
	if (rep->status == 200)
		return 0;
	char ex[256];
	excerpt(rep, ex, sizeof ex);
	long status = rep->status;
	http_reply_free(rep);
	err->kind = status == 403 || status == 401 ? SYNC_FAIL_AUTH : SYNC_FAIL_HTTP;
	return gw_errf(err, "server %s: listener on group %s: HTTP %ld: %s", http_server(h),
	               nc->group, status, ex);
}
