/*
 * Nacos behind the source table (see source.h), over the v1 config API that Nacos 1.x and
 * 2.x serve and 3.x serves by default (PROTOCOL-PUSH.md 4.3): ShenYu's keys are read one by
 * one as the node map (source/node/node.h) asks, and watched by listener long polls of at
 * most 10,000 keys each (nacos.h has the threads). The main thread ("nacos-0") sleeps until
 * a listener names keys or fails, the settle window ends, the resync is due or the token
 * must be renewed; stop() wakes it.
 *
 * Failures follow the retry rule (retry.h): a failed try moves to the next server and
 * waits the interval, a failed round the backoff, and what follows a failure is a full
 * read (changes made while away are found, counted as such). A listener refused with 403
 * is answered by a login alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/thread.h"
#include "model/groups.h"
#include "source/nacos/nacos.h"
#include "source/retry.h"

/* the shell's functions are the table's entries (kv/shell.h) */
_Static_assert(offsetof(struct source, sh) == 0, "struct source begins with its shell");

/* ---------------------------------------------------------------- the thread */

static int64_t earliest(int64_t a, int64_t b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

/* A pause's work (kv/shell.h): build the groups due now; the next deadline. */
static int64_t nacos_due(struct source *s, int64_t now)
{
	node_flush(s->map, now, 0);
	return node_deadline(s->map);
}

struct schedule {
	struct retry_policy policy;
	uint64_t failures;
};

/* A failed try: log it naming the server and the groups, move to the next server, wait
 * as the retry rule says. 1 if stopped meanwhile. */
static int after_failure(struct source *s, struct schedule *sc, const struct gw_err *err)
{
	enum sync_fail why = err->kind;
	conn_count_failure(&s->sh.status, why, err->msg);
	char groups[256];
	kv_shell_groups(&s->sh, groups, sizeof groups);
	sc->failures++;
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.consecutive_failures = sc->failures;
	s->ep = (s->ep + 1) % s->nc->kv.n_servers;
	pthread_mutex_unlock(&s->sh.status.mu);
	int64_t delay;
	enum retry_step step =
	    retry_next_starting(&sc->policy, sc->failures, kv_shell_starting(&s->sh), &delay);
	if (step == RETRY_BACKOFF) {
		LOG_E(s->log, "nacos",
		      "%s (groups %s) [%s]; all %d tries failed, next try (server %s) in %lld ms",
		      err->msg, groups, sync_fail_name(why), sc->policy.attempts,
		      s->nc->kv.servers[s->ep], (long long)delay);
		conn_set_state(&s->sh.status, SOURCE_CONN_BACKING_OFF, s->nc->kv.servers[s->ep]);
	} else {
		LOG_W(s->log, "nacos",
		      "%s (groups %s) [%s]; try %d of %d failed, next try (server %s) in %lld ms",
		      err->msg, groups, sync_fail_name(why),
		      retry_try_in_round(&sc->policy, sc->failures), sc->policy.attempts,
		      s->nc->kv.servers[s->ep], (long long)delay);
		conn_set_state(&s->sh.status, SOURCE_CONN_RETRYING, s->nc->kv.servers[s->ep]);
	}
	return kv_shell_pause(&s->sh, delay);
}

static void schedule_resync(struct source *s)
{
	s->resync_at =
	    s->nc->kv.resync_interval_ms > 0 ? gw_mono_ms() + s->nc->kv.resync_interval_ms : -1;
}

/* The full read that starts a session (or recovers, or resyncs) and the first publication
 * of the listeners' bodies after it. 1 when the thread is to stop. */
static int full_read(struct source *s, struct schedule *sc, struct gw_err *err)
{
	conn_set_state(&s->sh.status, SOURCE_CONN_CONNECTING, s->nc->kv.servers[s->ep]);
	if (nacos_full_read(s, s->ep, (enum kv_full_kind)s->need_full, err) != 0)
		return atomic_load(&s->sh.stop) || after_failure(s, sc, err);
	s->need_full = NACOS_NO_FULL_READ;
	/* the schedule starts over once a listener is answered, not here: a server that reads
	 * but refuses every listener must still reach the backoff */
	schedule_resync(s);
	conn_mark_success(&s->sh.status, SOURCE_CONN_CONNECTED, s->nc->kv.servers[s->ep]);
	if (nacos_publish_bodies(s, 1, err) != 0)
		LOG_E(s->log, "nacos", "%s: %s", s->nc->kv.label, err->msg);
	return 0;
}

/* The login token renewed once it is due (9/10 of its tokenTtl). */
static void renew_token_if_due(struct source *s, int64_t now)
{
	struct gw_err err = {0};
	int64_t due = nacos_client_token_due(s->client);
	if (due >= 0 && now >= due && nacos_client_login(s->client, s->ep, &err) != 0) {
		/* the token still works a while: counted, tried again at the next wake */
		conn_count_failure(&s->sh.status, err.kind, err.msg);
		LOG_W(s->log, "nacos", "%s [%s]; renewing the token later", err.msg,
		      sync_fail_name(err.kind));
		kv_shell_pause(&s->sh, s->cfg->retry_interval_ms);
	}
}

static void *nacos_run(void *arg)
{
	struct source *s = arg;
	const struct cfg *cfg = s->cfg;
	struct schedule sc = {{cfg->retry_attempts, cfg->retry_interval_ms, cfg->retry_backoff_ms,
	                       cfg->retry_startup_backoff_ms},
	                      0};
	uint64_t good_seen = 0;
	LOG_I(s->log, "nacos", "%s: nacos sync started", s->nc->kv.label);
	while (!atomic_load(&s->sh.stop)) {
		struct gw_err err = {0};
		if (s->need_full != NACOS_NO_FULL_READ) {
			if (full_read(s, &sc, &err))
				break;
			continue;
		}
		if (s->built_gen != node_wanted_gen(s->map) || s->bodies_dirty || s->released) {
			s->released = 0;
			if (nacos_publish_bodies(s, 0, &err) != 0)
				LOG_E(s->log, "nacos", "%s: %s", s->nc->kv.label, err.msg);
		}
		int64_t wake = earliest(earliest(node_deadline(s->map), s->resync_at),
		                        nacos_client_token_due(s->client));
		pthread_mutex_lock(&s->sh.status.mu);
		if (!atomic_load(&s->sh.stop) && !s->n_changed && !s->watch_failed)
			conn_wait_until(&s->sh.status, wake);
		if (s->good_polls != good_seen) {
			good_seen = s->good_polls;
			sc.failures = 0;
			s->sh.status.st.consecutive_failures = 0;
		}
		char **changed = s->changed;
		size_t n_changed = s->n_changed;
		s->changed = NULL;
		s->n_changed = s->cap_changed = 0;
		int failed = s->watch_failed;
		enum sync_fail why = s->watch_why;
		char msg[sizeof s->watch_msg];
		snprintf(msg, sizeof msg, "%s", s->watch_msg);
		s->watch_failed = 0;
		if (n_changed)
			s->sh.status.st.last_event_ms = gw_wall_ms();
		pthread_mutex_unlock(&s->sh.status.mu);
		if (atomic_load(&s->sh.stop)) {
			for (size_t i = 0; i < n_changed; i++)
				free(changed[i]);
			free(changed);
			break;
		}
		int rc = 0;
		if (n_changed) {
			rc = nacos_reread(s, changed, n_changed, &err);
			s->released = 1; /* the listeners that answered wait for their bodies */
		}
		for (size_t i = 0; i < n_changed; i++)
			free(changed[i]);
		free(changed);
		int64_t now = gw_mono_ms();
		node_flush(s->map, now, 0);
		if (failed && why == SYNC_FAIL_AUTH && cfg->username) {
			LOG_W(s->log, "nacos", "%s [auth]; logging in again", msg);
			if (nacos_client_login(s->client, s->ep, &err) == 0) {
				s->released = 1;
				continue;
			}
			rc = -1;
		} else if (failed) {
			err.kind = why;
			snprintf(err.msg, sizeof err.msg, "%s", msg);
			rc = -1;
		}
		if (rc != 0) {
			if (err.kind == SYNC_STOPPED || atomic_load(&s->sh.stop))
				break;
			s->need_full = KV_FULL_RECOVER;
			if (after_failure(s, &sc, &err))
				break;
			continue;
		}
		if (s->resync_at >= 0 && now >= s->resync_at)
			s->need_full = KV_FULL_RESYNC;
		renew_token_if_due(s, now);
	}
	/* what settled-in-waiting changes there are still reach the subscribers */
	node_flush(s->map, gw_mono_ms(), 1);
	conn_set_state(&s->sh.status, SOURCE_CONN_STOPPED, s->nc->kv.servers[s->ep]);
	LOG_I(s->log, "nacos", "%s: nacos sync stopped", s->nc->kv.label);
	return NULL;
}

/* ---------------------------------------------------------------- the table */

/* The start-up sync's read from server i (kv/shell.h). */
static int nacos_first_read(struct source *s, size_t i, struct gw_err *err)
{
	if (nacos_full_read(s, i, KV_FULL_START, err) != 0)
		return -1;
	s->ep = i;
	s->need_full = NACOS_NO_FULL_READ;
	schedule_resync(s);
	conn_mark_success(&s->sh.status, SOURCE_CONN_CONNECTED, s->nc->kv.servers[s->ep]);
	return 0;
}

/* stop(): the reader's request, every listener's held one, and the listeners' wait. */
static void nacos_interrupt(struct source *s)
{
	if (s->client)
		nacos_client_interrupt(s->client);
	pthread_mutex_lock(&s->sh.status.mu);
	for (size_t i = 0; i < s->n_w; i++)
		if (s->w[i].h)
			http_interrupt(s->w[i].h);
	pthread_cond_broadcast(&s->wcv);
	pthread_mutex_unlock(&s->sh.status.mu);
}

/* free(), the main thread joined: the listeners, then what they shared with it. */
static void nacos_release(struct source *s)
{
	for (size_t i = 0; i < s->n_w; i++) {
		if (s->w[i].started)
			pthread_join(s->w[i].thread, NULL);
		http_close(s->w[i].h);
		free(s->w[i].body);
	}
	for (size_t i = 0; i < s->n_changed; i++)
		free(s->changed[i]);
	free(s->changed);
	for (size_t i = 0; i < NACOS_WATCHERS_MAX; i++)
		free(s->chunks[i].keys);
	nacos_client_close(s->client);
	node_free(s->map);
	pthread_cond_destroy(&s->wcv);
}

static void nacos_counts(struct source *s, struct kv_mirror_stats *ms, int64_t *watches)
{
	(void)watches;
	struct node_stats ns;
	node_stats(s->map, &ns);
	*ms = ns.mirror;
}

KV_SHELL_CONFIG_ENTRIES(nacos, &nacos_config_section, struct nacos_config, kv.label)
KV_SHELL_SUMMARY_ENTRY(nacos)

static const struct kv_shell_ops nacos_shell = {
    .type = "nacos",
    .thread = "nacos-0",
    .server_noun = "Nacos server",
    .run = nacos_run,
    .interrupt = nacos_interrupt,
    .release = nacos_release,
    .counts = nacos_counts,
    .first_read = nacos_first_read,
    .due = nacos_due,
};

static int nacos_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	const struct nacos_config *nc = nacos_config(cfg);
	if (!nc || nc->kv.n_servers == 0 || !nc->kv.label)
		return gw_errf(err, "nacos: no servers configured");
	struct source *s = kv_shell_new(sizeof *s, &nacos_shell, args, nc->kv.label,
	                                nc->kv.servers[0], nc->kv.n_servers, err);
	if (!s)
		return -1;
	s->cfg = cfg;
	s->nc = nc;
	s->log = args->log;
	s->need_full = KV_FULL_START;
	s->resync_at = -1;
	s->built_gen = UINT64_MAX;
	pthread_cond_init(&s->wcv, NULL);
	struct node_args na = {
	    .layout = nc->layout == NACOS_LAYOUT_LEGACY ? NODE_LAYOUT_WHOLE : NODE_LAYOUT_NODES,
	    .prefix = nc->prefix,
	    .doc_names = NULL,
	    .complete = 0,
	    .groups = cfg->groups,
	    .n_groups = cfg->n_groups,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "nacos",
	    .server = s->sh.status.st.server,
	    .settle_ms = nc->kv.settle_ms > 0 ? nc->kv.settle_ms : 100,
	};
	if (!(s->map = node_new(&na, err)) ||
	    nacos_client_open(&s->client, cfg, args->log, err) != 0) {
		kv_shell_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

const struct source_ops nacos_source_ops = {
    .type = "nacos",
    .section = "nacos",
    .config = &nacos_config_section,
    .selects = nacos_selects,
    .summary = nacos_summary,
    .running = "Nacos listener session(s)",
    .conns = nacos_conns,
    .conn_name = nacos_conn_name,
    .open = nacos_open,
    .initial_sync = kv_shell_initial_sync,
    .start = kv_shell_start,
    .stop = kv_shell_stop,
    .free = kv_shell_free,
    .status = kv_shell_status,
};
