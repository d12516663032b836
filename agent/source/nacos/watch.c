/*
 * One listener thread of the Nacos source (see nacos.h): posts its body, a long poll the
 * server holds up to 29.5 s, and hands the keys an answer names to the main thread, then
 * waits for the body that carries their new md5s (posting the old one again would be
 * answered at once with the same keys). A failure is handed over the same way: the main
 * thread decides what follows (a login, a full read, the retry schedule) and releases the
 * listener with a new body. Interrupted on purpose (its keys changed while it was held),
 * it opens a fresh handle and posts the new body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/nacos/listen.h"
#include "source/nacos/nacos.h"

struct answer {
	struct source *s;
	size_t n;
};

/* Under s->sh.status.mu: queue one changed key for the main thread. */
static int queue_key(void *ctx, const char *id, size_t len)
{
	struct answer *a = ctx;
	struct source *s = a->s;
	if (s->n_changed == s->cap_changed) {
		size_t cap = s->cap_changed ? 2 * s->cap_changed : 64;
		char **v = realloc(s->changed, cap * sizeof *v);
		if (!v)
			return -1;
		s->changed = v;
		s->cap_changed = cap;
	}
	if (!(s->changed[s->n_changed] = strndup(id, len)))
		return -1;
	s->n_changed++;
	a->n++;
	return 0;
}

/* Under s->sh.status.mu: report a failure to the main thread and wait for a new body. */
static void failed(struct nacos_watcher *w, const struct gw_err *err)
{
	struct source *s = w->s;
	if (!s->watch_failed) {
		s->watch_failed = 1;
		s->watch_why = err->kind;
		snprintf(s->watch_msg, sizeof s->watch_msg, "%s", err->msg);
	}
	w->answered = 1;
	pthread_cond_signal(&s->sh.status.wake);
}

void *nacos_watch_run(void *arg)
{
	struct nacos_watcher *w = arg;
	struct source *s = w->s;
	pthread_mutex_lock(&s->sh.status.mu);
	while (!atomic_load(&s->sh.stop)) {
		if (!w->body || (w->answered && w->posted_gen == w->body_gen)) {
			pthread_cond_wait(&s->wcv, &s->sh.status.mu);
			continue;
		}
		if (!w->h || w->interrupt || w->server != s->ep) {
			struct gw_err oerr = {0};
			http_close(w->h);
			w->h = NULL;
			w->interrupt = 0;
			w->server = s->ep;
			if (nacos_client_open_handle(s->client, w->server, &w->h, &oerr) != 0) {
				oerr.kind = SYNC_FAIL_CONNECT;
				failed(w, &oerr);
				w->posted_gen = w->body_gen;
				continue;
			}
		}
		char *body = strdup(w->body);
		size_t len = w->body_len;
		struct http *h = w->h;
		w->posted_gen = w->body_gen;
		w->holding = 1;
		w->answered = 0;
		pthread_mutex_unlock(&s->sh.status.mu);
		struct http_reply rep = {0};
		struct gw_err err = {0};
		int rc = body ? nacos_client_listen(s->client, h, body, len, &rep, &err) : -1;
		if (!body) {
			err.kind = SYNC_FAIL_CONNECT;
			gw_errf(&err, "nacos: out of memory");
		}
		free(body);
		pthread_mutex_lock(&s->sh.status.mu);
		w->holding = 0;
		s->sh.status.st.polls++;
		if (atomic_load(&s->sh.stop))
			break;
		if (rc != 0) {
			if (err.kind == SYNC_STOPPED)
				continue; /* interrupted on purpose: a new body is there */
			failed(w, &err);
			continue;
		}
		s->good_polls++;
		struct answer a = {s, 0};
		long named = nacos_listen_parse(rep.body, rep.len, s->nc->group, s->nc->tenant,
		                                queue_key, &a);
		http_reply_free(&rep);
		if (named < 0) {
			err.kind = SYNC_FAIL_PARSE;
			gw_errf(&err,
			        "server %s: listener: the answer is not a list of changed keys",
			        s->nc->kv.servers[w->server]);
			failed(w, &err);
		} else if (a.n > 0) {
			w->answered = 1;
			pthread_cond_signal(&s->sh.status.wake);
		}
	}
	pthread_mutex_unlock(&s->sh.status.mu);
	return NULL;
}
