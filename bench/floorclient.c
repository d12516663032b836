/*
 * floorclient: the floor of the change-propagation benchmark. It is the least any client
 * must do to learn of a change: hold a listener, and when the admin answers, fetch the
 * named groups with libcurl (the library gwsync uses, one reused handle, keep-alive,
 * TCP_NODELAY) into memory. It parses nothing on that path and calls nobody: the moment
 * the last byte of the group is in memory is reported to fastadmin (a datagram
 * "F GROUP LASTMODIFYTIME T_NS BYTES", CLOCK_MONOTONIC), which subtracts the time it
 * answered the listener. So gwsync's figure minus this floor is the agent's own cost:
 * parsing, storing, diffing and calling the subscribers.
 *
 * Its listener requests carry "X-Bench-Client: floor" so fastadmin can answer it and the
 * agent one after the other instead of making them race for the two cores. It runs until
 * the admin goes away.
 */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "benchdata.h"

#define MAX_GROUPS 8

struct buf {
	char *p;
	size_t len, cap;
};

static size_t on_data(char *ptr, size_t size, size_t n, void *ud)
{
	struct buf *b = ud;
	size_t add = size * n;
	if (b->len + add + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1 << 16;
		while (cap < b->len + add + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, ptr, add);
	b->len += add;
	b->p[b->len] = '\0';
	return add;
}

struct group {
	char name[32];
	char md5[65];
	int64_t lmt;
};

/* Read GROUP's md5 and lastModifyTime from a fetch reply (fastadmin writes them first). */
static int scan_version(const struct buf *b, struct group *g)
{
	char key[64];
	snprintf(key, sizeof key, "\"%s\":{\"md5\":\"", g->name);
	const char *p = memmem(b->p, b->len, key, strlen(key));
	if (!p)
		return -1;
	p += strlen(key);
	const char *q = strchr(p, '"');
	if (!q || q - p >= (long)sizeof g->md5)
		return -1;
	memcpy(g->md5, p, (size_t)(q - p));
	g->md5[q - p] = '\0';
	const char *t = strstr(q, "\"lastModifyTime\":");
	if (!t)
		return -1;
	g->lmt = strtoll(t + strlen("\"lastModifyTime\":"), NULL, 10);
	return 0;
}

static int fetch(CURL *h, const char *server, struct group *gs, size_t n, struct buf *b)
{
	char url[2048];
	size_t off = (size_t)snprintf(url, sizeof url, "%s/configs/fetch?", server);
	for (size_t i = 0; i < n; i++)
		off += (size_t)snprintf(url + off, sizeof url - off, "%sgroupKeys=%s", i ? "&" : "",
		                        gs[i].name);
	b->len = 0;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	return curl_easy_perform(h) == CURLE_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: floorclient SERVER GROUP[,GROUP...] REPORT_SOCKET\n");
		return 2;
	}
	const char *server = argv[1];
	struct group gs[MAX_GROUPS];
	size_t ng = 0;
	char *list = strdup(argv[2]);
	for (char *tok = strtok(list, ","); tok && ng < MAX_GROUPS; tok = strtok(NULL, ","))
		snprintf(gs[ng++].name, sizeof gs[0].name, "%s", tok);
	free(list);

	int rfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	snprintf(su.sun_path, sizeof su.sun_path, "%s", argv[3]);

	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURL *h = curl_easy_init();
	struct buf b = {0};
	struct curl_slist *hdrs = curl_slist_append(NULL, "X-Bench-Client: floor");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 90000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);

	if (fetch(h, server, gs, ng, &b) < 0) {
		fprintf(stderr, "floorclient: initial fetch from %s failed\n", server);
		return 1;
	}
	for (size_t i = 0; i < ng; i++)
		if (scan_version(&b, &gs[i]) < 0) {
			fprintf(stderr, "floorclient: no version of %s in the reply\n", gs[i].name);
			return 1;
		}

	for (;;) {
		char form[2048];
		size_t off = 0;
		for (size_t i = 0; i < ng; i++)
			off += (size_t)snprintf(form + off, sizeof form - off, "%s%s=%s,%" PRId64,
			                        i ? "&" : "", gs[i].name, gs[i].md5, gs[i].lmt);
		char url[1024];
		snprintf(url, sizeof url, "%s/configs/listener", server);
		b.len = 0;
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
		CURLcode rc = curl_easy_perform(h);
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
		if (rc != CURLE_OK)
			break; /* the admin went away: the benchmark is over */

		/* the changed groups, from {"code":200,...,"data":["RULE",...]} */
		struct group changed[MAX_GROUPS];
		size_t nc = 0;
		for (size_t i = 0; i < ng; i++) {
			char quoted[40];
			snprintf(quoted, sizeof quoted, "\"%.31s\"", gs[i].name);
			const char *data = b.p ? strstr(b.p, "\"data\"") : NULL;
			if (data && strstr(data, quoted))
				changed[nc++] = gs[i];
		}
		if (nc == 0)
			continue;
		if (fetch(h, server, changed, nc, &b) < 0)
			break;
		int64_t t = bench_now_ns();
		for (size_t i = 0; i < nc; i++) {
			if (scan_version(&b, &changed[i]) < 0)
				continue;
			for (size_t j = 0; j < ng; j++)
				if (strcmp(gs[j].name, changed[i].name) == 0)
					gs[j] = changed[i];
		}
		char msg[256];
		int n = snprintf(msg, sizeof msg, "F %s %" PRId64 " %" PRId64 " %zu\n",
		                 changed[0].name, changed[0].lmt, t, b.len);
		sendto(rfd, msg, (size_t)n, 0, (struct sockaddr *)&su, sizeof su);
	}
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	curl_global_cleanup();
	free(b.p);
	close(rfd);
	return 0;
}
