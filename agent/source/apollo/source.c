/*
 * Apollo behind the source table (see source.h), over the config service's client API,
 * which is plain HTTP: libcurl (curl_http.h) and jansson, no Apollo library. One thread
 * ("apollo-0") owns the node map (node.h over the kv mirror) and the client; it is either
 * in a request (a held notification poll, a read) or asleep until the mirror's settle
 * deadline or a retry: no periodic tick.
 *
 * Services are tried in order; a failing one moves to the next at once, and the retry
 * schedule (retry.h: `attempts` tries at `interval`, then `backoff`) counts rounds over all
 * of them. With a meta server, its list is asked again after every failed round. A session
 * that got somewhere (a poll answered, a release applied) and then failed starts the
 * schedule over. What the map held stays through failures: nothing is delivered from a
 * reply that was not whole and valid, and the snapshot serves until the first full read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "model/groups.h"
#include "source/apollo/apollo.h"
#include "source/retry.h"

/* the shell's functions are the table's entries (kv/shell.h) */
_Static_assert(offsetof(struct source, sh) == 0, "struct source begins with its shell");

/* ---------------------------------------------------------------- status */

void apollo_mark_success(struct source *s)
{
	s->progress = 1;
	conn_mark_success(&s->sh.status, SOURCE_CONN_CONNECTED, apollo_client_server(s->client));
}

void apollo_count(struct source *s, int poll, size_t fetched_bytes)
{
	pthread_mutex_lock(&s->sh.status.mu);
	if (poll) {
		s->sh.status.st.polls++;
	} else {
		s->sh.status.st.fetches++;
		s->sh.status.st.bytes_fetched += fetched_bytes;
	}
	pthread_mutex_unlock(&s->sh.status.mu);
}

/* ---------------------------------------------------------------- the thread */

static void *apollo_run(void *arg)
{
	struct source *s = arg;
	const struct cfg *cfg = s->cfg;
	struct retry_policy policy = {cfg->retry_attempts, cfg->retry_interval_ms,
	                              cfg->retry_backoff_ms, cfg->retry_startup_backoff_ms};
	uint64_t failures = 0;
	size_t tried = 0; /* services failed in this round */
	char groups[256];
	kv_shell_groups(&s->sh, groups, sizeof groups);
	LOG_I(s->log, "apollo", "%s: apollo sync started", s->ac->label);
	while (!atomic_load(&s->sh.stop)) {
		struct gw_err err = {0};
		s->progress = 0;
		if (apollo_client_count(s->client) == 0 && apollo_client_discover(s->client, &err))
			goto failed;
		if (apollo_session(s, &err) == 0 || atomic_load(&s->sh.stop))
			break;
	failed:;
		enum sync_fail why = err.kind;
		conn_count_failure(&s->sh.status, why, err.msg);
		if (s->progress) {
			failures = 0;
			tried = 0;
		}
		size_t n = apollo_client_count(s->client);
		apollo_client_next(s->client);
		if (++tried < n) {
			LOG_W(s->log, "apollo", "%s [%s] (groups %s); trying config service %s",
			      err.msg, sync_fail_name(why), groups,
			      apollo_client_server(s->client));
			continue;
		}
		tried = 0;
		failures++;
		pthread_mutex_lock(&s->sh.status.mu);
		s->sh.status.st.consecutive_failures = failures;
		pthread_mutex_unlock(&s->sh.status.mu);
		int64_t delay;
		enum retry_step step =
		    retry_next_starting(&policy, failures, kv_shell_starting(&s->sh), &delay);
		if (step == RETRY_BACKOFF) {
			LOG_E(
			    s->log, "apollo",
			    "%s [%s] (groups %s); all %d tries over %zu config service(s) failed, "
			    "next try in %lld ms",
			    err.msg, sync_fail_name(why), groups, policy.attempts, n ? n : 1,
			    (long long)delay);
			conn_set_state(&s->sh.status, SOURCE_CONN_BACKING_OFF, NULL);
		} else {
			LOG_W(
			    s->log, "apollo",
			    "%s [%s] (groups %s); try %d of %d over %zu config service(s) failed, "
			    "next try in %lld ms",
			    err.msg, sync_fail_name(why), groups,
			    retry_try_in_round(&policy, failures), policy.attempts, n ? n : 1,
			    (long long)delay);
			conn_set_state(&s->sh.status, SOURCE_CONN_RETRYING, NULL);
		}
		if (kv_shell_pause(&s->sh, delay))
			break;
		struct gw_err derr = {0};
		if (apollo_client_discover(s->client, &derr) != 0)
			LOG_W(s->log, "apollo", "%s [%s]", derr.msg, sync_fail_name(derr.kind));
	}
	/* what settled-in-waiting changes there are still reach the subscribers */
	node_flush(s->map, gw_mono_ms(), 1);
	conn_set_state(&s->sh.status, SOURCE_CONN_STOPPED, NULL);
	LOG_I(s->log, "apollo", "%s: apollo sync stopped", s->ac->label);
	return NULL;
}

/* ---------------------------------------------------------------- the table */

/* The start-up sync's read from the config service in use (kv/shell.h): each in turn. */
static int apollo_first_read(struct source *s, size_t i, struct gw_err *err)
{
	(void)i;
	if (apollo_full_read(s, KV_FULL_START, err) != 0)
		return -1;
	s->need_full = APOLLO_NO_FULL_READ;
	s->resync_at =
	    s->ac->resync_interval_ms > 0 ? gw_mono_ms() + s->ac->resync_interval_ms : -1;
	return 0;
}

static void apollo_next(struct source *s)
{
	apollo_client_next(s->client);
}

/* The config services are known once asked of the meta server, if one is configured. */
static int apollo_initial_sync(struct source *s, struct gw_err *err)
{
	struct gw_err e = {0};
	if (apollo_client_count(s->client) == 0 && apollo_client_discover(s->client, &e) != 0) {
		conn_count_failure(&s->sh.status, e.kind, e.msg);
		LOG_W(s->log, "apollo", "%s [%s]", e.msg, sync_fail_name(e.kind));
		return gw_errf(err, "%s", e.msg);
	}
	return kv_shell_first_sync(&s->sh, apollo_client_count(s->client), err);
}

static void apollo_interrupt(struct source *s)
{
	if (s->client)
		apollo_client_interrupt(s->client);
}

static void apollo_release(struct source *s)
{
	apollo_client_close(s->client);
	node_free(s->map);
	json_decref(s->held);
	free(s->release_key);
}

/* /status's watches: the keys the notification poll watches. */
static void apollo_counts(struct source *s, struct kv_mirror_stats *ms, int64_t *watches)
{
	struct node_stats ns;
	node_stats(s->map, &ns);
	*ms = ns.mirror;
	*watches = (int64_t)ns.keys;
}

KV_SHELL_CONFIG_ENTRIES(apollo, &apollo_config_section, struct apollo_config, label)
KV_SHELL_SUMMARY_ENTRY(apollo)

static const struct kv_shell_ops apollo_shell = {
    .type = "apollo",
    .thread = "apollo-0",
    .server_noun = "Apollo config service",
    .run = apollo_run,
    .interrupt = apollo_interrupt,
    .release = apollo_release,
    .counts = apollo_counts,
    .first_read = apollo_first_read,
    .next = apollo_next,
};

static int apollo_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	const struct apollo_config *ac = apollo_config(cfg);
	if (!ac || !ac->label)
		return gw_errf(err, "apollo: no config service configured");
	struct source *s = kv_shell_new(sizeof *s, &apollo_shell, args, ac->label, NULL, 0, err);
	if (!s)
		return -1;
	s->cfg = cfg;
	s->ac = ac;
	s->log = args->log;
	s->need_full = KV_FULL_START;
	s->resync_at = -1;
	s->notification = -1;
	s->sh.status.st.revision = -1;
	struct node_args na = {
	    .layout = ac->whole ? NODE_LAYOUT_WHOLE : NODE_LAYOUT_NODES,
	    .prefix = ac->prefix,
	    .doc_names = NULL,
	    .complete = 1,
	    .groups = cfg->groups,
	    .n_groups = cfg->n_groups,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "apollo",
	    .server = s->sh.status.st.server,
	    .settle_ms = ac->settle_ms > 0 ? ac->settle_ms : 100,
	};
	if (!(s->map = node_new(&na, err)) || apollo_client_open(&s->client, cfg, ac, err) != 0) {
		kv_shell_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

const struct source_ops apollo_source_ops = {
    .type = "apollo",
    .section = "apollo",
    .config = &apollo_config_section,
    .selects = apollo_selects,
    .summary = apollo_summary,
    .running = "config service session(s)",
    .conns = apollo_conns,
    .conn_name = apollo_conn_name,
    .open = apollo_open,
    .initial_sync = apollo_initial_sync,
    .start = kv_shell_start,
    .stop = kv_shell_stop,
    .free = kv_shell_free,
    .status = kv_shell_status,
};
