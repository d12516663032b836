/*
 * `gwsyncd --status ADDR` over HTTP (see status_http.h): one libcurl easy handle for both
 * requests (one connection, kept alive between them), short timeouts as the --pause POST
 * has, proxies ignored (an http_proxy in the environment must not route a request for the
 * local agent elsewhere), no redirects, replies bounded. Nothing here is secret: the
 * address has no credentials (they are refused, so no message can echo them).
 */
#include "ops/status_http.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ops/listen_addr.h"
#include "ops/status_text.h"

#ifndef GWSYNC_VERSION
#define GWSYNC_VERSION "unknown"
#endif

#define STR2(x) #x
#define STR(x)  STR2(x)

int status_addr_http(const char *addr, char url[STATUS_URL_MAX], struct gw_err *err)
{
	if (strncasecmp(addr, "http://", 7) == 0 || strncasecmp(addr, "https://", 8) == 0) {
		const char *host = strstr(addr, "://") + 3;
		size_t hl = strcspn(host, "/?#");
		if (memchr(host, '@', hl))
			return gw_errf(err, "--status: put no user name or password in the status "
			                    "address (the endpoint's GET routes need none)");
		if (hl == 0)
			return gw_errf(err, "--status %.200s: no host in the URL", addr);
		if (strpbrk(host, "?#"))
			return gw_errf(err,
			               "--status %.200s: give the status endpoint's base URL, "
			               "without a query or fragment",
			               addr);
		size_t n = strlen(addr);
		while (addr[n - 1] == '/') /* the host is not empty: this stops inside it */
			n--;
		if (n >= STATUS_URL_MAX)
			return gw_errf(err, "--status %.200s...: longer than %d bytes", addr,
			               STATUS_URL_MAX - 1);
		memcpy(url, addr, n);
		url[n] = '\0';
		return 1;
	}
	/* a path, or a file of that name here (a socket called "host:1"), stays a socket */
	struct listen_addr la;
	struct gw_err not_an_address;
	struct stat st;
	if (strchr(addr, '/') || stat(addr, &st) == 0 ||
	    listen_addr_parse(addr, &la, &not_an_address) != 0)
		return 0;
	listen_addr_url(&la, url, STATUS_URL_MAX);
	return 1;
}

struct body {
	char *buf;
	size_t len, cap;
	int too_big;
};

static size_t keep(char *data, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t len = size * n;
	if (len > STATUS_REPLY_MAX - b->len) {
		b->too_big = 1;
		return 0; /* libcurl ends the transfer with CURLE_WRITE_ERROR */
	}
	if (b->cap - b->len <= len) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap - b->len <= len)
			cap *= 2;
		char *more = realloc(b->buf, cap);
		if (!more)
			return 0;
		b->buf = more;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = '\0';
	return len;
}

/* The first line of a plain-text answer, for a message. */
static int first_line(const char *s)
{
	return (int)strcspn(s ? s : "", "\r\n");
}

/* GET base+path: its JSON document, or NULL with err (and *status the HTTP status, 0 when
 * there was no answer). */
static json_t *get_json(CURL *h, const char *base, const char *path, long *status,
                        struct gw_err *err)
{
	char url[STATUS_URL_MAX + 64];
	snprintf(url, sizeof url, "%s%s", base, path);
	struct body b = {0};
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	CURLcode cc = curl_easy_perform(h);
	*status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	json_t *doc = NULL;
	if (b.too_big)
		gw_errf(err, "the agent at %s sent more than %d MiB for GET %s", base,
		        STATUS_REPLY_MAX >> 20, path);
	else if (cc != CURLE_OK)
		gw_errf(err,
		        "no agent answered at %s (%s); is gwsyncd running, with status.listen at "
		        "this address?",
		        base, cerr[0] ? cerr : curl_easy_strerror(cc));
	else if (*status != 200)
		gw_errf(err, "the agent at %s answered HTTP %ld to GET %s: %.*s", base, *status,
		        path, first_line(b.buf) < 300 ? first_line(b.buf) : 300,
		        b.buf ? b.buf : "");
	else if (!(doc = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL)))
		gw_errf(err,
		        "%s answered GET %s with something else than JSON: is it gwsyncd's "
		        "status endpoint?",
		        base, path);
	free(b.buf);
	return doc;
}

json_t *status_http_fetch(const char *url, struct gw_err *err)
{
	CURL *h = curl_easy_init();
	if (!h) {
		gw_errf(err, "cannot initialise libcurl");
		return NULL;
	}
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 15000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "gwsyncd/" GWSYNC_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
	long status;
	json_t *st = get_json(h, url, "/status", &status, err), *hist = NULL;
	if (st) {
		/* the same last changes the control socket sends (ops/control.c) */
		hist = get_json(h, url, "/history?limit=" STR(STATUS_TEXT_CHANGES), &status, err);
		if (!hist && status != 503) { /* 503: the agent keeps no history */
			json_decref(st);
			st = NULL;
		}
	}
	curl_easy_cleanup(h);
	if (!st)
		return NULL;
	json_t *doc = json_pack("{s:o, s:o}", "status", st, "history", hist ? hist : json_null());
	if (!doc)
		gw_errf(err, "out of memory");
	return doc;
}
