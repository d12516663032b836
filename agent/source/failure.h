/*
 * Why a conversation with an admin server failed: one vocabulary shared by the HTTP layer,
 * login, the admin calls, the poller's counters and, later, /status and /metrics, so an
 * operator sees the same reason names everywhere.
 */
#ifndef GW_FAILURE_H
#define GW_FAILURE_H

enum sync_fail {
	SYNC_OK = 0,
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

/* "connect", "timeout", "http", "code", "parse", "fetch", "too_large", "auth", "session". */
static inline const char *sync_fail_name(enum sync_fail f)
{
	static const char *const names[SYNC_FAIL_COUNT] = {
	    "ok",    "connect",   "timeout", "http",    "code",   "parse",
	    "fetch", "too_large", "auth",    "session", "stopped"};
	return (unsigned)f < SYNC_FAIL_COUNT ? names[f] : "?";
}

#endif
