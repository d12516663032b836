/*
 * The watch stream over libcurl (see watch.h). Why the multi interface: the thread must
 * sleep until the stream has bytes OR its own deadline (the mirror's settle window, the
 * anti-entropy resync) OR a stop, and curl_multi_poll() gives all three with one call and
 * no timer of our own (curl_multi_wakeup is the thread-safe stop). The handle has no
 * total timeout (the stream is meant to last); a dead peer is found by TCP keepalive.
 */
#include "source/etcd/watch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shared/strbuf.h"
#include "source/curl_tls.h"
#include "source/etcd/reply.h"

#ifndef GWSYNC_VERSION
#define GWSYNC_VERSION "unknown"
#endif

/* The longest curl_multi_poll() sleeps at once: a day, i.e. "until something happens". */
#define POLL_CAP_MS (24 * 3600 * 1000)
/* How much of an error body is kept for the message. */
#define ERR_BODY_MAX 4096

struct etcd_watch {
	const struct cfg *cfg;
	CURLM *multi;
	CURL *easy; /* NULL: no stream open */
	struct curl_slist *headers;
	char *endpoint, *url, *body, *label;
	struct etcd_stream stream;
	etcd_stream_fn fn;
	void *arg;
	/* what the current transfer ended with, set by on_body */
	int fn_rc;
	int bad_stream;
	struct gw_err stream_err;
	long status;
	struct strbuf errbody;
	char errbuf[CURL_ERROR_SIZE];
};

int etcd_watch_new(struct etcd_watch **out, const struct cfg *cfg, size_t max_msg,
                   struct gw_err *err)
{
	*out = NULL;
	struct etcd_watch *w = calloc(1, sizeof *w);
	if (!w)
		return gw_errf(err, "etcd: out of memory");
	w->cfg = cfg;
	w->multi = curl_multi_init();
	if (!w->multi) {
		free(w);
		return gw_errf(err, "etcd: cannot initialise libcurl");
	}
	etcd_stream_init(&w->stream, max_msg);
	*out = w;
	return 0;
}

void etcd_watch_free(struct etcd_watch *w)
{
	if (!w)
		return;
	etcd_watch_close(w);
	curl_multi_cleanup(w->multi);
	free(w);
}

void etcd_watch_wakeup(struct etcd_watch *w)
{
	curl_multi_wakeup(w->multi);
}

void etcd_watch_close(struct etcd_watch *w)
{
	if (w->easy) {
		curl_multi_remove_handle(w->multi, w->easy);
		curl_easy_cleanup(w->easy);
		w->easy = NULL;
	}
	curl_slist_free_all(w->headers);
	w->headers = NULL;
	free(w->endpoint);
	free(w->url);
	free(w->body);
	free(w->label);
	w->endpoint = w->url = w->body = w->label = NULL;
	strbuf_reset(&w->errbody);
	etcd_stream_reset(&w->stream);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
	struct etcd_watch *w = userdata;
	size_t n = size * nmemb;
	if (w->status == 0)
		curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &w->status);
	if (w->status != 200) { /* an error body: keep its start for the message */
		size_t room = ERR_BODY_MAX - w->errbody.len;
		strbuf_add(&w->errbody, data, n < room ? n : room);
		return n;
	}
	int rc = etcd_stream_feed(&w->stream, data, n, w->fn, w->arg, &w->stream_err);
	if (rc == -1) {
		w->bad_stream = 1;
		return 0; /* aborts the transfer */
	}
	if (rc != 0) {
		w->fn_rc = rc;
		return 0;
	}
	return n;
}

int etcd_watch_open(struct etcd_watch *w, const char *endpoint, const char *auth_header,
                    const char *body, const char *label, etcd_stream_fn fn, void *arg,
                    struct gw_err *err)
{
	etcd_watch_close(w);
	const struct cfg *cfg = w->cfg;
	if (strncasecmp(endpoint, "https://", 8) == 0 && cfg_tls_check(cfg, err) != 0)
		return gw_err_prefix(err, "endpoint %s: watch", endpoint);
	size_t ulen = strlen(endpoint) + sizeof "/v3/watch";
	w->endpoint = strdup(endpoint);
	w->url = malloc(ulen);
	w->body = strdup(body);
	w->label = strdup(label);
	w->easy = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	w->headers = h;
	if (h)
		h = curl_slist_append(w->headers, "Expect:");
	/* ask etcd to end the stream when this member loses its leader (gRPC metadata
	 * "hasleader", which the gateway passes on from Grpc-Metadata- headers): a member cut
	 * off from the cluster would otherwise serve a silent watch forever */
	if (h)
		h = curl_slist_append(w->headers, "Grpc-Metadata-hasleader: true");
	if (h && auth_header)
		h = curl_slist_append(w->headers, auth_header);
	if (!w->endpoint || !w->url || !w->body || !w->label || !w->easy || !h) {
		etcd_watch_close(w);
		return gw_errf(err, "endpoint %s: watch: out of memory", endpoint);
	}
	snprintf(w->url, ulen, "%s/v3/watch", endpoint);
	w->fn = fn;
	w->arg = arg;
	w->fn_rc = 0;
	w->bad_stream = 0;
	w->status = 0;
	w->errbuf[0] = '\0';
	CURL *e = w->easy;
	int bad = 0;
	bad |= curl_easy_setopt(e, CURLOPT_URL, w->url) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, w->errbuf) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)cfg->connect_timeout_ms) !=
	       CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "gwsync/" GWSYNC_VERSION) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
#if LIBCURL_VERSION_NUM >= 0x075500
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
#else
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS)) !=
	       CURLE_OK;
#endif
	bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, w->headers) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_POST, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(w->body)) !=
	       CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDS, w->body) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, w) != CURLE_OK;
	if (bad || source_curl_tls(e, &cfg->tls) != 0) {
		etcd_watch_close(w);
		return gw_errf(err, "endpoint %s: libcurl refused an option (TLS support missing?)",
		               endpoint);
	}
	if (curl_multi_add_handle(w->multi, e) != CURLM_OK) {
		etcd_watch_close(w);
		return gw_errf(err, "endpoint %s: libcurl multi interface failed", endpoint);
	}
	return 0;
}

void etcd_watch_wait(struct etcd_watch *w, int64_t timeout_ms)
{
	int ms = timeout_ms < 0 || timeout_ms > POLL_CAP_MS ? POLL_CAP_MS : (int)timeout_ms;
	curl_multi_poll(w->multi, NULL, 0, ms, NULL);
}

/* Why a finished transfer ended, into err (its kind an enum sync_fail). */
static void classify(struct etcd_watch *w, CURLcode rc, struct gw_err *err)
{
	const char *where = w->endpoint;
	if (w->bad_stream) {
		err->kind = w->stream.too_large ? SYNC_FAIL_TOO_LARGE : SYNC_FAIL_PARSE;
		gw_errf(err, "%s: %s: %s", where, w->label, w->stream_err.msg);
	} else if (w->status && w->status != 200) {
		struct etcd_error e;
		int known = w->errbody.len && etcd_parse_error(w->errbody.p, w->errbody.len, &e);
		err->kind = w->status == 401 || w->status == 403 ? SYNC_FAIL_AUTH : SYNC_FAIL_HTTP;
		gw_errf(err, "%s: %s: HTTP %ld%s%s", where, w->label, w->status, known ? ": " : "",
		        known ? e.message : "");
	} else if (rc == CURLE_OK) {
		err->kind = SYNC_FAIL_CONNECT;
		gw_errf(err, "%s: %s: the server ended the stream", where, w->label);
	} else {
		err->kind = rc == CURLE_OPERATION_TIMEDOUT ? SYNC_FAIL_TIMEOUT : SYNC_FAIL_CONNECT;
		gw_errf(err, "%s: %s: %s", where, w->label,
		        w->errbuf[0] ? w->errbuf : curl_easy_strerror(rc));
	}
}

int etcd_watch_perform(struct etcd_watch *w, int *fn_rc, struct gw_err *err)
{
	*fn_rc = 0;
	err->kind = SYNC_OK;
	if (!w->easy) {
		err->kind = SYNC_FAIL_CONNECT;
		gw_errf(err, "etcd: no watch stream open");
		return 1;
	}
	int running = 0;
	if (curl_multi_perform(w->multi, &running) != CURLM_OK) {
		err->kind = SYNC_FAIL_CONNECT;
		gw_errf(err, "%s: %s: libcurl multi interface failed", w->endpoint, w->label);
		etcd_watch_close(w);
		return 1;
	}
	if (running)
		return 0;
	CURLcode rc = CURLE_OK;
	int left;
	CURLMsg *m;
	while ((m = curl_multi_info_read(w->multi, &left)))
		if (m->msg == CURLMSG_DONE && m->easy_handle == w->easy)
			rc = m->data.result;
	if (w->fn_rc)
		*fn_rc = w->fn_rc;
	else
		classify(w, rc, err);
	etcd_watch_close(w);
	return 1;
}
