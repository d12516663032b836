/*
 * Judging an admin's reply, the same way for login, listener and fetch: first the HTTP
 * status, then the body's envelope {"code":200,"data":..}. Every admin error is an HTTP 200
 * with another code, so both are checked; each verdict carries a reason (failure.h) for the
 * counters and a message naming the server and the call.
 */
#ifndef GW_REPLY_H
#define GW_REPLY_H

#include <stddef.h>

#include "core/error.h"
#include "source/failure.h"

struct json_t;

/* Why a body that did not parse as the expected reply was refused: SYNC_FAIL_PARSE if it
 * is not a JSON object with an integer "code", SYNC_FAIL_CODE if the code is not 200,
 * otherwise `otherwise` (the envelope was fine, the contents were not). */
enum sync_fail reply_classify(const char *body, size_t len, enum sync_fail otherwise);

/* Refuse an HTTP status other than 200 (SYNC_FAIL_HTTP), quoting the start of the body:
 * "server S: WHAT: HTTP 503: <excerpt>". */
int reply_check_status(const char *server, const char *what, long status, const char *body,
                       size_t len, enum sync_fail *why, struct gw_err *err);

/* model_parse_envelope() with a reason: "server S: WHAT: admin code 500: message". */
int reply_envelope(const char *server, const char *what, const char *body, size_t len,
                   struct json_t **root, struct json_t **data, enum sync_fail *why,
                   struct gw_err *err);

/* The first `max` bytes of body as printable text (others as '?'), for messages. */
void reply_excerpt(const char *body, size_t len, char *out, size_t max);

#endif
