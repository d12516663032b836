/*
 * One session of the Consul source on one server (see consul.h): a full read when one is
 * needed, then blocking queries on the one prefix until one fails.
 *
 * A recursive blocking query answers with every key below the prefix, changed or not
 * (Consul's KV API has no "changes since"). What keeps a one-item change cheap is the
 * table of keys held, with each key's ModifyIndex: an answer is compared with it key by
 * key, and only a key that is new or whose ModifyIndex moved has its value decoded and put
 * into the mirror; a key held but absent from the answer is deleted. An answer whose
 * X-Consul-Index is the one sent is no change and is not even parsed (index.h).
 *
 * The settle window of the mirror (kv/mirror.h) is kept by the query's own wait: while a
 * group waits to be built the query waits only until then, so a burst of admin writes is
 * followed as it comes and built once it has settled, with no timer of ours.
 *
 * Full reads (start-up, an index that went backwards, the anti-entropy resync) are a read
 * without an index, put through the mirror's full read so that every value is compared,
 * not only the ModifyIndex: a server that changed a value without moving its index (or
 * an answer the diff misapplied) is found and repaired by the resync. The resync reads
 * right after an answer was taken (the query's wait ends when the resync is due): a change
 * made in that one round trip shows as a repair too, and is then no change to the next
 * answer.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "source/consul/consul.h"
#include "source/consul/index.h"
#include "source/consul/reply.h"
#include "source/b64.h"

/* The key's path form in s->path ("/" + key), or NULL (out of memory). */
static const char *path_of(struct source *s, const char *key, size_t len)
{
	if (len + 2 > s->path_cap) {
		size_t cap = (len + 2) * 2;
		char *p = realloc(s->path, cap);
		if (!p)
			return NULL;
		s->path = p;
		s->path_cap = cap;
	}
	s->path[0] = '/';
	memcpy(s->path + 1, key, len);
	s->path[len + 1] = '\0';
	return s->path;
}

/* ---------------------------------------------------------------- one request */

static void on_header(void *arg, const char *line, size_t len)
{
	consul_header_line(arg, line, len);
}

static const char *kind_name(enum kv_full_kind kind)
{
	return kind == KV_FULL_START ? "start-up" : kind == KV_FULL_RECOVER ? "recovery" : "resync";
}

static int failf(struct gw_err *err, enum sync_fail why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int failf(struct gw_err *err, enum sync_fail why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	err->kind = why;
	return -1;
}

/* The first line of a refusal's body, printable, for a message. */
static void body_line(const struct http_reply *rep, char *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < rep->len && n + 1 < cap && n < 200; i++) {
		unsigned char c = (unsigned char)rep->body[i];
		if (c == '\n' || c == '\r')
			break;
		out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = '\0';
}

/*
 * GET the prefix from server ep: with index > 0 a blocking query waiting wait_ms, else a
 * read of what is there now. 0 with rep (200, or 404: an absent prefix, body empty) and h
 * filled; -1 with err naming the server and the groups.
 */
static int get(struct source *s, size_t ep, uint64_t index, int64_t wait_ms, struct http_reply *rep,
               struct consul_headers *h, struct gw_err *err)
{
	const char *server = s->cc->kv.servers[ep];
	char path[4200];
	if (index > 0)
		snprintf(path, sizeof path, "%s&index=%" PRIu64 "&wait=%lldms", s->url, index,
		         (long long)wait_ms);
	else
		snprintf(path, sizeof path, "%s", s->url);
	const char *headers[] = {s->token_h, NULL};
	char label[600];
	snprintf(label, sizeof label, "%s of %s", index > 0 ? "blocking query" : "read", s->prefix);
	memset(h, 0, sizeof *h);
	struct http_request rq = {
	    .method = "GET",
	    .path = path,
	    .headers = s->token_h ? headers : NULL,
	    .held = index > 0,
	    /* Consul holds it up to wait + wait/16 (agent/consul/rpc.go RPCQueryTimeout) */
	    .timeout_ms =
	        index > 0 ? wait_ms + wait_ms / 16 + s->cfg->connect_timeout_ms + 5000 : 0,
	    .label = label,
	    .on_header = on_header,
	    .header_arg = h,
	};
	if (http_do(s->srv[ep], &rq, rep, err) != 0)
		return -1; /* "server URL: LABEL: GET /v1/kv/...: why" */
	if (rep->status == 200 || rep->status == 404) {
		if (!h->has_index) {
			http_reply_free(rep);
			return failf(err, SYNC_FAIL_PARSE,
			             "server %s: %s: HTTP %ld without %s X-Consul-Index: not a "
			             "Consul KV answer",
			             server, label, rep->status, h->bad_index ? "a numeric" : "an");
		}
		if (h->acl_filtered) {
			http_reply_free(rep);
			return failf(
			    err, SYNC_FAIL_AUTH,
			    "server %s: %s: the token may not read every key below the "
			    "prefix (X-Consul-Results-Filtered-By-ACLs): a partial view is "
			    "not taken; give the token key_prefix \"%s\" read",
			    server, label, s->key_prefix);
		}
		return 0;
	}
	char text[256];
	body_line(rep, text, sizeof text);
	long status = rep->status;
	http_reply_free(rep);
	if (status == 403 || status == 401)
		return failf(err, SYNC_FAIL_AUTH,
		             "server %s: %s: HTTP %ld: %s (check consul.token: it must exist and "
		             "may read key_prefix \"%s\")",
		             server, label, status, text[0] ? text : "refused", s->key_prefix);
	return failf(err, SYNC_FAIL_HTTP, "server %s: %s: HTTP %ld: %s", server, label, status,
	             text);
}

/* An entry's value, decoded (value NULL: an empty one). 0, or -1 with err. */
static int decode_value(struct source *s, size_t ep, struct consul_entry *e, char **out,
                        size_t *len, struct gw_err *err)
{
	*out = NULL;
	*len = 0;
	if (!e->value || e->value_len == 0)
		return 0;
	if (consul_value_text(e) != 0)
		return failf(err, SYNC_FAIL_PARSE,
		             "server %s: the value of key %.*s is not a valid JSON string",
		             s->cc->kv.servers[ep], (int)(e->key_len > 300 ? 300 : e->key_len),
		             e->key);
	enum b64_result r = b64_decode(e->value, e->value_len, out, len);
	if (r == B64_OK)
		return 0;
	return failf(err, SYNC_FAIL_PARSE, "server %s: the value of key %.*s is %s",
	             s->cc->kv.servers[ep], (int)(e->key_len > 300 ? 300 : e->key_len), e->key,
	             r == B64_BAD ? "not base64" : "too large for memory");
}

/* ---------------------------------------------------------------- full reads */

int consul_full_read(struct source *s, size_t ep, enum kv_full_kind kind, struct gw_err *err)
{
	const char *server = s->cc->kv.servers[ep];
	struct http_reply rep;
	struct consul_headers h;
	if (get(s, ep, 0, 0, &rep, &h, err) != 0)
		return -1;
	struct consul_reply r = {0};
	if (rep.status == 200 && consul_parse_list(rep.body, rep.len, &r, err) != 0) {
		char why[sizeof err->msg];
		snprintf(why, sizeof why, "%s", err->msg);
		http_reply_free(&rep);
		return failf(err, SYNC_FAIL_PARSE, "server %s: %s read of %s: %s", server,
		             kind_name(kind), s->prefix, why);
	}
	if (kv_mirror_full_begin(s->mirror) != 0) {
		consul_reply_free(&r);
		http_reply_free(&rep);
		return failf(err, SYNC_FAIL_PARSE, "consul: out of memory");
	}
	consul_keys_begin(&s->keys);
	size_t keys = 0;
	for (size_t i = 0; i < r.n; i++) {
		struct consul_entry *e = &r.entries[i];
		const char *path = path_of(s, e->key, e->key_len);
		size_t plen = e->key_len + 1;
		char *v = NULL;
		size_t vlen = 0;
		int bad = !path;
		if (!bad && kv_layout_group_of(&s->layout, path, plen) < 0)
			continue;
		struct consul_key *k = bad ? NULL : consul_keys_find(&s->keys, path, plen);
		if (k)
			k->modify_index = e->modify_index;
		if (bad || decode_value(s, ep, e, &v, &vlen, err) != 0 ||
		    kv_mirror_full_put(s->mirror, path, plen, v ? v : "", vlen,
		                       (int64_t)e->modify_index) != 0 ||
		    (k ? consul_keys_seen(&s->keys, k) != 0
		       : !consul_keys_add(&s->keys, path, plen, e->modify_index))) {
			if (bad || err->kind == SYNC_OK || err->kind == SYNC_STOPPED)
				failf(err, SYNC_FAIL_PARSE, "consul: out of memory");
			free(v);
			kv_mirror_full_abort(s->mirror);
			/* the table may now claim ModifyIndexes the mirror never took: forget it,
			 * so the next answer decodes every key again (identical values change
			 * nothing in the mirror) */
			consul_keys_clear(&s->keys);
			consul_reply_free(&r);
			http_reply_free(&rep);
			return -1;
		}
		free(v);
		keys++;
	}
	consul_keys_end(&s->keys, NULL, NULL); /* the full read deletes what it did not read */
	size_t bytes = rep.len;
	consul_reply_free(&r);
	http_reply_recycle(s->srv[ep], &rep);
	int64_t now = gw_mono_ms();
	int versions = kv_mirror_full_end(s->mirror, kind, now);
	if (versions < 0)
		return failf(err, SYNC_FAIL_PARSE, "consul: out of memory");
	uint64_t next;
	consul_index_step(0, h.index, &next);
	s->index = next;
	LOG_I(s->log, "consul",
	      "server %s: %s read of %s: %zu key(s) at index %" PRIu64 ", %d new version(s)",
	      server, kind_name(kind), s->prefix, keys, s->index, versions);
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.fetches++;
	s->sh.status.st.bytes_fetched += bytes;
	s->sh.status.st.revision = (int64_t)s->index;
	pthread_mutex_unlock(&s->sh.status.mu);
	if (s->cc->kv.resync_interval_ms > 0)
		s->resync_at = now + s->cc->kv.resync_interval_ms;
	return versions;
}

int64_t consul_flush_due(struct source *s, int64_t now)
{
	int64_t dl = kv_mirror_deadline(s->mirror);
	if (dl >= 0 && dl <= now) {
		kv_mirror_flush(s->mirror, now, 0);
		dl = kv_mirror_deadline(s->mirror);
	}
	return dl;
}

/* ---------------------------------------------------------------- an answer's diff */

/* A key the answer no longer lists: deleted from the mirror. */
struct gone {
	struct source *s;
	int64_t now;
	int changed; /* the mirror changed */
};

static void key_gone(void *arg, const struct consul_key *k)
{
	struct gone *g = arg;
	if (kv_mirror_delete(g->s->mirror, k->path, k->len, g->now) == 1)
		g->changed = 1;
}

/* Apply an answer (200: its body; 404: nothing below the prefix) to the mirror: keys new
 * or with another ModifyIndex are put, keys no longer there deleted. 1 if the mirror
 * changed, 0 if not, -1 with err. */
static int apply_answer(struct source *s, size_t ep, struct http_reply *rep, struct gw_err *err)
{
	struct consul_reply r = {0};
	if (rep->status == 200 && consul_parse_list(rep->body, rep->len, &r, err) != 0) {
		char why[sizeof err->msg];
		snprintf(why, sizeof why, "%s", err->msg);
		return failf(err, SYNC_FAIL_PARSE, "server %s: blocking query of %s: %s",
		             s->cc->kv.servers[ep], s->prefix, why);
	}
	struct gone g = {s, gw_mono_ms(), 0};
	consul_keys_begin(&s->keys);
	for (size_t i = 0; i < r.n; i++) {
		struct consul_entry *e = &r.entries[i];
		const char *path = path_of(s, e->key, e->key_len);
		size_t plen = e->key_len + 1;
		if (!path) {
			consul_keys_abort(&s->keys);
			consul_reply_free(&r);
			return failf(err, SYNC_FAIL_PARSE, "consul: out of memory");
		}
		if (kv_layout_group_of(&s->layout, path, plen) < 0)
			continue;
		struct consul_key *k = consul_keys_find(&s->keys, path, plen);
		if (k && k->modify_index == e->modify_index) {
			if (consul_keys_seen(&s->keys, k) != 0) /* unchanged: not decoded */
				goto oom;
			continue;
		}
		char *v;
		size_t vlen;
		if (decode_value(s, ep, e, &v, &vlen, err) != 0) {
			/* what was applied stays; the rest comes again with the next answer */
			consul_keys_abort(&s->keys);
			consul_reply_free(&r);
			return -1;
		}
		int rc = kv_mirror_put(s->mirror, path, plen, v ? v : "", vlen,
		                       (int64_t)e->modify_index, g.now);
		free(v);
		if (rc < 0)
			goto oom;
		if (k) {
			k->modify_index = e->modify_index;
			if (consul_keys_seen(&s->keys, k) != 0)
				goto oom;
		} else if (!consul_keys_add(&s->keys, path, plen, e->modify_index)) {
			goto oom;
		}
		g.changed |= rc == 1;
	}
	consul_reply_free(&r);
	consul_keys_end(&s->keys, key_gone, &g);
	return g.changed;
oom:
	/* the mirror has what was put; keys not recorded are decoded again next time */
	consul_keys_abort(&s->keys);
	consul_reply_free(&r);
	return failf(err, SYNC_FAIL_PARSE, "consul: out of memory");
}

/* ---------------------------------------------------------------- the session */

/* The wait of the next blocking query: the configured one, or less while a group waits
 * to be built or the resync is due (at least 1 ms: Consul takes "1ms"). */
static int64_t next_wait(struct source *s, int64_t now, int64_t deadline)
{
	int64_t wait = s->cc->wait_ms > 0 ? s->cc->wait_ms : 300000;
	if (deadline >= 0 && deadline - now < wait)
		wait = deadline - now;
	if (s->resync_at >= 0 && s->resync_at - now < wait)
		wait = s->resync_at - now;
	return wait > 0 ? wait : 1;
}

/* Pause before the next blocking query after s->early answers in a row came at once with
 * nothing new (consul_pace_ms). Warns at the first early answer and when the pause reaches
 * its cap, not at every one. 1 when asked to stop while pausing. */
static int pace_early(struct source *s, const char *server)
{
	int64_t pace = consul_pace_ms(s->early, s->cc->pace_max_ms);
	if (pace <= 0)
		return 0;
	if (s->early == 1 ||
	    (pace == s->cc->pace_max_ms && consul_pace_ms(s->early - 1, s->cc->pace_max_ms) < pace))
		LOG_W(s->log, "consul",
		      "server %s: %u blocking quer%s of %s answered at once with "
		      "nothing new; pausing %lld ms before the next",
		      server, s->early, s->early == 1 ? "y" : "ies", s->prefix, (long long)pace);
	return kv_shell_pause(&s->sh, pace);
}

/* One blocking query's answer, by what its index says (consul_index_step): backwards reads
 * everything again, a new index applies the answer, the same index is nothing new. 1 when
 * something changed, 0 when not, -1 on failure (err set; the reply is consumed either way). */
static int take_answer(struct source *s, const char *server, uint64_t sent,
                       const struct consul_headers *h, struct http_reply *rep, struct gw_err *err)
{
	uint64_t next;
	enum consul_step step = consul_index_step(sent, h->index, &next);
	if (step == CONSUL_BACKWARDS) {
		http_reply_free(rep);
		LOG_W(s->log, "consul",
		      "server %s: the index of %s went backwards (%" PRIu64 " after %" PRIu64
		      "): reading everything again",
		      server, s->prefix, h->index, sent);
		int v = consul_full_read(s, s->ep, KV_FULL_RECOVER, err);
		return v < 0 ? -1 : v > 0;
	}
	if (step != CONSUL_CHANGED) {
		http_reply_recycle(s->srv[s->ep], rep);
		return 0;
	}
	size_t bytes = rep->len;
	int changed = apply_answer(s, s->ep, rep, err);
	http_reply_recycle(s->srv[s->ep], rep);
	if (changed < 0) {
		conn_set_state(&s->sh.status, SOURCE_CONN_CONNECTING, NULL);
		return -1;
	}
	s->index = next;
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.bytes_fetched += bytes;
	s->sh.status.st.revision = (int64_t)s->index;
	if (changed)
		s->sh.status.st.last_event_ms = gw_wall_ms();
	pthread_mutex_unlock(&s->sh.status.mu);
	return changed;
}

enum consul_outcome consul_session(struct source *s, struct gw_err *err)
{
	const char *server = s->cc->kv.servers[s->ep];
	pthread_mutex_lock(&s->sh.status.mu);
	snprintf(s->sh.status.st.session, sizeof s->sh.status.st.session, "%s", server);
	s->sh.status.st.state = SOURCE_CONN_CONNECTING;
	s->sh.status.st.watches = 0;
	pthread_mutex_unlock(&s->sh.status.mu);
	err->kind = SYNC_OK;
	s->established = 0;

	if (s->need_full != CONSUL_NO_FULL_READ) {
		if (consul_full_read(s, s->ep, (enum kv_full_kind)s->need_full, err) < 0)
			return atomic_load(&s->sh.stop) ? CONSUL_STOPPED : CONSUL_FAILED;
		s->need_full = CONSUL_NO_FULL_READ;
	}
	for (;;) {
		if (atomic_load(&s->sh.stop))
			return CONSUL_STOPPED;
		int64_t now = gw_mono_ms();
		int64_t dl = consul_flush_due(s, now);
		if (s->resync_at >= 0 && now >= s->resync_at) {
			if (consul_full_read(s, s->ep, KV_FULL_RESYNC, err) < 0)
				return atomic_load(&s->sh.stop) ? CONSUL_STOPPED : CONSUL_FAILED;
			continue;
		}
		if (s->early > 0) {
			if (pace_early(s, server))
				return CONSUL_STOPPED;
			now = gw_mono_ms();
			dl = consul_flush_due(s, now);
		}
		int64_t wait = next_wait(s, now, dl);
		uint64_t sent = s->index;
		struct http_reply rep;
		struct consul_headers h;
		int64_t t0 = gw_mono_ms();
		int rc = get(s, s->ep, sent, wait, &rep, &h, err);
		int64_t took = gw_mono_ms() - t0;
		pthread_mutex_lock(&s->sh.status.mu);
		s->sh.status.st.polls++;
		pthread_mutex_unlock(&s->sh.status.mu);
		if (rc != 0) {
			conn_set_state(&s->sh.status, SOURCE_CONN_CONNECTING, NULL);
			return atomic_load(&s->sh.stop) ? CONSUL_STOPPED : CONSUL_FAILED;
		}
		if (!s->established) {
			s->established = 1;
			s->established_ms = gw_mono_ms();
			conn_mark_success(&s->sh.status, SOURCE_CONN_CONNECTED, NULL);
			LOG_I(s->log, "consul", "server %s: watching %s from index %" PRIu64,
			      server, s->prefix, sent);
		}
		int changed = take_answer(s, server, sent, &h, &rep, err);
		if (changed < 0)
			return atomic_load(&s->sh.stop) ? CONSUL_STOPPED : CONSUL_FAILED;
		pthread_mutex_lock(&s->sh.status.mu);
		s->sh.status.st.last_success_ms = gw_wall_ms();
		pthread_mutex_unlock(&s->sh.status.mu);
		if (changed || !consul_answer_early(took, wait))
			s->early = 0;
		else if (s->early < 1000)
			s->early++;
	}
}
