/*
 * The watch thread (see watch.h). States: idle -> pending (send) -> done (the thread has
 * the answer) -> idle (wait took it). Everything under one mutex; the thread sleeps on
 * `work` until a request or the end, the source thread on `ready` until an answer, its
 * timeout or a wakeup.
 */
#include "source/polaris/watch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"

struct polaris_watch {
	const struct cfg *cfg;
	char *const *servers;
	size_t n;
	char *header;       /* "X-Polaris-Token: ..." (secret) or NULL */
	struct http **conn; /* by server, opened when first used; under mu */

	pthread_mutex_t mu;
	pthread_cond_t work, ready;
	pthread_t thread;
	int started, quit, woken;
	int pending, done, cancelled;
	size_t server;
	const char *body; /* borrowed (watch.h) */
	size_t len;
	struct polaris_watch_result res;
};

/* Run one request, the mutex not held (the connection is this thread's while pending). */
static void run_one(struct polaris_watch *w, struct http *h, size_t server, const char *body,
                    size_t len, struct polaris_watch_result *res)
{
	const char *headers[2] = {w->header, NULL};
	struct http_request rq = {
	    .method = "POST",
	    .path = "/config/v1/WatchConfigFile",
	    .body = body,
	    .body_len = len,
	    .content_type = "application/json",
	    .headers = w->header ? headers : NULL,
	    .held = 1,
	    .label = "WatchConfigFile",
	};
	memset(res, 0, sizeof *res);
	res->server = server;
	res->rc = http_do(h, &rq, &res->reply, &res->err);
}

static void *run(void *arg)
{
	struct polaris_watch *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->quit && !(w->pending && !w->done))
			pthread_cond_wait(&w->work, &w->mu);
		if (w->quit)
			break;
		size_t i = w->server;
		struct http *h = w->conn[i];
		if (!h) {
			struct gw_err err = {0};
			if (http_open(&w->conn[i], w->cfg, w->servers[i], &err) != 0) {
				memset(&w->res, 0, sizeof w->res);
				w->res.rc = -1;
				w->res.server = i;
				w->res.err = err;
				w->res.err.kind = SYNC_FAIL_CONNECT;
				w->done = 1;
				pthread_cond_broadcast(&w->ready);
				continue;
			}
			h = w->conn[i];
		}
		const char *body = w->body;
		size_t len = w->len;
		w->body = NULL;
		struct polaris_watch_result res = {0};
		if (!w->cancelled) {
			pthread_mutex_unlock(&w->mu);
			run_one(w, h, i, body, len, &res);
			pthread_mutex_lock(&w->mu);
		}
		if (w->cancelled) {
			/* an interrupted handle stays interrupted: a fresh one for the next */
			http_reply_free(&res.reply);
			http_close(w->conn[i]);
			w->conn[i] = NULL;
			w->cancelled = 0;
			res.rc = -1;
			res.err.kind = SYNC_STOPPED;
			snprintf(res.err.msg, sizeof res.err.msg, "%s: watch cancelled",
			         w->servers[i]);
		}
		w->res = res;
		w->done = 1;
		pthread_cond_broadcast(&w->ready);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int polaris_watch_new(struct polaris_watch **out, const struct cfg *cfg, char *const *servers,
                      size_t n, const char *token, struct gw_err *err)
{
	*out = NULL;
	struct polaris_watch *w = calloc(1, sizeof *w);
	if (!w || !(w->conn = calloc(n, sizeof *w->conn))) {
		free(w);
		return gw_errf(err, "polaris: out of memory");
	}
	w->cfg = cfg;
	w->servers = servers;
	w->n = n;
	if (token) {
		size_t hl = strlen(token) + sizeof "X-Polaris-Token: ";
		if (!(w->header = malloc(hl))) {
			free(w->conn);
			free(w);
			return gw_errf(err, "polaris: out of memory");
		}
		snprintf(w->header, hl, "X-Polaris-Token: %s", token);
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work, NULL);
	gw_cond_init_mono(&w->ready);
	int rc = gw_thread_start(&w->thread, "polaris-w", run, w);
	if (rc != 0) {
		polaris_watch_free(w);
		return gw_errf(err, "polaris: cannot start the watch thread: %s", strerror(rc));
	}
	w->started = 1;
	*out = w;
	return 0;
}

void polaris_watch_free(struct polaris_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->quit = 1;
	if (w->pending && !w->done && w->conn[w->server])
		http_interrupt(w->conn[w->server]);
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->thread, NULL);
	for (size_t i = 0; i < w->n; i++)
		http_close(w->conn[i]);
	free(w->conn);
	if (w->done)
		http_reply_free(&w->res.reply);
	if (w->header) {
		explicit_bzero(w->header, strlen(w->header));
		free(w->header);
	}
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->ready);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int polaris_watch_send(struct polaris_watch *w, size_t server, const char *body, size_t len,
                       struct gw_err *err)
{
	pthread_mutex_lock(&w->mu);
	if (w->pending) {
		pthread_mutex_unlock(&w->mu);
		return gw_errf(err, "polaris: a watch is already pending");
	}
	w->pending = 1;
	w->done = 0;
	w->server = server < w->n ? server : 0;
	w->body = body;
	w->len = len;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

int polaris_watch_wait(struct polaris_watch *w, int64_t timeout_ms,
                       struct polaris_watch_result *res)
{
	struct timespec until = gw_mono_deadline(timeout_ms > 0 ? timeout_ms : 0);
	int got = 0;
	pthread_mutex_lock(&w->mu);
	while (!w->done && !w->woken && timeout_ms != 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&w->ready, &w->mu);
		else if (pthread_cond_timedwait(&w->ready, &w->mu, &until) != 0)
			break;
	}
	w->woken = 0;
	if (w->pending && w->done) {
		*res = w->res;
		memset(&w->res, 0, sizeof w->res);
		w->pending = 0;
		w->done = 0;
		got = 1;
	}
	pthread_mutex_unlock(&w->mu);
	return got;
}

void polaris_watch_cancel(struct polaris_watch *w)
{
	pthread_mutex_lock(&w->mu);
	if (w->pending && !w->done) {
		w->cancelled = 1;
		if (w->conn[w->server])
			http_interrupt(w->conn[w->server]);
	}
	pthread_mutex_unlock(&w->mu);
}

void polaris_watch_wakeup(struct polaris_watch *w)
{
	pthread_mutex_lock(&w->mu);
	w->woken = 1;
	pthread_cond_broadcast(&w->ready);
	pthread_mutex_unlock(&w->mu);
}
