/*
 * Polaris behind the source table (see source.h), over Polaris's plain HTTP config API
 * (sync.c, watch.h), in ShenYu's node layout (source/node/node.h). One thread
 * ("polaris-0") owns the node map and the reads, and sleeps until the watch answers, the
 * mirror's settle window ends, the resync is due, or stop() wakes it: no periodic tick.
 *
 * Servers are tried in order; a failing one moves to the next at once, and the retry
 * schedule (retry.h) counts rounds over all of them: three servers down means three quick
 * failures, then the interval, and after `attempts` such rounds the backoff. A session
 * that had an answer from its server starts the schedule over.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "model/groups.h"
#include "source/polaris/polaris.h"
#include "source/rounds.h"

/* ---------------------------------------------------------------- status */

void polaris_count(struct source *s, uint64_t polls, uint64_t fetches, uint64_t bytes,
                   uint64_t watches)
{
	pthread_mutex_lock(&s->status.mu);
	s->status.st.polls += polls;
	s->status.st.fetches += fetches;
	s->status.st.bytes_fetched += bytes;
	if (watches)
		s->status.st.watches = watches;
	pthread_mutex_unlock(&s->status.mu);
}

/* ---------------------------------------------------------------- the thread */

/* Sleep ms, building due groups meanwhile, unless stopped first. 1 if stopped. */
static int pause_ms(struct source *s, int64_t ms)
{
	int64_t until = gw_mono_ms() + ms;
	for (;;) {
		if (atomic_load(&s->stop))
			return 1;
		int64_t now = gw_mono_ms();
		if (now >= until)
			return 0;
		node_flush(s->map, now, 0);
		int64_t dl = node_deadline(s->map);
		int64_t wake = dl >= 0 && dl < until ? dl : until;
		struct polaris_watch_result res;
		if (polaris_watch_wait(s->watch, wake > now ? wake - now : 0, &res))
			http_reply_free(&res.reply); /* none is pending: cannot happen */
	}
}

static void *run(void *arg)
{
	struct source *s = arg;
	const size_t n = s->pc->kv.n_servers;
	struct rounds r;
	rounds_init(&r, &s->args, "polaris", "server", s->pc->kv.servers, n);
	LOG_I(s->log, "polaris", "%s: Polaris sync of %s started", s->pc->kv.label, s->where);
	while (!atomic_load(&s->stop)) {
		struct gw_err err = {0};
		polaris_session(s, &err);
		enum sync_fail why = err.kind;
		if (why == SYNC_STOPPED || atomic_load(&s->stop))
			break;
		conn_count_failure(&s->status, why, err.msg);
		if (s->exchanged) {
			/* a watch that was answered before it failed (a connection cut mid-hold,
			 * a server restarted): watch again at once, on the same server; the
			 * versions sent name everything missed meanwhile */
			rounds_reset(&r);
			LOG_W(s->log, "polaris", "%s [%s]; watching %s again", err.msg,
			      sync_fail_name(why), s->pc->kv.servers[s->srv]);
			continue;
		}
		int64_t delay = rounds_failed(&r, &s->status, &s->srv, why, err.msg);
		if (delay < 0)
			continue;
		if (pause_ms(s, delay))
			break;
	}
	/* what settled-in-waiting changes there are still reach the subscribers */
	node_flush(s->map, gw_mono_ms(), 1);
	conn_set_state(&s->status, SOURCE_CONN_STOPPED, NULL);
	LOG_I(s->log, "polaris", "%s: Polaris sync stopped", s->pc->kv.label);
	return NULL;
}

/* ---------------------------------------------------------------- the table */

static void polaris_free(struct source *s);

static void describe(struct source *s)
{
	size_t pos = (size_t)snprintf(s->where, sizeof s->where, "%s/%s (groups ", s->pc->namespace,
	                              s->pc->file_group);
	for (size_t i = 0; i < s->cfg->n_groups && pos < sizeof s->where; i++)
		pos += (size_t)snprintf(s->where + pos, sizeof s->where - pos, "%s%s", i ? "," : "",
		                        gw_group_name(s->cfg->groups[i]));
	if (pos < sizeof s->where)
		snprintf(s->where + pos, sizeof s->where - pos, ")");
}

static int polaris_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	const struct polaris_config *pc = polaris_config(cfg);
	if (!pc || pc->kv.n_servers == 0 || !pc->kv.label)
		return gw_errf(err, "polaris: no servers configured");
	struct source *s = calloc(1, sizeof *s);
	if (!s)
		return gw_errf(err, "polaris: out of memory");
	s->args = *args;
	s->cfg = cfg;
	s->pc = pc;
	s->log = args->log;
	s->need_full = KV_FULL_START;
	s->resync_at = -1;
	atomic_init(&s->stop, 0);
	conn_init(&s->status, pc->kv.label, pc->kv.servers[0]);
	describe(s);
	if (!(s->conn = calloc(pc->kv.n_servers, sizeof *s->conn))) {
		polaris_free(s);
		return gw_errf(err, "polaris: out of memory");
	}
	/* all opened now (no connection is made yet), so stop() may interrupt any of them */
	for (size_t i = 0; i < pc->kv.n_servers; i++)
		if (http_open(&s->conn[i], cfg, pc->kv.servers[i], err) != 0) {
			polaris_free(s);
			return -1;
		}
	if (pc->token) {
		size_t hl = strlen(pc->token) + sizeof "X-Polaris-Token: ";
		if (!(s->token_header = malloc(hl))) {
			polaris_free(s);
			return gw_errf(err, "polaris: out of memory");
		}
		snprintf(s->token_header, hl, "X-Polaris-Token: %s", pc->token);
	}
	struct node_args na = {
	    .layout = pc->layout,
	    .prefix = pc->prefix,
	    .doc_names = polaris_whole_doc_names,
	    .groups = cfg->groups,
	    .n_groups = cfg->n_groups,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "polaris",
	    .server = pc->kv.label,
	    .settle_ms = pc->kv.settle_ms > 0 ? pc->kv.settle_ms : 100,
	};
	if (!(s->map = node_new(&na, err)) ||
	    polaris_watch_new(&s->watch, cfg, pc->kv.servers, pc->kv.n_servers, pc->token, err) !=
	        0) {
		polaris_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

static int polaris_initial_sync(struct source *s, struct gw_err *err)
{
	const size_t n = s->pc->kv.n_servers;
	for (size_t i = 0; i < n; i++) {
		if (atomic_load(&s->stop))
			return gw_errf(err, "start-up sync interrupted");
		struct gw_err e = {0};
		if (polaris_full_read(s, i, KV_FULL_START, &e) == 0) {
			s->srv = i;
			s->need_full = POLARIS_NO_FULL_READ;
			conn_mark_success(&s->status, SOURCE_CONN_POLLING,
			                  s->pc->kv.servers[s->srv]);
			return 0;
		}
		if (atomic_load(&s->stop))
			return gw_errf(err, "start-up sync interrupted");
		conn_count_failure(&s->status, e.kind, e.msg);
		LOG_W(s->log, "polaris", "%s [%s]", e.msg, sync_fail_name(e.kind));
		gw_errf(err, "%s", e.msg);
	}
	return gw_errf(err, "no Polaris server answered (%zu tried); the last: %.900s", n,
	               s->status.st.last_error);
}

static int polaris_start(struct source *s, struct gw_err *err)
{
	if (s->started)
		return 0;
	int rc = gw_thread_start(&s->thread, "polaris-0", run, s);
	if (rc != 0)
		return gw_errf(err, "polaris: cannot start the source thread: %s", strerror(rc));
	s->started = 1;
	return 0;
}

static void polaris_stop(struct source *s)
{
	if (!s)
		return;
	atomic_store(&s->stop, 1);
	for (size_t i = 0; s->conn && i < s->pc->kv.n_servers; i++)
		if (s->conn[i])
			http_interrupt(s->conn[i]);
	if (s->watch) {
		polaris_watch_cancel(s->watch);
		polaris_watch_wakeup(s->watch);
	}
}

static void polaris_free(struct source *s)
{
	if (!s)
		return;
	polaris_stop(s);
	if (s->started)
		pthread_join(s->thread, NULL);
	polaris_watch_free(s->watch);
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++)
		strbuf_reset(&s->bodies[i].b); /* after the watch threads, which borrowed them */
	for (size_t i = 0; s->conn && i < s->pc->kv.n_servers; i++)
		http_close(s->conn[i]);
	free(s->conn);
	node_free(s->map);
	polaris_versions_free(&s->versions);
	if (s->token_header) {
		explicit_bzero(s->token_header, strlen(s->token_header));
		free(s->token_header);
	}
	conn_destroy(&s->status);
	free(s);
}

static int polaris_status(struct source *s, size_t i, struct source_conn_status *out)
{
	if (i != 0)
		return 0;
	struct node_stats ns;
	node_stats(s->map, &ns);
	conn_copy(&s->status, out, ns.mirror.versions, ns.mirror.repairs, ns.mirror.last_event_ms);
	return 1;
}

static int polaris_selects(const struct cfg *cfg)
{
	return cfg->section && strcmp(cfg->section, "polaris") == 0;
}

static void polaris_summary(const struct cfg *cfg, char *buf, size_t cap)
{
	const struct polaris_config *pc = polaris_config(cfg);
	snprintf(buf, cap, "polaris source %s (layout %s)", pc && pc->kv.label ? pc->kv.label : "",
	         pc && pc->layout_name ? pc->layout_name : "");
}

static size_t polaris_conns(const struct cfg *cfg)
{
	return polaris_config(cfg) ? 1 : 0;
}

static const char *polaris_conn_name(const struct cfg *cfg, size_t i)
{
	const struct polaris_config *pc = polaris_config(cfg);
	return pc && i == 0 && pc->kv.label ? pc->kv.label : "";
}

const struct source_ops polaris_source_ops = {
    .type = "polaris",
    .section = "polaris",
    .config = &polaris_config_section,
    .selects = polaris_selects,
    .summary = polaris_summary,
    .running = "Polaris watch(es)",
    .conns = polaris_conns,
    .conn_name = polaris_conn_name,
    .open = polaris_open,
    .initial_sync = polaris_initial_sync,
    .start = polaris_start,
    .stop = polaris_stop,
    .free = polaris_free,
    .status = polaris_status,
};
