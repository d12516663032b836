/*
 * etcd behind the source table (see source.h), over etcd v3's JSON gateway: Debian ships
 * no gRPC client for C, and the gateway speaks the same API as JSON over HTTP/1.1, which
 * libcurl (already linked) does. One thread ("etcd-0") owns the watch stream and the
 * mirror (kv/mirror.h) and sleeps until the stream has bytes, the mirror's settle window
 * ends, the resync is due, or stop() wakes it: no periodic tick.
 *
 * Endpoints are tried in order; a failing one moves to the next at once, and the retry
 * schedule (retry.h) counts rounds over all of them, so three endpoints down means three
 * quick failures, then the interval, and after `attempts` such rounds the backoff. A watch
 * that ran (a second or more) and ended (a member restarted, a leader change closed the
 * stream) is resumed at once from the revision reached, starting with the same endpoint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "source/etcd/etcd.h"
#include "source/rounds.h"

/* the shell's functions are the table's entries (kv/shell.h) */
_Static_assert(offsetof(struct source, sh) == 0, "struct source begins with its shell");

/* ---------------------------------------------------------------- the thread */

/* A watch stream that lasted less than this after its creation counts as a failed try. */
#define ETCD_STREAM_MIN_LIFE_MS 1000

/* A pause sleeps in the watch stream's wait, which stop() wakes. */
static void etcd_wait(struct source *s, int64_t ms)
{
	etcd_watch_wait(s->watch, ms);
}

static void *etcd_run(void *arg)
{
	struct source *s = arg;
	const size_t n = s->kv->n_servers;
	struct rounds r;
	rounds_init(&r, &s->sh.args, "etcd", "endpoint", s->kv->servers, n);
	LOG_I(s->log, "etcd", "%s: etcd sync started", s->kv->label);
	while (!atomic_load(&s->sh.stop)) {
		struct gw_err err = {0};
		enum etcd_outcome out = etcd_session(s, &err);
		enum sync_fail why = err.kind;
		if (out == ETCD_STOPPED || atomic_load(&s->sh.stop))
			break;
		conn_count_failure(&s->sh.status, why, err.msg);
		/* a watch that ran a while starts the schedule over; one that ends as soon as
		 * it was created (a member without a leader closes it at once) is a failed try,
		 * or the thread would spin reconnecting to it */
		int lived =
		    s->established && gw_mono_ms() - s->established_ms >= ETCD_STREAM_MIN_LIFE_MS;
		if (lived) {
			rounds_reset(&r);
			/* only a watch that ran earns another renewal: one refused right after its
			 * creation with a fresh token would otherwise renew and retry for ever */
			s->auth_retried = 0;
		}
		if (out == ETCD_COMPACTED) {
			LOG_W(s->log, "etcd",
			      "%s [%s]; reading everything again at a fresh revision", err.msg,
			      sync_fail_name(why));
			s->need_full = KV_FULL_RECOVER;
			continue;
		}
		if (out == ETCD_AUTH_RETRY) {
			LOG_W(s->log, "etcd", "%s [%s]; authenticating again", err.msg,
			      sync_fail_name(why));
			struct gw_err aerr = {0};
			if (etcd_client_authenticate(s->client, s->ep, &aerr) == 0)
				continue;
			why = aerr.kind;
			snprintf(err.msg, sizeof err.msg, "%s", aerr.msg);
			conn_count_failure(&s->sh.status, why, err.msg);
			out = ETCD_FAILED;
		}
		if (out == ETCD_ENDED && lived) {
			if (s->need_full != ETCD_NO_FULL_READ)
				LOG_W(s->log, "etcd",
				      "%s [%s]; reading everything again at a fresh revision",
				      err.msg, sync_fail_name(why));
			else
				LOG_W(s->log, "etcd",
				      "%s [%s]; resuming the watch from revision %lld", err.msg,
				      sync_fail_name(why), (long long)(s->rev + 1));
			continue;
		}
		/* ETCD_FAILED: the next endpoint, and after a whole round the schedule */
		if (kv_shell_try_failed(&s->sh, &r, &s->ep, why, err.msg))
			break;
	}
	/* what settled-in-waiting changes there are still reach the subscribers */
	kv_mirror_flush(s->mirror, gw_mono_ms(), 1);
	conn_set_state(&s->sh.status, SOURCE_CONN_STOPPED, NULL);
	LOG_I(s->log, "etcd", "%s: etcd sync stopped", s->kv->label);
	return NULL;
}

/* ---------------------------------------------------------------- the table */

/* The start-up sync's read from endpoint i (kv/shell.h): the session names the endpoint; the
 * state stays "connecting" until the watch is created. */
static int etcd_first_read(struct source *s, size_t i, struct gw_err *err)
{
	if (etcd_full_read(s, i, KV_FULL_START, err) != 0)
		return -1;
	s->ep = i;
	s->need_full = ETCD_NO_FULL_READ;
	pthread_mutex_lock(&s->sh.status.mu);
	snprintf(s->sh.status.st.session, sizeof s->sh.status.st.session, "%s", s->kv->servers[i]);
	s->sh.status.st.last_success_ms = gw_wall_ms();
	pthread_mutex_unlock(&s->sh.status.mu);
	return 0;
}

/* stop(): the client's request, and the watch stream's wait. */
static void etcd_interrupt(struct source *s)
{
	if (s->client)
		etcd_client_interrupt(s->client);
	if (s->watch)
		etcd_watch_wakeup(s->watch);
}

static void etcd_release(struct source *s)
{
	etcd_watch_free(s->watch);
	etcd_client_close(s->client);
	kv_mirror_free(s->mirror);
	kv_layout_free(&s->layout);
	free(s->prefix);
}

static void etcd_counts(struct source *s, struct kv_mirror_stats *ms, int64_t *watches)
{
	(void)watches;
	kv_mirror_stats(s->mirror, ms);
}

KV_SHELL_CONFIG_ENTRIES(etcd, &etcd_config_section, struct kv_config, label)
KV_SHELL_SUMMARY_ENTRY(etcd)

static const struct kv_shell_ops etcd_shell = {
    .type = "etcd",
    .thread = "etcd-0",
    .server_noun = "etcd endpoint",
    .run = etcd_run,
    .interrupt = etcd_interrupt,
    .release = etcd_release,
    .counts = etcd_counts,
    .first_read = etcd_first_read,
    .due = etcd_flush_due,
    .wait = etcd_wait,
};

static int etcd_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	const struct kv_config *kv = etcd_config(cfg);
	if (!kv || kv->n_servers == 0 || !kv->label)
		return gw_errf(err, "etcd: no endpoints configured");
	struct source *s = kv_shell_new(sizeof *s, &etcd_shell, args, kv->label, kv->servers[0],
	                                kv->n_servers, err);
	if (!s)
		return -1;
	s->cfg = cfg;
	s->kv = kv;
	s->log = args->log;
	s->need_full = KV_FULL_START;
	s->resync_at = -1;
	s->sh.status.one_watch = 1;
	size_t plen = strlen(s->kv->root) + 2;
	s->prefix = malloc(plen);
	if (!s->prefix) {
		kv_shell_free(s);
		return gw_errf(err, "etcd: out of memory");
	}
	snprintf(s->prefix, plen, "%s/", s->kv->root);
	if (kv_layout_init(&s->layout, s->kv->root, cfg->groups, cfg->n_groups, err) != 0) {
		kv_shell_free(s);
		return -1;
	}
	struct kv_mirror_args ma = {
	    .layout = &s->layout,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "etcd",
	    .server = s->sh.status.st.server,
	    .settle_ms = s->kv->settle_ms > 0 ? s->kv->settle_ms : 100,
	};
	size_t max_msg = cfg->max_response > 0 ? (size_t)cfg->max_response : (size_t)64 << 20;
	if (!(s->mirror = kv_mirror_new(&ma, err)) ||
	    etcd_client_open(&s->client, cfg, args->log, err) != 0 ||
	    etcd_watch_new(&s->watch, cfg, max_msg, err) != 0) {
		kv_shell_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

const struct source_ops etcd_source_ops = {
    .type = "etcd",
    .section = "etcd",
    .config = &etcd_config_section,
    .selects = etcd_selects,
    .summary = etcd_summary,
    .running = "path store session(s)",
    .conns = etcd_conns,
    .conn_name = etcd_conn_name,
    .open = etcd_open,
    .initial_sync = kv_shell_initial_sync,
    .start = kv_shell_start,
    .stop = kv_shell_stop,
    .free = kv_shell_free,
    .status = kv_shell_status,
};
