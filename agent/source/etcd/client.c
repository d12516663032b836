/*
 * Unary calls to etcd's JSON gateway (see client.h). Errors: a reply that is not 200 is
 * etcd's error body {"error","message","code"}; code 16 (UNAUTHENTICATED) is a token to
 * renew, code 11 (OUT_OF_RANGE) on a range at a revision is "compacted" or "future
 * revision", which the caller answers by reading the newest revision instead.
 */
#include "source/etcd/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/etcd/wire.h"
#include "source/curl_http.h"
#include "source/etcd/config.h"

#define GRPC_OUT_OF_RANGE    11
#define GRPC_UNAUTHENTICATED 16

struct etcd_client {
	const struct cfg *cfg;
	const struct kv_config *kv; /* etcd: (config.h) */
	struct gw_log *log;
	struct http **eps; /* one per endpoint */
	size_t n;
	char *auth_header; /* "Authorization: TOKEN" or NULL */
};

int etcd_client_open(struct etcd_client **out, const struct cfg *cfg, struct gw_log *log,
                     struct gw_err *err)
{
	*out = NULL;
	const struct kv_config *kv = etcd_config(cfg);
	if (!kv)
		return gw_errf(err, "etcd: no etcd: settings in the configuration");
	struct etcd_client *c = calloc(1, sizeof *c);
	if (c)
		c->eps = calloc(kv->n_servers ? kv->n_servers : 1, sizeof *c->eps);
	if (!c || !c->eps) {
		free(c);
		return gw_errf(err, "etcd: out of memory");
	}
	c->cfg = cfg;
	c->kv = kv;
	c->log = log;
	for (size_t i = 0; i < kv->n_servers; i++) {
		if (http_open(&c->eps[i], cfg, kv->servers[i], err) != 0) {
			etcd_client_close(c);
			return -1;
		}
		c->n = i + 1;
	}
	*out = c;
	return 0;
}

void etcd_client_close(struct etcd_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		http_close(c->eps[i]);
	free(c->eps);
	free(c->auth_header);
	free(c);
}

void etcd_client_interrupt(struct etcd_client *c)
{
	for (size_t i = 0; i < c->n; i++)
		http_interrupt(c->eps[i]);
}

const char *etcd_client_auth_header(const struct etcd_client *c)
{
	return c->auth_header;
}

/* POST body to path on ep; the reply is left in rep (any status). */
static int post(struct etcd_client *c, size_t ep, const char *path, const char *body,
                const char *label, struct http_reply *rep, struct gw_err *err)
{
	const char *headers[] = {c->auth_header, NULL};
	struct http_request rq = {
	    .method = "POST",
	    .path = path,
	    .body = body,
	    .body_len = strlen(body),
	    .content_type = "application/json",
	    .headers = c->auth_header ? headers : NULL,
	    .label = label,
	};
	int rc = http_do(c->eps[ep], &rq, rep, err); /* its kind: the transport's failure */
	/* the transport names its peer "server URL"; an etcd member is an endpoint */
	if (rc != 0 && strncmp(err->msg, "server ", 7) == 0) {
		char text[sizeof err->msg];
		snprintf(text, sizeof text, "%s", err->msg + 7);
		gw_errf(err, "endpoint %s", text);
	}
	return rc;
}

void etcd_client_forget_token(struct etcd_client *c)
{
	if (c->auth_header)
		memset(c->auth_header, 0, strlen(c->auth_header));
	free(c->auth_header);
	c->auth_header = NULL;
}

int etcd_client_authenticate(struct etcd_client *c, size_t ep, struct gw_err *err)
{
	const char *server = c->kv->servers[ep];
	free(c->auth_header);
	c->auth_header = NULL;
	char *body = etcd_body_auth(c->cfg->username, c->cfg->password);
	if (!body) {
		err->kind = SYNC_FAIL_AUTH;
		return gw_errf(err, "endpoint %s: authenticate: out of memory", server);
	}
	struct http_reply rep;
	int rc = post(c, ep, "/v3/auth/authenticate", body, "authenticate", &rep, err);
	memset(body, 0, strlen(body)); /* the password */
	free(body);
	if (rc != 0)
		return -1;
	rc = -1;
	struct etcd_error e;
	char *token = NULL;
	if (rep.status != 200) {
		err->kind = rep.status == 400 || rep.status == 401 || rep.status == 403
		                ? SYNC_FAIL_AUTH
		                : SYNC_FAIL_HTTP;
		if (etcd_parse_error(rep.body, rep.len, &e))
			gw_errf(err, "endpoint %s: authenticate as %s refused: HTTP %ld: %s",
			        server, c->cfg->username, rep.status, e.message);
		else
			gw_errf(err, "endpoint %s: authenticate as %s: HTTP %ld", server,
			        c->cfg->username, rep.status);
	} else if (etcd_parse_token(rep.body, rep.len, &token, err) != 0) {
		err->kind = SYNC_FAIL_PARSE;
		char why_text[sizeof err->msg];
		snprintf(why_text, sizeof why_text, "%s", err->msg);
		gw_errf(err, "endpoint %s: %s", server, why_text);
	} else {
		size_t n = strlen(token) + sizeof "Authorization: ";
		c->auth_header = malloc(n);
		if (c->auth_header) {
			snprintf(c->auth_header, n, "Authorization: %s", token);
			rc = 0;
		} else {
			err->kind = SYNC_FAIL_AUTH;
			gw_errf(err, "endpoint %s: authenticate: out of memory", server);
		}
		memset(token, 0, strlen(token));
		free(token);
	}
	http_reply_free(&rep);
	return rc;
}

/* One range call; 1 if refused as unauthenticated (the caller may renew the token). */
static int range_once(struct etcd_client *c, size_t ep, const char *prefix, const char *from,
                      size_t from_len, int64_t revision, int64_t limit, struct etcd_range *out,
                      struct gw_err *err)
{
	const char *server = c->kv->servers[ep];
	char *body = etcd_body_range_page(prefix, strlen(prefix), from, from_len, revision, limit);
	if (!body) {
		err->kind = SYNC_FAIL_CONNECT;
		return gw_errf(err, "endpoint %s: range of %s: out of memory", server, prefix);
	}
	char label[320];
	snprintf(label, sizeof label, "range of %s", prefix);
	struct http_reply rep;
	int rc = post(c, ep, "/v3/kv/range", body, label, &rep, err);
	free(body);
	if (rc != 0)
		return -1;
	rc = -1;
	struct etcd_error e;
	if (rep.status != 200) {
		int known = etcd_parse_error(rep.body, rep.len, &e);
		if (known && e.code == GRPC_UNAUTHENTICATED && c->cfg->username) {
			rc = 1;
			err->kind = SYNC_FAIL_AUTH;
			gw_errf(err, "endpoint %s: range of %s: HTTP %ld: %s", server, prefix,
			        rep.status, e.message);
		} else if (known && e.code == GRPC_OUT_OF_RANGE && revision > 0) {
			err->kind = SYNC_FAIL_SESSION; /* compacted: the caller reads the newest */
			gw_errf(err, "endpoint %s: range of %s at revision %lld: %s", server,
			        prefix, (long long)revision, e.message);
		} else {
			err->kind = rep.status == 401 || rep.status == 403 ? SYNC_FAIL_AUTH
			                                                   : SYNC_FAIL_HTTP;
			gw_errf(err, "endpoint %s: range of %s: HTTP %ld%s%s", server, prefix,
			        rep.status, known ? ": " : "", known ? e.message : "");
		}
	} else if (etcd_parse_range(rep.body, rep.len, out, err) != 0) {
		err->kind = SYNC_FAIL_PARSE;
		char why_text[sizeof err->msg];
		snprintf(why_text, sizeof why_text, "%s", err->msg);
		gw_errf(err, "endpoint %s: range of %s: %s", server, prefix, why_text);
	} else {
		rc = 0;
	}
	http_reply_free(&rep);
	return rc;
}

int etcd_client_range(struct etcd_client *c, size_t ep, const char *prefix, const char *from,
                      size_t from_len, int64_t revision, int64_t limit, struct etcd_range *out,
                      struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	err->kind = SYNC_OK;
	if (c->cfg->username && !c->auth_header && etcd_client_authenticate(c, ep, err) != 0)
		return -1;
	int rc = range_once(c, ep, prefix, from, from_len, revision, limit, out, err);
	if (rc == 1) { /* the token expired: once more with a new one */
		LOG_I(c->log, "etcd", "%s; authenticating again", err->msg);
		if (etcd_client_authenticate(c, ep, err) != 0)
			return -1;
		rc = range_once(c, ep, prefix, from, from_len, revision, limit, out, err);
		if (rc == 1)
			rc = -1;
	}
	return rc;
}
