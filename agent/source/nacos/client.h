/*
 * Calls to Nacos's v1 open API (PROTOCOL-PUSH.md 4.3; alibaba/nacos ConfigController,
 * AuthController/UserController login, the same on 1.4, 2.x and 3.x): log in, read one
 * key, post the listener. The token lives here, shared by the source's threads under a
 * lock: it is renewed before its tokenTtl runs out (at nine tenths, as Nacos's own client
 * SecurityProxy does) and again when a call is refused with 403. It travels as the
 * `accessToken` query parameter, which no log line shows (curl_http.h never prints a
 * query).
 */
#ifndef GW_NACOS_CLIENT_H
#define GW_NACOS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "source/curl_http.h"
#include "source/nacos/config.h"

struct nacos_client;

int nacos_client_open(struct nacos_client **out, const struct cfg *cfg, struct gw_log *log,
                      struct gw_err *err);
void nacos_client_close(struct nacos_client *c);
/* End every call of the reader at once, for good (stop). */
void nacos_client_interrupt(struct nacos_client *c);

/* Log in at server ep (nothing to do without a username). 0, or -1 with err (its kind an
 * enum sync_fail: SYNC_FAIL_AUTH when refused). */
int nacos_client_login(struct nacos_client *c, size_t ep, struct gw_err *err);
/* When the token must be renewed (monotonic ms), -1 if never (no login). */
int64_t nacos_client_token_due(struct nacos_client *c);
/* How many logins have succeeded: a listener refused with 403 waits for it to move. */
uint64_t nacos_client_logins(struct nacos_client *c);

/*
 * Read key data_id from server ep: 1 with *value (malloc'd, NUL-terminated) and *len when
 * it exists, 0 when it does not (404), -1 with err otherwise (a 403 is answered by one
 * login and one more try).
 */
int nacos_client_get(struct nacos_client *c, size_t ep, const char *data_id, char **value,
                     size_t *len, struct gw_err *err);

/*
 * Post the listener body (listen.h) on handle h, a long poll held up to 30 s: 0 with the
 * answer's body in rep (HTTP 200), -1 with err (SYNC_FAIL_AUTH for a 403, SYNC_STOPPED
 * when h was interrupted).
 */
int nacos_client_listen(struct nacos_client *c, struct http *h, const char *body, size_t len,
                        struct http_reply *rep, struct gw_err *err);

/* Open a handle on server ep for a listener thread of its own. */
int nacos_client_open_handle(struct nacos_client *c, size_t ep, struct http **out,
                             struct gw_err *err);

#endif
