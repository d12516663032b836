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

/* the shell's functions are the table's entries (kv/shell.h) */
_Static_assert(offsetof(struct source, sh) == 0, "struct source begins with its shell");

/* ---------------------------------------------------------------- status */

void polaris_count(struct source *s, uint64_t polls, uint64_t fetches, uint64_t bytes,
                   uint64_t watches)
{
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.polls += polls;
	s->sh.status.st.fetches += fetches;
	s->sh.status.st.bytes_fetched += bytes;
	if (watches)
		s->sh.status.st.watches = watches;
	pthread_mutex_unlock(&s->sh.status.mu);
}

/* ---------------------------------------------------------------- the thread */

/* A pause's work (kv/shell.h): build the groups due now; the next deadline. */
static int64_t polaris_due(struct source *s, int64_t now)
{
	node_flush(s->map, now, 0);
	return node_deadline(s->map);
}

/* A pause sleeps in the watch's wait, which stop() wakes. */
static void polaris_wait(struct source *s, int64_t ms)
{
	struct polaris_watch_result res;
	if (polaris_watch_wait(s->watch, ms, &res))
		http_reply_free(&res.reply); /* none is pending: cannot happen */
}

static void *polaris_run(void *arg)
{
	struct source *s = arg;
	const size_t n = s->pc->kv.n_servers;
	struct rounds r;
	rounds_init(&r, &s->sh.args, "polaris", "server", s->pc->kv.servers, n);
	LOG_I(s->log, "polaris", "%s: Polaris sync of %s started", s->pc->kv.label, s->where);
	while (!atomic_load(&s->sh.stop)) {
		struct gw_err err = {0};
		polaris_session(s, &err);
		enum sync_fail why = err.kind;
		if (why == SYNC_STOPPED || atomic_load(&s->sh.stop))
			break;
		conn_count_failure(&s->sh.status, why, err.msg);
		if (s->exchanged) {
			/* a watch that was answered before it failed (a connection cut mid-hold,
			 * a server restarted): watch again at once, on the same server; the
			 * versions sent name everything missed meanwhile */
			rounds_reset(&r);
			LOG_W(s->log, "polaris", "%s [%s]; watching %s again", err.msg,
			      sync_fail_name(why), s->pc->kv.servers[s->srv]);
			continue;
		}
		if (kv_shell_try_failed(&s->sh, &r, &s->srv, why, err.msg))
			break;
	}
	/* what settled-in-waiting changes there are still reach the subscribers */
	node_flush(s->map, gw_mono_ms(), 1);
	conn_set_state(&s->sh.status, SOURCE_CONN_STOPPED, NULL);
	LOG_I(s->log, "polaris", "%s: Polaris sync stopped", s->pc->kv.label);
	return NULL;
}

/* ---------------------------------------------------------------- the table */

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

/* The start-up sync's read from server i (kv/shell.h). */
static int polaris_first_read(struct source *s, size_t i, struct gw_err *err)
{
	if (polaris_full_read(s, i, KV_FULL_START, err) != 0)
		return -1;
	s->srv = i;
	s->need_full = POLARIS_NO_FULL_READ;
	conn_mark_success(&s->sh.status, SOURCE_CONN_POLLING, s->pc->kv.servers[s->srv]);
	return 0;
}

/* stop(): the reads, and the watch's held request and its wait. */
static void polaris_interrupt(struct source *s)
{
	for (size_t i = 0; s->conn && i < s->pc->kv.n_servers; i++)
		if (s->conn[i])
			http_interrupt(s->conn[i]);
	if (s->watch) {
		polaris_watch_cancel(s->watch);
		polaris_watch_wakeup(s->watch);
	}
}

static void polaris_release(struct source *s)
{
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
}

static void polaris_counts(struct source *s, struct kv_mirror_stats *ms, int64_t *watches)
{
	(void)watches;
	struct node_stats ns;
	node_stats(s->map, &ns);
	*ms = ns.mirror;
}

KV_SHELL_CONFIG_ENTRIES(polaris, &polaris_config_section, struct polaris_config, kv.label)

static void polaris_summary(const struct cfg *cfg, char *buf, size_t cap)
{
	const struct polaris_config *pc = polaris_config(cfg);
	snprintf(buf, cap, "polaris source %s (layout %s)", pc && pc->kv.label ? pc->kv.label : "",
	         pc && pc->layout_name ? pc->layout_name : "");
}

static const struct kv_shell_ops polaris_shell = {
    .type = "polaris",
    .thread = "polaris-0",
    .server_noun = "Polaris server",
    .run = polaris_run,
    .interrupt = polaris_interrupt,
    .release = polaris_release,
    .counts = polaris_counts,
    .first_read = polaris_first_read,
    .due = polaris_due,
    .wait = polaris_wait,
};

static int polaris_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	const struct polaris_config *pc = polaris_config(cfg);
	if (!pc || pc->kv.n_servers == 0 || !pc->kv.label)
		return gw_errf(err, "polaris: no servers configured");
	struct source *s = kv_shell_new(sizeof *s, &polaris_shell, args, pc->kv.label,
	                                pc->kv.servers[0], pc->kv.n_servers, err);
	if (!s)
		return -1;
	s->cfg = cfg;
	s->pc = pc;
	s->log = args->log;
	s->need_full = KV_FULL_START;
	s->resync_at = -1;
	describe(s);
	if (!(s->conn = calloc(pc->kv.n_servers, sizeof *s->conn))) {
		kv_shell_free(s);
		return gw_errf(err, "polaris: out of memory");
	}
	/* all opened now (no connection is made yet), so stop() may interrupt any of them
	 */
	for (size_t i = 0; i < pc->kv.n_servers; i++)
		if (http_open(&s->conn[i], cfg, pc->kv.servers[i], err) != 0) {
			kv_shell_free(s);
			return -1;
		}
	if (pc->token) {
		size_t hl = strlen(pc->token) + sizeof "X-Polaris-Token: ";
		if (!(s->token_header = malloc(hl))) {
			kv_shell_free(s);
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
		kv_shell_free(s);
		return -1;
	}
	*out = s;
	return 0;
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
    .initial_sync = kv_shell_initial_sync,
    .start = kv_shell_start,
    .stop = kv_shell_stop,
    .free = kv_shell_free,
    .status = kv_shell_status,
};
