/*
 * Login to one admin server (see login.h). The POST form with a JSON body is tried first;
 * an admin that answers 404/405 gets the older GET form from then on. Tokens are held
 * only here and in the X-Access-Token header; the password only here and in the request.
 */
#include "source/http/login.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "shared/strbuf.h"
#include "model/model.h"
#include "source/http/reply.h"

char *login_post_body(const char *user, const char *password)
{
	json_t *o = json_pack("{s:s, s:s}", "userName", user, "password", password);
	if (!o)
		return NULL;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

char *login_get_path(const char *user, const char *password)
{
	struct strbuf b = {0};
	strbuf_adds(&b, "/platform/login?userName=");
	strbuf_add_escaped(&b, user);
	strbuf_adds(&b, "&password=");
	strbuf_add_escaped(&b, password);
	return strbuf_finish(&b);
}

int64_t login_refresh_deadline(int64_t now_ms, int64_t expired_ms)
{
	if (expired_ms <= 0)
		return INT64_MAX;
	/* 90% of the lifetime, computed without overflowing for absurd lifetimes. */
	int64_t d = expired_ms / 10 * 9 + (expired_ms % 10) * 9 / 10;
	return d > INT64_MAX - now_ms ? INT64_MAX : now_ms + d;
}

int login_parse_reply(const char *body, size_t len, char **token, int64_t *expired_ms,
                      struct gw_err *err)
{
	*token = NULL;
	*expired_ms = -1;
	json_t *data;
	struct reply_envelope env;
	struct gw_err quiet;
	int rc = reply_data_tree("", "login", body, len, &env, &data, &quiet);
	err->kind = quiet.kind;
	if (rc != 0) {
		if (err->kind == SYNC_FAIL_CODE) {
			err->kind = SYNC_FAIL_AUTH; /* the admin said no: wrong user or password */
			return gw_errf(err, "admin code %lld: %s", env.code,
			               env.message[0] ? env.message : "(no message)");
		}
		/* The parser's message quotes the text near the error, which may be the token. */
		return gw_errf(err, "login reply is not the expected JSON object");
	}
	const json_t *tok = json_object_get(data, "token");
	const json_t *exp = json_object_get(data, "expiredTime");
	if (!json_is_object(data)) {
		err->kind = SYNC_FAIL_PARSE;
		rc = gw_errf(err, "login reply 'data' is not an object");
	} else if (!json_is_string(tok) || json_string_length(tok) == 0) {
		err->kind = SYNC_FAIL_AUTH;
		rc = gw_errf(err, "login reply has no token");
	} else if (!(*token = strdup(json_string_value(tok)))) {
		err->kind = SYNC_FAIL_AUTH;
		rc = gw_errf(err, "out of memory");
	} else if (json_is_integer(exp) && json_integer_value(exp) > 0) {
		*expired_ms = (int64_t)json_integer_value(exp);
	} else if (json_is_real(exp) && json_real_value(exp) >= 1) {
		*expired_ms = (int64_t)json_real_value(exp);
	}
	json_decref(data);
	return rc;
}

void login_init(struct login *lg)
{
	lg->token = NULL;
	lg->refresh_at = 0;
	lg->use_get = 0;
}

void login_drop(struct login *lg)
{
	free(lg->token);
	lg->token = NULL;
	lg->refresh_at = 0;
}

void login_free(struct login *lg)
{
	login_drop(lg);
}

/* One login request in the form this admin speaks. 0 with a reply of any status. */
static int send_login(struct login *lg, struct http *h, const struct cfg *cfg,
                      struct http_reply *rep, struct gw_err *err)
{
	char *s = lg->use_get ? login_get_path(cfg->username, cfg->password)
	                      : login_post_body(cfg->username, cfg->password);
	if (!s) {
		err->kind = SYNC_FAIL_AUTH;
		return gw_errf(err, "server %s: login: out of memory", http_server(h));
	}
	struct http_request rq = {.method = "GET", .path = s};
	if (!lg->use_get) {
		rq.method = "POST";
		rq.path = "/platform/login";
		rq.body = s;
		rq.body_len = strlen(s);
		rq.content_type = "application/json;charset=UTF-8";
	}
	int rc = http_do(h, &rq, rep, err);
	/* The request text holds the password: wipe it before freeing. */
	memset(s, 0, strlen(s));
	free(s);
	return rc;
}

int login_ensure(struct login *lg, struct http *h, const struct cfg *cfg, struct gw_log *log,
                 struct gw_err *err)
{
	err->kind = SYNC_OK;
	if (!cfg->username || !cfg->username[0])
		return 0;
	int64_t now = gw_mono_ms();
	if (lg->token && now < lg->refresh_at)
		return 0;
	const char *server = http_server(h);

	struct http_reply rep;
	if (send_login(lg, h, cfg, &rep, err) != 0)
		return -1;
	if (!lg->use_get && (rep.status == 404 || rep.status == 405)) {
		LOG_I(log, "login",
		      "server %s: POST /platform/login answered HTTP %ld; using the "
		      "older GET form",
		      server, rep.status);
		http_reply_free(&rep);
		lg->use_get = 1;
		if (send_login(lg, h, cfg, &rep, err) != 0)
			return -1;
	}
	if (reply_check_status(server, "login", rep.status, rep.body, rep.len, err) != 0) {
		if (rep.status == 401 || rep.status == 403)
			err->kind = SYNC_FAIL_AUTH;
		http_reply_free(&rep);
		return -1;
	}
	char *token;
	int64_t expired_ms;
	int rc = login_parse_reply(rep.body, rep.len, &token, &expired_ms, err);
	http_reply_free(&rep);
	if (rc != 0)
		return gw_err_prefix(err, "server %s: login as '%s' failed", server, cfg->username);
	gw_log_secret(log, token);
	login_drop(lg);
	lg->token = token;
	lg->refresh_at = login_refresh_deadline(now, expired_ms);
	if (expired_ms > 0)
		LOG_I(log, "login",
		      "server %s: logged in as '%s' (token valid %lld ms, renewed "
		      "after %lld ms)",
		      server, cfg->username, (long long)expired_ms,
		      (long long)(lg->refresh_at - now));
	else
		LOG_I(log, "login", "server %s: logged in as '%s' (no token lifetime given)",
		      server, cfg->username);
	return 0;
}
