/*
 * HTTP transport to one admin server (see curl_http.h).
 *
 * Why the multi interface for one transfer at a time: curl_easy_perform() cannot be woken
 * from another thread, and a listener request is held by the admin for up to 60 s. Driving
 * the same easy handle through a private multi handle with curl_multi_poll() lets
 * http_interrupt() (an atomic flag plus curl_multi_wakeup(), both thread-safe) end it within
 * milliseconds. The multi handle also owns the connection cache, so keeping it for the
 * life of the poller keeps the TCP (and TLS) connection alive between requests.
 *
 * Idle means asleep: libcurl arms its connect-timeout timer at the start of every
 * transfer, a reused connection included, and never disarms it, so a held poll on a kept
 * connection would wake connect_timeout after it was sent, for nothing. A request that
 * will reuse the connection the last one left open therefore has no separate connect
 * bound (see expect_reuse()).
 */
#include "source/curl_http.h"

#include <curl/curl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/thread.h"
#include "shared/strbuf.h"
#include "source/curl_tls.h"

/* The longest curl_multi_poll() sleeps when curl has no timer due sooner: a day. */
#define POLL_CAP_MS (24 * 3600 * 1000)

/* libcurl's receive buffer for a request whose answer is small: it lives as long as the
 * transfer, a held poll's minute included; a longer answer is read in more pieces. 1 KiB
 * is libcurl's smallest, and within glibc's per-thread cache (blocks up to 1032 bytes). */
#define SMALL_REPLY_BUFFER 1024L

/* How long after a transfer its kept connection still counts on being reused: well inside
 * libcurl's own limit (CURLOPT_MAXAGE_CONN, 118 s), after which it would connect anew. */
#define REUSE_FRESH_MS (30 * 1000)

#ifndef GWSYNC_VERSION
#define GWSYNC_VERSION "unknown"
#endif

struct http {
	CURLM *multi;
	CURL *easy;
	const struct cfg *cfg;
	int tls; /* https://: libcurl opens the TLS files at each new connection */
	char *server;
	size_t max_response;
	int64_t timeout_ms;          /* read_timeout: a held request whole, others' silence */
	int64_t transfer_timeout_ms; /* any other request whole */
	int64_t connect_timeout_ms;
	curl_socket_t kept; /* the connection the last transfer left open, or CURL_SOCKET_BAD */
	int64_t kept_ms;    /* when that transfer ended */
	atomic_int stop;
	char errbuf[CURL_ERROR_SIZE];
	char *spare; /* the last reply's buffer, kept for the next (http_reply_recycle) */
	size_t spare_cap;
};

/* Where a reply's body goes while it arrives. */
struct sink {
	struct http *h;
	struct strbuf body;
	int too_large;
	const struct http_request *rq; /* its on_header, for on_header_line */
};

/* ---------------------------------------------------------------- transport */

static size_t on_header_line(char *data, size_t size, size_t nmemb, void *userdata)
{
	const struct sink *s = userdata;
	s->rq->on_header(s->rq->header_arg, data, size * nmemb);
	return size * nmemb;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct sink *s = userdata;
	size_t n = size * nmemb;
	if (s->body.len + n > s->h->max_response) {
		s->too_large = 1;
		return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
	}
	if (s->body.cap == 0) {
		/* Size the buffer from Content-Length once, instead of doubling through a large
		 * fetch (the header is the compressed size if compressed). */
		size_t cap = 16384;
		curl_off_t cl = -1;
		curl_easy_getinfo(s->h->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
		if (cl > 0 && (uint64_t)cl < s->h->max_response)
			cap = (size_t)cl + 1;
		/* a large reply goes into pages already touched: no page faults (a small one,
		 * such as a listener's answer, leaves the buffer to the next fetch) */
		if (s->h->spare && (cl < 0 || cl >= 65536)) {
			s->body.p = s->h->spare;
			s->body.cap = s->h->spare_cap;
			s->h->spare = NULL;
		}
		strbuf_reserve(&s->body, cap);
	}
	if (strbuf_add(&s->body, data, n) != 0)
		return 0; /* out of memory (sticky in s->body.oom) */
	return n;
}

int http_open(struct http **out, const struct cfg *cfg, const char *server, struct gw_err *err)
{
	*out = NULL;
	struct http *h = calloc(1, sizeof *h);
	if (!h)
		return gw_errf(err, "server %s: out of memory", server);
	atomic_init(&h->stop, 0);
	h->server = strdup(server);
	h->cfg = cfg;
	h->tls = strncasecmp(server, "https://", 8) == 0;
	h->max_response = cfg->max_response > 0 ? (size_t)cfg->max_response : SIZE_MAX;
	h->timeout_ms = cfg->read_timeout_ms;
	h->transfer_timeout_ms = cfg->transfer_timeout_ms;
	h->connect_timeout_ms = cfg->connect_timeout_ms;
	h->kept = CURL_SOCKET_BAD;
	h->multi = curl_multi_init();
	h->easy = curl_easy_init();
	if (!h->server || !h->multi || !h->easy) {
		http_close(h);
		return gw_errf(err, "server %s: cannot initialise libcurl", server);
	}
	CURL *e = h->easy;
	int bad = 0;
	bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK; /* threads */
	bad |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->connect_timeout_ms) !=
	       CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)cfg->read_timeout_ms) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "gwsync/" GWSYNC_VERSION) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
	if (cfg->max_response > 0)
		bad |= curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
		                        (curl_off_t)cfg->max_response) != CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
#else
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) !=
	       CURLE_OK;
#endif
	bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
	if (bad || source_curl_tls(e, &cfg->tls) != 0) {
		http_close(h);
		return gw_errf(err, "server %s: libcurl refused an option (TLS support missing?)",
		               server);
	}
	*out = h;
	return 0;
}

void http_close(struct http *h)
{
	if (!h)
		return;
	if (h->easy)
		curl_easy_cleanup(h->easy);
	if (h->multi)
		curl_multi_cleanup(h->multi);
	free(h->spare);
	free(h->server);
	free(h);
}

void http_interrupt(struct http *h)
{
	atomic_store(&h->stop, 1);
	curl_multi_wakeup(h->multi);
}

const char *http_server(const struct http *h)
{
	return h->server;
}

void http_reply_free(struct http_reply *rep)
{
	free(rep->body);
	rep->body = NULL;
	rep->len = 0;
}

int http_reply_recycle(struct http *h, struct http_reply *rep)
{
	if (!rep->body || rep->cap > HTTP_KEEP_BYTES) {
		http_reply_free(rep);
		return 0;
	}
	free(h->spare);
	h->spare = rep->body;
	h->spare_cap = rep->cap;
	rep->body = NULL;
	rep->len = 0;
	return 1;
}

/* How a transfer ended: done (with its CURLcode), stopped, or the multi interface failed. */
enum transfer_end { TRANSFER_DONE, TRANSFER_STOPPED, TRANSFER_MULTI_FAILED };

/*
 * Whether the next transfer will go out on the connection the last one left open: it ended
 * well a moment ago, left its connection in the cache, and the server has not closed it
 * since (nothing to read: no FIN, no stray bytes, the test libcurl makes before reusing
 * one). Nothing touches the multi handle between transfers, so the descriptor is still
 * that connection's. When the server closes it between this look and libcurl's own, the
 * new connection is bounded by the whole request's limit instead of connect_timeout.
 */
static int expect_reuse(const struct http *h)
{
	if (h->kept == CURL_SOCKET_BAD || gw_mono_ms() - h->kept_ms > REUSE_FRESH_MS)
		return 0;
	struct pollfd p = {.fd = h->kept, .events = POLLIN};
	return poll(&p, 1, 0) == 0;
}

/* Runs the easy handle to completion (or interruption); *rc is the CURLcode when done.
 * `held`: the server may hold it for a minute (a long poll). */
static enum transfer_end run_transfer(struct http *h, CURLcode *rc, int held)
{
	if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK)
		return TRANSFER_MULTI_FAILED;
	enum transfer_end end = TRANSFER_MULTI_FAILED;
	int sheds = 0;
	for (;;) {
		if (atomic_load(&h->stop)) {
			end = TRANSFER_STOPPED;
			break;
		}
		int running = 0;
		if (curl_multi_perform(h->multi, &running) != CURLM_OK)
			break;
		if (!running) {
			int left;
			CURLMsg *m;
			while ((m = curl_multi_info_read(h->multi, &left)))
				if (m->msg == CURLMSG_DONE && m->easy_handle == h->easy) {
					*rc = m->data.result;
					end = TRANSFER_DONE;
				}
			break;
		}
		/* Sleeps until a socket is ready, curl's own timer is due (curl_multi_poll takes
		 * the sooner of that and our cap: the request's timeouts are curl's timers), or
		 * a curl_multi_wakeup() (how a stop is noticed). No timer of our own: a held
		 * poll is an idle thread, not one that wakes every second. A held one gives
		 * back the stack pages its sending took first (issue 30 item 9): before its
		 * first two sleeps (the answer's wait on a kept connection; the connect, then
		 * the answer's wait, on a new one), never while a long answer streams in. */
		if (held && sheds < 2) {
			gw_thread_shed_stack();
			sheds++;
		}
		if (curl_multi_poll(h->multi, NULL, 0, POLL_CAP_MS, NULL) != CURLM_OK)
			break;
	}
	/* which connection is left open: only asked while the handle is in the multi */
	h->kept = CURL_SOCKET_BAD;
	if (end == TRANSFER_DONE && *rc == CURLE_OK &&
	    curl_easy_getinfo(h->easy, CURLINFO_ACTIVESOCKET, &h->kept) != CURLE_OK)
		h->kept = CURL_SOCKET_BAD;
	h->kept_ms = gw_mono_ms();
	curl_multi_remove_handle(h->multi, h->easy);
	return end;
}

static int fail(struct http *h, const struct http_request *rq, struct gw_err *err, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));

static int fail(struct http *h, const struct http_request *rq, struct gw_err *err, const char *fmt,
                ...)
{
	char why[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	size_t plen = strcspn(rq->path, "?");
	return gw_errf(err, "server %s: %s%s%s %.*s: %s", h->server, rq->label ? rq->label : "",
	               rq->label ? ": " : "", rq->method, (int)plen, rq->path, why);
}

static const char *curl_text(struct http *h, CURLcode rc)
{
	return h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);
}

static int classify(struct http *h, const struct http_request *rq, CURLcode rc,
                    const struct sink *s, int64_t took_ms, struct gw_err *err)
{
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
		err->kind = SYNC_FAIL_TIMEOUT;
		/* which bound it was: the whole transfer's (its timer and ours differ by a few
		 * ms), or read_timeout's silence (curl: "Operation too slow") */
		if (!rq->held && took_ms + 100 >= h->transfer_timeout_ms)
			return fail(h, rq, err,
			            "not complete after %lld ms, the whole transfer's limit "
			            "(transfer_timeout): %zu bytes had arrived (a reply trickled "
			            "in, or too large for this link) (%s)",
			            (long long)h->transfer_timeout_ms, s->body.len,
			            curl_text(h, rc));
		return fail(h, rq, err, "timed out (%s)", curl_text(h, rc));
	case CURLE_FILESIZE_EXCEEDED:
		err->kind = SYNC_FAIL_TOO_LARGE;
		return fail(h, rq, err, "reply larger than admin.max_response (%zu bytes)",
		            h->max_response);
	case CURLE_WRITE_ERROR:
		if (s->too_large) {
			err->kind = SYNC_FAIL_TOO_LARGE;
			return fail(h, rq, err, "reply larger than admin.max_response (%zu bytes)",
			            h->max_response);
		}
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err, "%s",
		            s->body.oom ? "out of memory for the reply" : curl_text(h, rc));
	case CURLE_PEER_FAILED_VERIFICATION:
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err,
		            "TLS certificate verification failed: %s (check %s.tls.ca_file "
		            "and that the URL names the host the certificate was issued for)",
		            curl_text(h, rc), h->cfg->section ? h->cfg->section : "admin");
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_USE_SSL_FAILED:
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err, "TLS error: %s", curl_text(h, rc));
	case CURLE_BAD_CONTENT_ENCODING:
		err->kind = SYNC_FAIL_PARSE;
		return fail(h, rq, err, "cannot decode the reply: %s", curl_text(h, rc));
	default:
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err, "%s", curl_text(h, rc));
	}
}

/* One piece: one request is the libcurl sequence of setting its options, performing it and
 * reading back what happened, on one handle and one header list freed at one exit; its
 * classification of failures is classify() above. */
int http_do(struct http *h, const struct http_request *rq, struct http_reply *rep,
            struct gw_err *err)
{
	rep->status = 0;
	rep->body = NULL;
	rep->len = 0;
	rep->cap = 0;
	err->kind = SYNC_OK;
	if (atomic_load(&h->stop)) {
		err->kind = SYNC_STOPPED;
		return fail(h, rq, err, "stopped");
	}
	struct gw_err tls_err;
	if (h->tls && cfg_tls_check(h->cfg, &tls_err) != 0) {
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err, "%s", tls_err.msg);
	}

	struct strbuf url = {0};
	strbuf_adds(&url, h->server);
	strbuf_adds(&url, rq->path);
	struct curl_slist *hdrs = NULL, *tmp;
	int oom = url.oom;
	/* No "Expect: 100-continue" round trip before a POST body. */
	oom |= !(tmp = curl_slist_append(hdrs, "Expect:"));
	hdrs = tmp ? tmp : hdrs;
	if (rq->content_type) {
		char ct[128];
		snprintf(ct, sizeof ct, "Content-Type: %s", rq->content_type);
		oom |= !(tmp = curl_slist_append(hdrs, ct));
		hdrs = tmp ? tmp : hdrs;
	}
	for (const char *const *p = rq->headers; p && *p; p++) {
		oom |= !(tmp = curl_slist_append(hdrs, *p));
		hdrs = tmp ? tmp : hdrs;
	}
	if (oom) {
		strbuf_reset(&url);
		curl_slist_free_all(hdrs);
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err, "out of memory");
	}

	CURL *e = h->easy;
	struct sink s = {.h = h, .rq = rq};
	h->errbuf[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, url.p);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &s);
	/* Every transfer has a deadline for the whole of it: a reply trickled at a few bytes a
	 * second is never "silent", so a silence bound alone would let it hold the poller for
	 * days. The held listener: read_timeout (more than the admin's hold). Anything else:
	 * transfer_timeout whole, and read_timeout of silence (< 1 byte/s) ends it sooner. */
	if (rq->on_header) {
		curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header_line);
		curl_easy_setopt(e, CURLOPT_HEADERDATA, &s);
	}
	long whole = (long)h->transfer_timeout_ms;
	if (rq->held) {
		whole = (long)(rq->timeout_ms > 0 ? rq->timeout_ms : h->timeout_ms);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 0L);
	} else {
		long idle_s = (long)((h->timeout_ms + 999) / 1000);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT,
		                 1L); /* < 1 byte/s for idle_s: timeout */
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, idle_s > 0 ? idle_s : 1L);
	}
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, whole);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE,
	                 rq->small_reply ? SMALL_REPLY_BUFFER : (long)CURL_MAX_WRITE_SIZE);
	/* No connect phase on a kept connection: its timer would only wake the thread (see
	 * the top of the file); the same bound as the request's fires with it, never alone. */
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	                 expect_reuse(h) ? whole : (long)h->connect_timeout_ms);
	int64_t t0 = gw_mono_ms();
	if (strcmp(rq->method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, rq->body ? rq->body : "");
	} else {
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	}

	CURLcode rc = CURLE_OK;
	enum transfer_end end = run_transfer(h, &rc, rq->held);
	long status = 0;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	/* The handle keeps option pointers between requests: clear the ones that die here. */
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, NULL);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, NULL);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, NULL);
	curl_easy_setopt(e, CURLOPT_URL, NULL);
	curl_slist_free_all(hdrs);
	strbuf_reset(&url);

	if (end != TRANSFER_DONE || rc != CURLE_OK) {
		int ret;
		if (end == TRANSFER_STOPPED) {
			err->kind = SYNC_STOPPED;
			ret = fail(h, rq, err, "stopped");
		} else if (end == TRANSFER_MULTI_FAILED) {
			err->kind = SYNC_FAIL_CONNECT;
			ret = fail(h, rq, err, "libcurl multi interface failed");
		} else {
			/* before the reset: what arrived, and whether memory ran out, say why */
			ret = classify(h, rq, rc, &s, gw_mono_ms() - t0, err);
		}
		strbuf_reset(&s.body);
		return ret;
	}
	size_t len = s.body.len;
	size_t cap = s.body.cap;
	char *body = strbuf_finish(&s.body); /* "" for an empty body */
	if (!body) {
		err->kind = SYNC_FAIL_CONNECT;
		return fail(h, rq, err, "out of memory");
	}
	rep->status = status;
	rep->body = body;
	rep->len = len;
	rep->cap = cap > len ? cap : len + 1;
	return 0;
}
