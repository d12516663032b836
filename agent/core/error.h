/*
 * Error reporting for the agent's internals: a function that can fail returns 0 or -1 and,
 * on -1, leaves a human-readable message in a caller-supplied struct gw_err. The message
 * names the server, group, file or key involved; callers add context by prefixing.
 * A fixed buffer keeps error paths free of allocation (they run when memory may be short).
 * A part whose callers act on the kind of a failure (a source counting connect, timeout,
 * auth... failures) puts that kind in the same struct, typed, so there is one error to pass
 * and one channel: no part keeps a reason of its own beside it, nor returns a kind and
 * fills the error too.
 */
#ifndef GW_ERROR_H
#define GW_ERROR_H

#include <stddef.h>

/* The kinds of failure an error carries: why a conversation with a server failed, the one
 * vocabulary of the sources, /status and /metrics (their words: source/failure.h's
 * sync_fail_name). Here, not in source/, because the error that carries it is core's. */
enum sync_fail {
	SYNC_OK = 0,         /* no kind: not a failure a caller counts */
	SYNC_FAIL_CONNECT,   /* no connection, reset, truncated transfer, TLS handshake/verify */
	SYNC_FAIL_TIMEOUT,   /* connect or whole-request timeout */
	SYNC_FAIL_HTTP,      /* an HTTP status other than 200 */
	SYNC_FAIL_CODE,      /* the body's "code" is not 200 */
	SYNC_FAIL_PARSE,     /* the body is not the JSON the call expects */
	SYNC_FAIL_FETCH,     /* a fetched group was refused: missing, malformed item, bad md5... */
	SYNC_FAIL_TOO_LARGE, /* the reply exceeded admin.max_response */
	SYNC_FAIL_AUTH,      /* login refused, or HTTP 401 again after a fresh login */
	SYNC_FAIL_SESSION,   /* path stores: a ZooKeeper session expired, an etcd watch was
	                      * cancelled (compaction): everything is read again */
	SYNC_STOPPED,        /* interrupted for shutdown: not a failure, never counted */
	SYNC_FAIL_COUNT
};

struct gw_err {
	char msg[1024];
	/* What kind of failure, for a caller that counts or acts on kinds without reading the
	 * message; SYNC_OK when none. gw_errf() and gw_err_prefix() leave it as it is. */
	enum sync_fail kind;
};

/* Set the message (printf-style) and return -1, so `return gw_errf(err, ...)` reads well.
 * err may be NULL. */
int gw_errf(struct gw_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the existing message: "PREFIX: old message". Returns -1. */
int gw_err_prefix(struct gw_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
