/*
 * The watch threads (see watch.h). A slot's states: idle -> pending (send) -> done (its
 * thread has the answer) -> idle (wait took it). Everything under one mutex; a slot's
 * thread sleeps on its `work` until a request or the end, the source thread on `ready`
 * until any answer, its timeout or a wakeup.
 */
#include "source/polaris/watch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"

struct slot {
	struct polaris_watch *w;
	size_t i;
	struct http **conn; /* by server, opened when first used; under mu */
	pthread_cond_t work;
	pthread_t thread;
	int started;
	int pending, done, cancelled;
	size_t server;
	const char *body; /* borrowed (watch.h) */
	size_t len;
	struct polaris_watch_result res;
};

struct polaris_watch {
	const struct cfg *cfg;
	char *const *servers;
	size_t n;
	char *header; /* "X-Polaris-Token: ..." (secret) or NULL */
	pthread_mutex_t mu;
	pthread_cond_t ready;
	int quit, woken;
	struct slot slots[POLARIS_WATCH_SLOTS];
};

/* Run one request, the mutex not held (the connection is the slot's while pending). */
static void run_one(struct polaris_watch *w, struct http *h, const char *body, size_t len,
                    struct polaris_watch_result *res)
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
	res->rc = http_do(h, &rq, &res->reply, &res->err);
}

static void finish(struct slot *sl, struct polaris_watch_result *res)
{
	sl->res = *res;
	sl->done = 1;
	pthread_cond_broadcast(&sl->w->ready);
}

static void *run(void *arg)
{
	struct slot *sl = arg;
	struct polaris_watch *w = sl->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->quit && !(sl->pending && !sl->done))
			pthread_cond_wait(&sl->work, &w->mu);
		if (w->quit)
			break;
		size_t i = sl->server;
		struct polaris_watch_result res = {0};
		res.server = i;
		res.slot = sl->i;
		if (!sl->conn[i] && http_open(&sl->conn[i], w->cfg, w->servers[i], &res.err) != 0) {
			res.rc = -1;
			res.err.kind = SYNC_FAIL_CONNECT;
			finish(sl, &res);
			continue;
		}
		if (!sl->cancelled) {
			struct http *h = sl->conn[i];
			pthread_mutex_unlock(&w->mu);
			run_one(w, h, sl->body, sl->len, &res);
			pthread_mutex_lock(&w->mu);
		}
		if (sl->cancelled) {
			/* an interrupted handle stays interrupted: a fresh one for the next */
			http_reply_free(&res.reply);
			http_close(sl->conn[i]);
			sl->conn[i] = NULL;
			sl->cancelled = 0;
			res.rc = -1;
			res.err.kind = SYNC_STOPPED;
			snprintf(res.err.msg, sizeof res.err.msg, "%s: watch cancelled",
			         w->servers[i]);
		}
		finish(sl, &res);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int polaris_watch_new(struct polaris_watch **out, const struct cfg *cfg, char *const *servers,
                      size_t n, const char *token, struct gw_err *err)
{
	*out = NULL;
	struct polaris_watch *w = calloc(1, sizeof *w);
	if (!w)
		return gw_errf(err, "polaris: out of memory");
	w->cfg = cfg;
	w->servers = servers;
	w->n = n;
	pthread_mutex_init(&w->mu, NULL);
	gw_cond_init_mono(&w->ready);
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++) {
		w->slots[i].w = w;
		w->slots[i].i = i;
		pthread_cond_init(&w->slots[i].work, NULL);
	}
	if (token) {
		size_t hl = strlen(token) + sizeof "X-Polaris-Token: ";
		if (!(w->header = malloc(hl))) {
			polaris_watch_free(w);
			return gw_errf(err, "polaris: out of memory");
		}
		snprintf(w->header, hl, "X-Polaris-Token: %s", token);
	}
	*out = w;
	return 0;
}

void polaris_watch_free(struct polaris_watch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->quit = 1;
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++) {
		struct slot *sl = &w->slots[i];
		if (sl->pending && !sl->done && sl->conn && sl->conn[sl->server])
			http_interrupt(sl->conn[sl->server]);
		pthread_cond_broadcast(&sl->work);
	}
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++) {
		struct slot *sl = &w->slots[i];
		if (sl->started)
			pthread_join(sl->thread, NULL);
		for (size_t k = 0; sl->conn && k < w->n; k++)
			http_close(sl->conn[k]);
		free(sl->conn);
		if (sl->done)
			http_reply_free(&sl->res.reply);
		pthread_cond_destroy(&sl->work);
	}
	if (w->header) {
		explicit_bzero(w->header, strlen(w->header));
		free(w->header);
	}
	pthread_cond_destroy(&w->ready);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

int polaris_watch_send(struct polaris_watch *w, size_t slot, size_t server, const char *body,
                       size_t len, struct gw_err *err)
{
	if (slot >= POLARIS_WATCH_SLOTS)
		return gw_errf(err, "polaris: more than %d watches of %d files",
		               POLARIS_WATCH_SLOTS, POLARIS_WATCH_FILES);
	struct slot *sl = &w->slots[slot];
	pthread_mutex_lock(&w->mu);
	if (sl->pending) {
		pthread_mutex_unlock(&w->mu);
		return gw_errf(err, "polaris: watch %zu is already pending", slot);
	}
	if (!sl->started) {
		if (!sl->conn && !(sl->conn = calloc(w->n, sizeof *sl->conn))) {
			pthread_mutex_unlock(&w->mu);
			return gw_errf(err, "polaris: out of memory");
		}
		int rc = gw_thread_start(&sl->thread, "polaris-w", run, sl);
		if (rc != 0) {
			pthread_mutex_unlock(&w->mu);
			return gw_errf(err, "polaris: cannot start a watch thread: %s",
			               strerror(rc));
		}
		sl->started = 1;
	}
	sl->pending = 1;
	sl->done = 0;
	sl->server = server < w->n ? server : 0;
	sl->body = body;
	sl->len = len;
	pthread_cond_broadcast(&sl->work);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* A slot whose answer is there to take, or NULL. Under mu. */
static struct slot *answered(struct polaris_watch *w)
{
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++)
		if (w->slots[i].pending && w->slots[i].done)
			return &w->slots[i];
	return NULL;
}

int polaris_watch_wait(struct polaris_watch *w, int64_t timeout_ms,
                       struct polaris_watch_result *res)
{
	struct timespec until = gw_mono_deadline(timeout_ms > 0 ? timeout_ms : 0);
	pthread_mutex_lock(&w->mu);
	struct slot *sl;
	while (!(sl = answered(w)) && !w->woken && timeout_ms != 0) {
		if (timeout_ms < 0)
			pthread_cond_wait(&w->ready, &w->mu);
		else if (pthread_cond_timedwait(&w->ready, &w->mu, &until) != 0)
			break;
	}
	w->woken = 0;
	if (!sl)
		sl = answered(w);
	if (sl) {
		*res = sl->res;
		memset(&sl->res, 0, sizeof sl->res);
		sl->pending = 0;
		sl->done = 0;
		sl->body = NULL;
	}
	pthread_mutex_unlock(&w->mu);
	return sl != NULL;
}

size_t polaris_watch_pending(struct polaris_watch *w)
{
	size_t n = 0;
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++)
		n += w->slots[i].pending != 0;
	pthread_mutex_unlock(&w->mu);
	return n;
}

void polaris_watch_cancel(struct polaris_watch *w)
{
	pthread_mutex_lock(&w->mu);
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++) {
		struct slot *sl = &w->slots[i];
		if (sl->pending && !sl->done) {
			sl->cancelled = 1;
			if (sl->conn && sl->conn[sl->server])
				http_interrupt(sl->conn[sl->server]);
		}
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
