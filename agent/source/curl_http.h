/*
 * One HTTP connection to one server over libcurl, a part shared by every source that speaks
 * HTTP (long-polling's admin calls, the etcd gateway), like curl_tls.h beside it: a single
 * reusable easy handle (keep-alive) driven by a private multi handle, so that another
 * thread can end a request at once with http_interrupt() (curl_multi_wakeup) instead of
 * waiting out the admin's 60 s hold. Replies are collected into a buffer that refuses more
 * than max_response bytes. Only transport lives here; what the replies mean is each
 * source's business (http/admin.c, etcd/client.c).
 *
 * Also the small string builder used for URLs and form bodies, with percent-encoding.
 */
#ifndef GW_CURL_HTTP_H
#define GW_CURL_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/failure.h"

struct http;

/* `server` is the base URL (no trailing '/'); copied. Options come from cfg: timeouts,
 * max_response, TLS. */
int http_open(struct http **out, const struct cfg *cfg, const char *server, struct gw_err *err);
void http_close(struct http *h);

/* Make the current and every later request end at once with SYNC_STOPPED. Thread-safe;
 * may be called any time between http_open and http_close. */
void http_interrupt(struct http *h);

struct http_request {
	const char *method; /* "GET" or "POST" */
	const char *path;   /* "/configs/fetch?groupKeys=..."; appended to the server */
	const char *body;   /* POST body (may be NULL for an empty body) */
	size_t body_len;
	const char *content_type;   /* POST only */
	const char *const *headers; /* extra "Name: value" lines, NULL-terminated; may be NULL */
	int held;                   /* the admin may hold it (the listener): read_timeout bounds
	                             * the whole request; otherwise it bounds silence only, so
	                             * a large fetch on a slow link is not cut off mid-transfer */
	const char *label;          /* what the request is for, named in its errors ("fetch of
	                             * RULE"); may be NULL */
	int64_t timeout_ms;         /* held only: the whole request's bound instead of
	                             * read_timeout (a Consul blocking query's own wait); 0:
	                             * read_timeout */
	int small_reply;            /* the answer is a few hundred bytes (the admin's listener):
	                             * libcurl's receive buffer, allocated for the whole transfer,
	                             * is 1 KiB instead of 16 KiB (issue 30 item 9) */
	/* Optional: called with each response header line ("Name: value\r\n"), e.g. for
	 * X-Consul-Index; NULL: headers are not looked at. */
	void (*on_header)(void *arg, const char *line, size_t len);
	void *header_arg;
};

struct http_reply {
	long status; /* HTTP status */
	char *body;  /* NUL-terminated (the NUL is not counted in len); free with
	              * http_reply_free() */
	size_t len;
	size_t cap; /* bytes allocated for body */
};

/*
 * Perform one request. 0: a complete reply arrived, whatever its HTTP status (err->kind
 * SYNC_OK). -1: none did; err->kind is SYNC_FAIL_CONNECT, SYNC_FAIL_TIMEOUT,
 * SYNC_FAIL_TOO_LARGE, SYNC_FAIL_PARSE (undecodable content encoding) or SYNC_STOPPED and
 * err says "server URL: METHOD PATH: reason" (the query string is never shown: the old
 * login form carries the password there). err must not be NULL.
 */
int http_do(struct http *h, const struct http_request *rq, struct http_reply *rep,
            struct gw_err *err);
void http_reply_free(struct http_reply *rep);

/* Replies up to this size leave their buffer to the next request on the handle. */
#define HTTP_KEEP_BYTES ((size_t)16 << 20)

/*
 * Free the reply, keeping its buffer for the handle's next reply when it is at most
 * HTTP_KEEP_BYTES: a fetch of a changed 5 MB group then lands in pages already touched
 * instead of faulting in fresh ones (as a long-lived client keeps its buffer). 1 if kept.
 */
int http_reply_recycle(struct http *h, struct http_reply *rep);

const char *http_server(const struct http *h);

#endif
