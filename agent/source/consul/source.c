/*
 * Consul behind the source table (see source.h), over its KV HTTP API with blocking
 * queries (libcurl, already linked). One thread ("consul-0") owns the queries and the
 * mirror (kv/mirror.h) and sleeps in a held query, in the pacing pause or the retry
 * schedule's, or until stop() wakes it: no periodic tick (a group waiting to be built
 * shortens the query's wait instead, sync.c).
 *
 * Servers are tried in order; a failing one moves to the next at once, and the retry
 * schedule (retry.h) counts rounds over all of them: three servers down means three quick
 * failures, then the interval, and after `attempts` such rounds the backoff. A session that
 * ran (answered, a second or more) and then failed (a restart, a dropped connection) is
 * resumed at once from the index reached, starting with the same server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "model/groups.h"
#include "shared/strbuf.h"
#include "source/consul/consul.h"
#include "source/rounds.h"

/* the shell's functions are the table's entries (kv/shell.h) */
_Static_assert(offsetof(struct source, sh) == 0, "struct source begins with its shell");

/* ---------------------------------------------------------------- the thread */

/* A session that lasted less than this after its first answer counts as a failed try. */
#define CONSUL_SESSION_MIN_LIFE_MS 1000

static void *consul_run(void *arg)
{
	struct source *s = arg;
	const size_t n = s->n_srv;
	struct rounds r;
	rounds_init(&r, &s->sh.args, "consul", "server", s->cc->kv.servers, n);
	LOG_I(s->log, "consul", "%s: consul sync started", s->cc->kv.label);
	while (!atomic_load(&s->sh.stop)) {
		struct gw_err err = {0};
		enum consul_outcome out = consul_session(s, &err);
		enum sync_fail why = err.kind;
		if (out == CONSUL_STOPPED || atomic_load(&s->sh.stop))
			break;
		conn_count_failure(&s->sh.status, why, err.msg);
		int lived = s->established &&
		            gw_mono_ms() - s->established_ms >= CONSUL_SESSION_MIN_LIFE_MS;
		if (lived) {
			rounds_reset(&r);
			LOG_W(s->log, "consul", "%s [%s]; querying again from index %llu", err.msg,
			      sync_fail_name(why), (unsigned long long)s->index);
			continue;
		}
		if (kv_shell_try_failed(&s->sh, &r, &s->ep, why, err.msg))
			break;
	}
	/* what settled-in-waiting changes there are still reach the subscribers */
	kv_mirror_flush(s->mirror, gw_mono_ms(), 1);
	conn_set_state(&s->sh.status, SOURCE_CONN_STOPPED, NULL);
	LOG_I(s->log, "consul", "%s: consul sync stopped", s->cc->kv.label);
	return NULL;
}

/* ---------------------------------------------------------------- the table */

/* "/v1/kv/" + the prefix, each segment percent-encoded, + "?recurse". The prefix is the
 * root's, or the one configured group's directory (a narrower answer). */
static int make_url(struct source *s)
{
	const char *dir =
	    s->layout.n_groups == 1 ? s->layout.dirs[s->layout.groups[0]] : s->layout.root;
	const char *key = dir + 1; /* the path form without its '/' */
	size_t klen = strlen(key);
	/* how messages name it: the prefix and the groups read from it */
	size_t cap = klen + 16 + s->layout.n_groups * 20;
	if (!(s->prefix = malloc(cap)) || !(s->key_prefix = malloc(klen + 2)))
		return -1;
	snprintf(s->key_prefix, klen + 2, "%s/", key);
	size_t n = (size_t)snprintf(s->prefix, cap, "%s/ (", key);
	for (size_t i = 0; i < s->layout.n_groups && n < cap; i++)
		n += (size_t)snprintf(s->prefix + n, cap - n, "%s%s", i ? ", " : "",
		                      gw_group_name(s->layout.groups[i]));
	if (n < cap)
		snprintf(s->prefix + n, cap - n, ")");
	struct strbuf b = {0};
	strbuf_adds(&b, "/v1/kv/");
	for (const char *p = key; *p;) {
		size_t len = strcspn(p, "/");
		char seg[1024];
		if (len >= sizeof seg) {
			strbuf_reset(&b);
			return -1;
		}
		memcpy(seg, p, len);
		seg[len] = '\0';
		strbuf_add_escaped(&b, seg);
		strbuf_adds(&b, "/");
		p += len;
		if (*p == '/')
			p++;
	}
	strbuf_adds(&b, "?recurse");
	return (s->url = strbuf_finish(&b)) ? 0 : -1;
}

/* The start-up sync's read from server i (kv/shell.h): the session names the server; the
 * state stays "connecting" until the first blocking query. */
static int consul_first_read(struct source *s, size_t i, struct gw_err *err)
{
	if (consul_full_read(s, i, KV_FULL_START, err) < 0)
		return -1;
	s->ep = i;
	s->need_full = CONSUL_NO_FULL_READ;
	pthread_mutex_lock(&s->sh.status.mu);
	snprintf(s->sh.status.st.session, sizeof s->sh.status.st.session, "%s",
	         s->cc->kv.servers[i]);
	s->sh.status.st.last_success_ms = gw_wall_ms();
	pthread_mutex_unlock(&s->sh.status.mu);
	return 0;
}

static void consul_interrupt(struct source *s)
{
	for (size_t i = 0; i < s->n_srv; i++)
		http_interrupt(s->srv[i]);
}

static void consul_release(struct source *s)
{
	for (size_t i = 0; i < s->n_srv; i++)
		http_close(s->srv[i]);
	free(s->srv);
	kv_mirror_free(s->mirror);
	kv_layout_free(&s->layout);
	consul_keys_free(&s->keys);
	free(s->path);
	free(s->url);
	free(s->prefix);
	free(s->key_prefix);
	if (s->token_h) {
		explicit_bzero(s->token_h, strlen(s->token_h));
		free(s->token_h);
	}
}

static void consul_counts(struct source *s, struct kv_mirror_stats *ms, int64_t *watches)
{
	(void)watches;
	kv_mirror_stats(s->mirror, ms);
}

KV_SHELL_CONFIG_ENTRIES(consul, &consul_config_section, struct consul_config, kv.label)
KV_SHELL_SUMMARY_ENTRY(consul)

static const struct kv_shell_ops consul_shell = {
    .type = "consul",
    .thread = "consul-0",
    .server_noun = "Consul server",
    .run = consul_run,
    .interrupt = consul_interrupt,
    .release = consul_release,
    .counts = consul_counts,
    .first_read = consul_first_read,
    .due = consul_flush_due,
};

static int consul_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	*out = NULL;
	const struct cfg *cfg = args->cfg;
	const struct consul_config *cc = consul_config(cfg);
	if (!cc || cc->kv.n_servers == 0 || !cc->kv.label)
		return gw_errf(err, "consul: no servers configured");
	struct source *s = kv_shell_new(sizeof *s, &consul_shell, args, cc->kv.label,
	                                cc->kv.servers[0], cc->kv.n_servers, err);
	if (!s)
		return -1;
	s->cfg = cfg;
	s->cc = cc;
	s->log = args->log;
	s->need_full = KV_FULL_START;
	s->resync_at = -1;
	s->sh.status.one_watch = 1;
	if (kv_layout_init(&s->layout, cc->kv.root, cfg->groups, cfg->n_groups, err) != 0) {
		kv_shell_free(s);
		return -1;
	}
	if (make_url(s) != 0 || !(s->srv = calloc(cc->kv.n_servers, sizeof *s->srv))) {
		kv_shell_free(s);
		return gw_errf(err, "consul: out of memory");
	}
	if (cc->token) {
		size_t n = strlen(cc->token) + sizeof "X-Consul-Token: ";
		if (!(s->token_h = malloc(n))) {
			kv_shell_free(s);
			return gw_errf(err, "consul: out of memory");
		}
		snprintf(s->token_h, n, "X-Consul-Token: %s", cc->token);
	}
	for (size_t i = 0; i < cc->kv.n_servers; i++) {
		if (http_open(&s->srv[i], cfg, cc->kv.servers[i], err) != 0) {
			kv_shell_free(s);
			return -1;
		}
		s->n_srv++;
	}
	struct kv_mirror_args ma = {
	    .layout = &s->layout,
	    .ingest = args->ingest,
	    .log = args->log,
	    .type = "consul",
	    .server = s->sh.status.st.server,
	    .settle_ms = cc->kv.settle_ms > 0 ? cc->kv.settle_ms : 100,
	};
	if (!(s->mirror = kv_mirror_new(&ma, err))) {
		kv_shell_free(s);
		return -1;
	}
	*out = s;
	return 0;
}

const struct source_ops consul_source_ops = {
    .type = "consul",
    .section = "consul",
    .config = &consul_config_section,
    .selects = consul_selects,
    .summary = consul_summary,
    .running = "blocking query session(s)",
    .conns = consul_conns,
    .conn_name = consul_conn_name,
    .open = consul_open,
    .initial_sync = kv_shell_initial_sync,
    .start = kv_shell_start,
    .stop = kv_shell_stop,
    .free = kv_shell_free,
    .status = kv_shell_status,
};
