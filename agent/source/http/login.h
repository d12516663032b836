/*
 * Login to one admin server (ShenYu 2.4+; Soul has none): the token that goes in
 * X-Access-Token on every /configs/... call. Each admin server has its own token, so
 * each struct admin owns one struct login. The token is refreshed once 90% of its lifetime
 * (the reply's expiredTime, in ms) has passed; after an HTTP 401 the caller drops it and
 * logs in again once.
 *
 * The password and every token are registered with gw_log_secret() and never formatted
 * into a message.
 */
#ifndef GW_LOGIN_H
#define GW_LOGIN_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/failure.h"
#include "source/curl_http.h"
#include "core/log.h"

struct login {
	char *token;        /* NULL: none (yet); a secret */
	int64_t refresh_at; /* gw_mono_ms() after which the token is renewed; INT64_MAX: never */
	int use_get;        /* this admin only knows the old GET form (answered 404/405) */
};

/* ---- pure parts, unit-tested */

/* The JSON body of POST /platform/login (caller frees; NULL on out of memory). */
char *login_post_body(const char *user, const char *password);
/* "/platform/login?userName=U&password=P", percent-encoded (caller frees). */
char *login_get_path(const char *user, const char *password);
/* A login reply: {"code":200,"data":{"token":"..","expiredTime":N}}. *token is malloc'd;
 * *expired_ms is the lifetime in ms, or -1 if the reply gives none (or not a positive
 * number). Errors never quote the token; err->kind is SYNC_OK, or SYNC_FAIL_AUTH (the
 * admin said no, or no token) or SYNC_FAIL_PARSE. err must not be NULL. */
int login_parse_reply(const char *body, size_t len, char **token, int64_t *expired_ms,
                      struct gw_err *err);
/* When to renew a token obtained at `now_ms` with lifetime `expired_ms` (-1: unknown, never
 * renewed before a 401): at 90% of the lifetime. */
int64_t login_refresh_deadline(int64_t now_ms, int64_t expired_ms);

/* ---- the conversation */

void login_init(struct login *lg);
void login_free(struct login *lg);

/* Log in if there is no token or it is due for renewal; no-op without cfg->username.
 * err->kind is SYNC_OK on success; on failure SYNC_FAIL_AUTH (refused), or the
 * transport/HTTP reason. */
int login_ensure(struct login *lg, struct http *h, const struct cfg *cfg, struct gw_log *log,
                 struct gw_err *err);

/* Forget the token (the admin answered 401): the next login_ensure() logs in again. */
void login_drop(struct login *lg);

#endif
