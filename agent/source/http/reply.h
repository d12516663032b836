/*
 * Judging an admin's reply, the same way for login, listener and fetch: first the HTTP
 * status, then the body's envelope {"code":200,"data":..}. Every admin error is an HTTP 200
 * with another code, so both are checked; each verdict is 0 or -1 with the error carrying
 * its reason (err->kind, failure.h) for the counters and a message naming the server and
 * the call: one channel.
 */
#ifndef GW_REPLY_H
#define GW_REPLY_H

#include <stddef.h>

#include "core/error.h"
#include "model/groupdata.h"
#include "source/failure.h"

struct json_t;

/* Refuse an HTTP status other than 200 (err->kind SYNC_FAIL_HTTP), quoting the start of
 * the body: "server S: WHAT: HTTP 503: <excerpt>". */
int reply_check_status(const char *server, const char *what, long status, const char *body,
                       size_t len, struct gw_err *err);

/*
 * The envelope {"code":200,"message":"..","data":..} of every admin reply, read by this one
 * parser (login, listener and fetch alike). The walk checks the envelope's own syntax and
 * takes "data" as a span of the body, so a large fetch reply is never built into a tree;
 * the caller parses the span (reply_data_tree() or the model) and so validates the rest.
 */
struct reply_envelope {
	long long code;
	char message[256]; /* the admin's "message", cut to fit; "" if none */
	const char *data;  /* the "data" value's bytes inside the body */
	size_t data_len;
};

/*
 * 0 (err->kind SYNC_OK), or -1 with err saying why the body is not a good envelope and
 * err->kind which kind:
 *   SYNC_FAIL_PARSE  not JSON ("invalid JSON at line L column C: ..."), not an object, no
 *                    integer "code", or no "data" with code 200;
 *   SYNC_FAIL_CODE   "code" is not 200 ("admin code N: message"); env->code and
 *                    env->message hold what the admin said, for callers that act on it.
 */
int reply_parse_envelope(const char *body, size_t len, struct reply_envelope *env,
                         struct gw_err *err);

/* The envelope of a small reply (login, listener) with its data as a jansson tree
 * (*data, caller json_decref()s): 0, or -1 with the envelope's reason, or SYNC_FAIL_PARSE
 * if the data is not JSON, in err->kind. err is prefixed "server S: WHAT: ". */
int reply_data_tree(const char *server, const char *what, const char *body, size_t len,
                    struct reply_envelope *env, struct json_t **data, struct gw_err *err);

/*
 * A fetch reply, {"code":200,"data":{GROUP: ConfigData}}, into versions (model_parse_groups,
 * carrying over unchanged items of prev, which may be NULL). 0 (err->kind SYNC_OK), or -1
 * with err->kind SYNC_FAIL_PARSE (not JSON, bad envelope), SYNC_FAIL_CODE (the admin said
 * no) or SYNC_FAIL_FETCH (a group refused: missing, malformed item, bad md5...). err must
 * not be NULL.
 */
int reply_parse_fetch(const char *body, size_t len, const enum gw_group *want, size_t n_want,
                      const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                      struct group_data *out[GW_GROUP_COUNT], struct gw_err *err);

/*
 * The same for a malloc'd body the versions may keep: a group parsed whole (nothing held
 * to share its items with, as at start-up) points its items' raw JSON into the body
 * instead of copying it, so a full sync keeps the reply instead of a copy of it and never
 * holds both. Then *body is NULL (the versions free it with the last of them); otherwise
 * *body is still the caller's. The body is written to (a NUL after each kept item).
 */
int reply_parse_fetch_adopt(char **body, size_t len, const enum gw_group *want, size_t n_want,
                            const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                            struct group_data *out[GW_GROUP_COUNT], struct gw_err *err);

/* The first `max` bytes of body as printable text (others as '?'), for messages. */
void reply_excerpt(const char *body, size_t len, char *out, size_t max);

#endif
