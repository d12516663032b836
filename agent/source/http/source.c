/*
 * HTTP long-polling behind the source table (see source.h): the start-up fetch
 * (startup.h) is its initial_sync, one poller thread per configured server (poller.h)
 * is its start. The mutex only guards which start-up fetch runs and the stop flag, so
 * stop() from the signal thread never touches a fetch that is being freed.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/admin/config.h"
#include "source/http/admin.h"
#include "source/http/poller.h"
#include "source/http/startup.h"
#include "source/source.h"

struct source {
	struct source_args args;
	pthread_mutex_t mu;
	struct startup *startup; /* under mu: the running start-up fetch, if any */
	struct admin *probing;   /* under mu: the server the dry run's probe is asking */
	int stop;                /* under mu */
	struct poller **pollers; /* one per admin server */
	atomic_size_t running;   /* pollers[0 .. running) are started */
	/* The start-up fetch that delivered: a success of that server's, counted by its
	 * poller from its start (else /status said "no success yet" until its first poll
	 * answered, up to a minute later). served_ms 0: none. */
	size_t served;
	int64_t served_ms;
};

static int longpoll_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	struct source *s = calloc(1, sizeof *s);
	if (s)
		s->pollers = calloc(
		    admin_config(args->cfg)->n_servers ? admin_config(args->cfg)->n_servers : 1,
		    sizeof *s->pollers);
	if (!s || !s->pollers) {
		free(s);
		return gw_errf(err, "http source: out of memory");
	}
	s->args = *args;
	pthread_mutex_init(&s->mu, NULL);
	atomic_init(&s->running, 0);
	*out = s;
	return 0;
}

static int longpoll_initial_sync(struct source *s, struct gw_err *err)
{
	struct startup *st;
	if (startup_new(&st, s->args.cfg, s->args.ingest, s->args.log, err) != 0)
		return -1;
	pthread_mutex_lock(&s->mu);
	s->startup = st;
	if (s->stop)
		startup_stop(st);
	pthread_mutex_unlock(&s->mu);
	int rc = startup_run(st, err);
	pthread_mutex_lock(&s->mu);
	if (rc == 0)
		startup_served(st, &s->served, &s->served_ms);
	s->startup = NULL;
	pthread_mutex_unlock(&s->mu);
	startup_free(st);
	return rc;
}

/* One server's listener call, answered at once; interruptible by stop(). */
static int probe_one(struct source *s, size_t i, unsigned *named, struct gw_err *err)
{
	struct admin *a;
	err->kind = SYNC_FAIL_CONNECT; /* what an admin_open() failure counts as */
	if (admin_open(&a, s->args.cfg, i, s->args.log, err) != 0)
		return -1;
	pthread_mutex_lock(&s->mu);
	s->probing = a;
	if (s->stop)
		admin_interrupt(a);
	pthread_mutex_unlock(&s->mu);
	int rc = admin_listen_now(a, named, err);
	pthread_mutex_lock(&s->mu);
	s->probing = NULL;
	pthread_mutex_unlock(&s->mu);
	admin_close(a);
	return rc;
}

/* The dry run's listener call to every server (source.h: probe). A server that cannot be
 * reached now is only reported: the daemon would retry it, and the start-up fetch has
 * already reached one. A server that answers and refuses is what a real run would meet at
 * its first poll, over and over: that fails the dry run. */
static int longpoll_probe(struct source *s, FILE *out, struct gw_err *err)
{
	const struct cfg *cfg = s->args.cfg;
	size_t answered = 0, refused = 0;
	struct gw_err first = {0}, e;
	for (size_t i = 0; i < admin_config(cfg)->n_servers; i++) {
		unsigned named = 0;
		if (probe_one(s, i, &named, &e) == 0) {
			answered++;
			size_t n = 0;
			for (size_t k = 0; k < cfg->n_groups; k++)
				n += (named >> cfg->groups[k]) & 1u;
			fprintf(
			    out,
			    "listener %s: accepted the %zu configured group(s), answered at once "
			    "(%zu named)\n",
			    admin_config(cfg)->servers[i], cfg->n_groups, n);
			continue;
		}
		enum sync_fail why = e.kind;
		if (why == SYNC_STOPPED)
			return gw_errf(err, "the listener call was interrupted");
		if (why == SYNC_FAIL_CONNECT || why == SYNC_FAIL_TIMEOUT) {
			fprintf(out, "listener %s: not reachable now (%s): not checked\n",
			        admin_config(cfg)->servers[i], e.msg);
			continue;
		}
		answered++;
		fprintf(out, "listener %s: REFUSED [%s]: %s\n", admin_config(cfg)->servers[i],
		        sync_fail_name(why), e.msg);
		if (!refused++)
			first = e;
	}
	if (refused)
		return gw_errf(
		    err,
		    "%zu of %zu admin server(s) refused the listener call a running agent "
		    "makes: %s",
		    refused, admin_config(cfg)->n_servers, first.msg);
	if (!answered)
		return gw_errf(err, "no admin server answered the listener call");
	return 0;
}

static int longpoll_start(struct source *s, struct gw_err *err)
{
	const struct cfg *cfg = s->args.cfg;
	for (size_t i = atomic_load(&s->running); i < admin_config(cfg)->n_servers; i++) {
		pthread_mutex_lock(&s->mu);
		int64_t served_ms = s->served == i ? s->served_ms : 0;
		pthread_mutex_unlock(&s->mu);
		if (poller_start(&s->pollers[i], cfg, i, s->args.ingest, s->args.log, served_ms,
		                 err) != 0)
			return -1;
		atomic_store(&s->running, i + 1); /* publishes pollers[i] to status() */
	}
	return 0;
}

static void longpoll_stop(struct source *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	if (s->startup)
		startup_stop(s->startup);
	if (s->probing)
		admin_interrupt(s->probing);
	pthread_mutex_unlock(&s->mu);
	size_t n = atomic_load(&s->running);
	for (size_t i = 0; i < n; i++)
		poller_stop(s->pollers[i]);
}

static void longpoll_free(struct source *s)
{
	if (!s)
		return;
	longpoll_stop(s); /* every poller asked first, so they end in parallel */
	size_t n = atomic_load(&s->running);
	for (size_t i = 0; i < n; i++)
		poller_free(s->pollers[i]);
	free(s->pollers);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static int longpoll_status(struct source *s, size_t i, struct source_conn_status *out)
{
	if (!s || i >= atomic_load(&s->running))
		return 0;
	poller_status(s->pollers[i], out);
	return 1;
}

/* admin: with http:// or https:// servers. */
static int longpoll_selects(const struct cfg *cfg)
{
	const struct admin_config *a = admin_config(cfg);
	return cfg->section && strcmp(cfg->section, "admin") == 0 && a && !a->websocket;
}

const struct source_ops http_source_ops = {
    .type = "http",
    .section = "admin",
    .config = &admin_config_section,
    .selects = longpoll_selects,
    .summary = admin_summary,
    .running = "poller(s)",
    .conns = admin_conns,
    .conn_name = admin_conn_name,
    .open = longpoll_open,
    .initial_sync = longpoll_initial_sync,
    .probe = longpoll_probe,
    .start = longpoll_start,
    .stop = longpoll_stop,
    .free = longpoll_free,
    .status = longpoll_status,
};
