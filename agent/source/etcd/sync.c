/*
 * One session of the etcd source on one endpoint (see etcd.h): read, then watch.
 *
 * Revisions are what keep a change from being lost or applied twice. A full read takes
 * every group at ONE revision R (the first range's header.revision, the others pinned to
 * it); the watch then starts at R+1, so nothing between the read and the watch is missed.
 * After a full read the mirror reflects R: a watch event at or below it is already in
 * what was read and is skipped (one revision may carry many events: a prefix delete). A
 * watch that ends is resumed from the last revision seen + 1 (nothing to read again);
 * only a start revision compacted away (the watch is cancelled with compact_revision)
 * needs a new full read (and so does an answer over the size cap: the same resume would
 * bring it again). The anti-entropy resync reads the newest revision, after the
 * stream's buffered bytes were applied: a change the watch never reported is a
 * difference (a repair); one still on its way when the read was made shows as a repair
 * too (the window is the stream's latency) and is skipped when it arrives.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "source/etcd/etcd.h"
#include "source/etcd/reply.h"
#include "source/etcd/wire.h"

/* gRPC status codes in etcd's error answers */
#define GRPC_CANCELLED         1
#define GRPC_DEADLINE_EXCEEDED 4
#define GRPC_UNAVAILABLE       14
#define GRPC_UNAUTHENTICATED   16

/* What the stream callback ends the stream with (non-zero: etcd_stream_fn). */
enum end_code { END_NONE = 0, END_COMPACTED, END_AUTH, END_ERROR };

static const char *kind_name(enum kv_full_kind kind)
{
	return kind == KV_FULL_START ? "start-up" : kind == KV_FULL_RECOVER ? "recovery" : "resync";
}

/* Keys per range request: an answer of a thousand typical items is about 1 MB, so a group
 * of any size is read in answers far under admin.max_response (a group of 100,000 rules
 * is 68 MB as one answer, over the 64 MiB default); a page still over it (plugins with
 * large jars) is asked again with a quarter as many keys, down to one. */
#define RANGE_PAGE 1000

/* Put one range answer's keys into the full read. 0 or -1 (out of memory). */
static int put_range(struct source *s, const struct etcd_range *r)
{
	for (size_t k = 0; k < r->n; k++)
		if (kv_mirror_full_put(s->mirror, r->kvs[k].key, r->kvs[k].key_len, r->kvs[k].value,
		                       r->kvs[k].value_len, r->kvs[k].mod_revision) != 0)
			return -1;
	return 0;
}

/* Read the groups at `at` (0: the newest, then every group at the first one's), each in
 * pages of RANGE_PAGE keys at that one revision. 0 or -1. */
static int read_groups(struct source *s, size_t ep, int64_t at, int64_t *read_at, size_t *keys,
                       struct gw_err *err)
{
	*keys = 0;
	for (size_t i = 0; i < s->layout.n_groups; i++) {
		enum gw_group g = s->layout.groups[i];
		char prefix[1024];
		snprintf(prefix, sizeof prefix, "%s/", s->layout.dirs[g]);
		char *from = NULL; /* the next page's first key */
		size_t from_len = 0;
		int64_t limit = RANGE_PAGE;
		for (;;) {
			if (atomic_load(&s->sh.stop)) {
				free(from);
				err->kind = SYNC_STOPPED;
				return gw_errf(err, "stopped");
			}
			struct etcd_range r;
			int rc = etcd_client_range(s->client, ep, prefix, from, from_len, at, limit,
			                           &r, err);
			if (rc == -1 && err->kind == SYNC_FAIL_TOO_LARGE && limit > 1) {
				limit = limit > 4 ? limit / 4 : 1;
				continue;
			}
			if (rc != 0) {
				free(from);
				return rc;
			}
			if (at == 0)
				at = r.revision; /* the other pages and groups at the same revision
				                  */
			if (put_range(s, &r) != 0) {
				etcd_range_free(&r);
				free(from);
				err->kind = SYNC_FAIL_PARSE;
				return gw_errf(err, "etcd: out of memory");
			}
			*keys += r.n;
			if (!r.more || r.n == 0) {
				etcd_range_free(&r);
				break;
			}
			/* the next key after the last one: the same bytes and a NUL */
			const struct etcd_kv *last = &r.kvs[r.n - 1];
			free(from);
			from_len = last->key_len + 1;
			from = malloc(from_len);
			if (from) {
				memcpy(from, last->key, last->key_len);
				from[last->key_len] = '\0';
			}
			etcd_range_free(&r);
			if (!from) {
				err->kind = SYNC_FAIL_PARSE;
				return gw_errf(err, "etcd: out of memory");
			}
		}
		free(from);
	}
	*read_at = at;
	return 0;
}

int etcd_full_read(struct source *s, size_t ep, enum kv_full_kind kind, struct gw_err *err)
{
	int64_t read_at = 0;
	size_t keys = 0;
	if (kv_mirror_full_begin(s->mirror) != 0) {
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "etcd: out of memory");
	}
	int rc = read_groups(s, ep, 0, &read_at, &keys, err);
	if (rc != 0) {
		kv_mirror_full_abort(s->mirror);
		return -1;
	}
	s->read_rev = read_at;
	if (read_at > s->rev || kind != KV_FULL_RESYNC)
		s->rev = read_at;
	int64_t now = gw_mono_ms();
	int versions = kv_mirror_full_end(s->mirror, kind, now);
	if (versions < 0) {
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "etcd: out of memory");
	}
	LOG_I(s->log, "etcd",
	      "endpoint %s: %s read of %s: %zu key(s) at revision %lld, %d new "
	      "version(s)",
	      s->kv->servers[ep], kind_name(kind), s->prefix, keys, (long long)s->rev, versions);
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.fetches++;
	s->sh.status.st.revision = s->rev;
	pthread_mutex_unlock(&s->sh.status.mu);
	if (s->kv->resync_interval_ms > 0)
		s->resync_at = now + s->kv->resync_interval_ms;
	return 0;
}

int64_t etcd_flush_due(struct source *s, int64_t now)
{
	int64_t dl = kv_mirror_deadline(s->mirror);
	if (dl >= 0 && dl <= now) {
		kv_mirror_flush(s->mirror, now, 0);
		dl = kv_mirror_deadline(s->mirror);
	}
	return dl;
}

/* ---------------------------------------------------------------- the stream */

static int end_stream(struct source *s, int code, enum sync_fail why, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int end_stream(struct source *s, int code, enum sync_fail why, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->end.msg, sizeof s->end.msg, fmt, ap);
	va_end(ap);
	s->end.kind = why;
	s->end_code = code;
	return code;
}

static void apply_events(struct source *s, const struct etcd_watch_msg *m)
{
	int64_t now = gw_mono_ms();
	for (size_t i = 0; i < m->n_events; i++) {
		const struct etcd_event *e = &m->events[i];
		if (e->kv.mod_revision <= s->read_rev)
			continue; /* already in the last full read */
		if (e->type == ETCD_EV_DELETE)
			kv_mirror_delete(s->mirror, e->kv.key, e->kv.key_len, now);
		else
			kv_mirror_put(s->mirror, e->kv.key, e->kv.key_len, e->kv.value,
			              e->kv.value_len, e->kv.mod_revision, now);
		if (e->kv.mod_revision > s->rev)
			s->rev = e->kv.mod_revision;
	}
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.polls++;
	s->sh.status.st.revision = s->rev;
	s->sh.status.st.last_event_ms = gw_wall_ms();
	pthread_mutex_unlock(&s->sh.status.mu);
}

static int on_object(void *arg, const char *text, size_t len)
{
	struct source *s = arg;
	const char *ep = s->kv->servers[s->ep];
	struct etcd_watch_msg m;
	struct gw_err err = {0};
	if (etcd_parse_watch(text, len, &m, &err) != 0)
		return end_stream(s, END_ERROR, SYNC_FAIL_PARSE, "endpoint %s: watch of %s: %s", ep,
		                  s->prefix, err.msg);
	int rc = 0;
	if (m.is_error) {
		/* the gateway's own error inside the stream: etcd went away (UNAVAILABLE), the
		 * token was refused (UNAUTHENTICATED), or something else */
		int code = m.err.code;
		rc = end_stream(s, code == GRPC_UNAUTHENTICATED ? END_AUTH : END_ERROR,
		                code == GRPC_UNAUTHENTICATED ? SYNC_FAIL_AUTH
		                : code == GRPC_UNAVAILABLE || code == GRPC_CANCELLED
		                    ? SYNC_FAIL_CONNECT
		                : code == GRPC_DEADLINE_EXCEEDED ? SYNC_FAIL_TIMEOUT
		                                                 : SYNC_FAIL_HTTP,
		                "endpoint %s: watch of %s: etcd error %d: %s", ep, s->prefix, code,
		                m.err.message);
	} else if (m.canceled && m.compact_revision > 0) {
		rc = end_stream(s, END_COMPACTED, SYNC_FAIL_SESSION,
		                "endpoint %s: watch of %s from revision %lld cancelled: compacted "
		                "(compact_revision %lld)",
		                ep, s->prefix, (long long)(s->rev + 1),
		                (long long)m.compact_revision);
	} else if (m.canceled) {
		int auth = strstr(m.cancel_reason, "Unauthenticated") ||
		           strstr(m.cancel_reason, "auth token");
		rc = end_stream(s, auth ? END_AUTH : END_ERROR,
		                auth ? SYNC_FAIL_AUTH : SYNC_FAIL_HTTP,
		                "endpoint %s: watch of %s cancelled: %s", ep, s->prefix,
		                m.cancel_reason[0] ? m.cancel_reason : "no reason given");
	} else {
		if (m.created && !s->established) {
			s->established = 1;
			s->established_ms = gw_mono_ms();
			conn_mark_success(&s->sh.status, SOURCE_CONN_CONNECTED, NULL);
			LOG_I(s->log, "etcd", "endpoint %s: watching %s from revision %lld", ep,
			      s->prefix, (long long)(s->rev + 1));
		}
		if (m.n_events)
			apply_events(s, &m);
	}
	etcd_watch_msg_free(&m);
	return rc;
}

static enum etcd_outcome stream_ended(struct source *s, int fn_rc, const struct gw_err *werr,
                                      struct gw_err *err)
{
	conn_set_state(&s->sh.status, SOURCE_CONN_CONNECTING, NULL);
	if (fn_rc) {
		err->kind = s->end.kind;
		gw_errf(err, "%s", s->end.msg);
		if (fn_rc == END_COMPACTED)
			return ETCD_COMPACTED;
		if (fn_rc == END_AUTH && s->cfg->username && !s->auth_retried) {
			s->auth_retried = 1;
			return ETCD_AUTH_RETRY;
		}
		/* refused again with the renewed token: a failed try on the retry schedule,
		 * and that try starts with a new token (a token etcd forgot meanwhile, when it
		 * restarted again, is not sent for ever) */
		if (fn_rc == END_AUTH)
			etcd_client_forget_token(s->client);
		return s->established ? ETCD_ENDED : ETCD_FAILED;
	}
	err->kind = werr->kind;
	gw_errf(err, "endpoint %s", werr->msg);
	/* a watch resumed from an old revision gets up to 1000 revisions of events in one
	 * answer; one over the cap would be sent again at every resume, so the next session
	 * reads everything at a fresh revision and watches from there instead */
	if (werr->kind == SYNC_FAIL_TOO_LARGE)
		s->need_full = KV_FULL_RECOVER;
	return s->established ? ETCD_ENDED : ETCD_FAILED;
}

enum etcd_outcome etcd_session(struct source *s, struct gw_err *err)
{
	const char *ep = s->kv->servers[s->ep];
	pthread_mutex_lock(&s->sh.status.mu);
	snprintf(s->sh.status.st.session, sizeof s->sh.status.st.session, "%s", ep);
	s->sh.status.st.state = SOURCE_CONN_CONNECTING;
	s->sh.status.st.watches = 0;
	pthread_mutex_unlock(&s->sh.status.mu);
	err->kind = SYNC_OK;
	s->established = 0;

	if (s->need_full != ETCD_NO_FULL_READ) {
		if (etcd_full_read(s, s->ep, (enum kv_full_kind)s->need_full, err) != 0)
			return atomic_load(&s->sh.stop) ? ETCD_STOPPED : ETCD_FAILED;
		s->need_full = ETCD_NO_FULL_READ;
	}
	if (s->cfg->username && !etcd_client_auth_header(s->client) &&
	    etcd_client_authenticate(s->client, s->ep, err) != 0)
		return atomic_load(&s->sh.stop) ? ETCD_STOPPED : ETCD_FAILED;

	char *body = etcd_body_watch(s->prefix, strlen(s->prefix), s->rev + 1);
	char label[1100];
	snprintf(label, sizeof label, "watch of %s", s->prefix);
	s->end_code = END_NONE;
	if (!body || etcd_watch_open(s->watch, ep, etcd_client_auth_header(s->client), body, label,
	                             on_object, s, err) != 0) {
		if (!body)
			gw_errf(err, "endpoint %s: watch: out of memory", ep);
		free(body);
		err->kind = SYNC_FAIL_CONNECT;
		return ETCD_FAILED;
	}
	free(body);
	/* a member that takes the request and never answers it (a frozen process: its kernel
	 * still accepts and acknowledges, so neither the connect timeout nor TCP keepalive
	 * notices) must not hold the agent: a watch not created in connect_timeout is a
	 * failed try, and the next endpoint takes over */
	int64_t create_by = gw_mono_ms() + s->cfg->connect_timeout_ms;

	for (;;) {
		if (atomic_load(&s->sh.stop)) {
			etcd_watch_close(s->watch);
			return ETCD_STOPPED;
		}
		int fn_rc;
		struct gw_err werr = {0};
		if (etcd_watch_perform(s->watch, &fn_rc, &werr) == 1) {
			if (atomic_load(&s->sh.stop))
				return ETCD_STOPPED;
			return stream_ended(s, fn_rc, &werr, err);
		}
		int64_t now = gw_mono_ms();
		int64_t dl = etcd_flush_due(s, now);
		if (!s->established && now >= create_by) {
			etcd_watch_close(s->watch);
			conn_set_state(&s->sh.status, SOURCE_CONN_CONNECTING, NULL);
			err->kind = SYNC_FAIL_TIMEOUT;
			gw_errf(err, "endpoint %s: watch of %s: not created within %lld ms", ep,
			        s->prefix, (long long)s->cfg->connect_timeout_ms);
			return ETCD_FAILED;
		}
		if (s->established && s->resync_at >= 0 && now >= s->resync_at) {
			if (etcd_full_read(s, s->ep, KV_FULL_RESYNC, err) != 0) {
				/* the endpoint in use cannot answer a read: its watch may be as
				 * stuck (a frozen member keeps TCP open and sends nothing), so
				 * the session ends and the next endpoint takes over */
				etcd_watch_close(s->watch);
				return atomic_load(&s->sh.stop) ? ETCD_STOPPED : ETCD_FAILED;
			}
			continue;
		}
		int64_t wake = dl;
		if (s->established && s->resync_at >= 0 && (wake < 0 || s->resync_at < wake))
			wake = s->resync_at;
		if (!s->established && (wake < 0 || create_by < wake))
			wake = create_by;
		etcd_watch_wait(s->watch, wake < 0 ? -1 : (wake > now ? wake - now : 0));
	}
}
