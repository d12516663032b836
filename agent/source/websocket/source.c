/*
 * WebSocket sync behind the source table (see source.h): one connection thread per
 * configured server (conn.h). initial_sync starts them and waits until one has finished
 * a full sync (every configured group then held) or every one has failed its first try
 * without offering anything; on failure it closes the gate (apply.h), so nothing reaches
 * the store while main loads the snapshot, and start() opens it: the connections keep
 * their retry schedule throughout. A connection's MYSELF answer is the start-up
 * fetch; there is no separate one.
 */
#include <libwebsockets.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"
#include "source/admin/config.h"
#include "source/source.h"
#include "source/websocket/config.h"
#include "source/websocket/conn.h"

struct source {
	struct source_args args;
	struct ws_shared sh;
	struct ws_conn **conns; /* one per admin server */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t running; /* under mu: conns[0 .. running) exist */
	int stop;       /* under mu */
	int synced;     /* under mu: a connection finished a full sync */
	size_t failed;  /* under mu: connections whose first try failed */
};

static int ws_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	struct source *s = calloc(1, sizeof *s);
	if (s)
		s->conns = calloc(
		    admin_config(args->cfg)->n_servers ? admin_config(args->cfg)->n_servers : 1,
		    sizeof *s->conns);
	if (!s || !s->conns) {
		free(s);
		return gw_errf(err, "websocket source: out of memory");
	}
	s->args = *args;
	s->sh.cfg = args->cfg;
	s->sh.in = args->ingest;
	s->sh.log = args->log;
	pthread_mutex_init(&s->sh.apply_mu, NULL);
	pthread_cond_init(&s->sh.gate_cv, NULL);
	pthread_mutex_init(&s->mu, NULL);
	gw_cond_init_mono(&s->cv);
	/* libwebsockets' own log is global; the agent logs every failure itself */
	lws_set_log_level(0, NULL);
	*out = s;
	return 0;
}

static void first_try(void *arg, size_t index, int synced)
{
	(void)index;
	struct source *s = arg;
	pthread_mutex_lock(&s->mu);
	if (synced)
		s->synced = 1;
	else
		s->failed++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static int start_conns(struct source *s, struct gw_err *err)
{
	const struct cfg *cfg = s->args.cfg;
	pthread_mutex_lock(&s->mu);
	for (size_t i = s->running; i < admin_config(cfg)->n_servers && !s->stop; i++) {
		if (conn_start(&s->conns[i], &s->sh, i, first_try, s, err) != 0) {
			pthread_mutex_unlock(&s->mu);
			return -1;
		}
		s->running = i + 1;
	}
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void free_conns(struct source *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->running;
	s->running = 0; /* status() and stop() see none from now on */
	s->failed = 0;
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < n; i++)
		conn_stop(s->conns[i]); /* all asked first: they end in parallel */
	for (size_t i = 0; i < n; i++) {
		conn_free(s->conns[i]);
		s->conns[i] = NULL;
	}
}

static int ws_initial_sync(struct source *s, struct gw_err *err)
{
	if (start_conns(s, err) != 0)
		return -1;
	const size_t n = admin_config(s->args.cfg)->n_servers;
	pthread_mutex_lock(&s->mu);
	while (!s->stop && !s->synced && s->failed < n)
		pthread_cond_wait(&s->cv, &s->mu);
	int ok = s->synced, stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	if (ok)
		return 0;
	if (stop)
		return gw_errf(err, "start-up sync interrupted");
	/* The connections keep trying on their schedule; nothing they get is offered until
	 * start(), after main has loaded the snapshot. */
	ws_gate(&s->sh, 1);
	return gw_errf(err, "no admin server answered over WebSocket (%zu tried)", n);
}

static int ws_start(struct source *s, struct gw_err *err)
{
	int rc = start_conns(s, err);
	ws_gate(&s->sh, 0);
	return rc;
}

static void ws_stop(struct source *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	ws_shared_stop(&s->sh);
	for (size_t i = 0; i < s->running; i++)
		conn_stop(s->conns[i]); /* quick: a flag and a wake-up */
	pthread_mutex_unlock(&s->mu);
}

static void ws_free(struct source *s)
{
	if (!s)
		return;
	ws_stop(s);
	free_conns(s);
	free(s->conns);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->sh.gate_cv);
	pthread_mutex_destroy(&s->sh.apply_mu);
	free(s);
}

static int ws_status(struct source *s, size_t i, struct source_conn_status *out)
{
	if (!s)
		return 0;
	pthread_mutex_lock(&s->mu);
	int have = i < s->running;
	if (have)
		conn_status(s->conns[i], out);
	pthread_mutex_unlock(&s->mu);
	return have;
}

/* admin: with ws:// or wss:// servers (config/config_admin.c tells the family). */
static int ws_selects(const struct cfg *cfg)
{
	const struct admin_config *a = admin_config(cfg);
	return cfg->section && strcmp(cfg->section, "admin") == 0 && a && a->websocket;
}

const struct source_ops websocket_source_ops = {
    .type = "websocket",
    .section = "admin",
    .config = &websocket_config_section,
    .selects = ws_selects,
    .summary = admin_summary,
    .running = "WebSocket connection(s)",
    .conns = admin_conns,
    .conn_name = admin_conn_name,
    .open = ws_open,
    .initial_sync = ws_initial_sync,
    .start = ws_start,
    .stop = ws_stop,
    .free = ws_free,
    .status = ws_status,
};
