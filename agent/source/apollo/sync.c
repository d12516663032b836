/*
 * One session of the Apollo source with the config service in use (see apollo.h).
 *
 * The client is Apollo's own (apollo-java RemoteConfigLongPollService and
 * RemoteConfigRepository): a long poll on /notifications/v2 with the last notification id,
 * answered at once when the namespace has a newer release (the first poll, with -1,
 * always is) and otherwise held about 60 s and answered 304; each newer id means a read of
 * /configs with the releaseKey held (304: nothing new). A read gives the whole release,
 * compared key by key with the map held, as text where it stands (scan.h) or, for what the
 * walk leaves, parsed (reply.h, diff.h), and only the differing keys reach the node map
 * (node.h), then the kv mirror, which builds the groups that changed.
 *
 * The settle rule: ShenYu's admin makes one release per key it writes (the item keys,
 * then the list key), so a change arrives as a burst of releases. A read that changed keys
 * leaves the mirror with a deadline (settle after the last change); the thread sleeps
 * until it, then reads again with the new releaseKey: a release made meanwhile is more of
 * the burst (applied, the deadline moves on, within the mirror's cap of 100 x settle),
 * 304 means the burst is over and the due groups are built. So a burst costs a read per
 * settle window, an idle source no request but the held poll, and nothing wakes on a timer.
 *
 * The anti-entropy resync reads the whole release as a full read of the node map: what
 * the map holds that differs from it is a repair (logged and counted by the mirror). It
 * runs between polls, so it can come up to one hold (60 s) late.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "source/apollo/apollo.h"
#include "source/apollo/diff.h"
#include "source/apollo/reply.h"
#include "source/apollo/scan.h"

/* A reply whose status is not the one expected, as an error naming the service. */
static int status_error(struct source *s, const char *what, const struct http_reply *rep,
                        struct gw_err *err)
{
	const struct apollo_config *ac = s->ac;
	const char *server = apollo_client_server(s->client);
	if (rep->status == 401) {
		err->kind = SYNC_FAIL_AUTH;
		return gw_errf(err,
		               "%s: %s: HTTP 401: the access key's signature was refused (%s: a "
		               "wrong apollo.secret, or this host's clock is more than 60 s off "
		               "the config service's)",
		               server, what,
		               ac->secret ? "check the secret of app_id"
		                          : "no apollo.secret is set");
	}
	if (rep->status == 404) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err,
		               "%s: %s: HTTP 404: nothing is released in app %s, cluster %s, "
		               "namespace %s (is the admin's shenyu.sync.apollo pointed here?)",
		               server, what, ac->app_id, ac->cluster, ac->namespace_name);
	}
	err->kind = SYNC_FAIL_HTTP;
	return gw_errf(err, "%s: %s: HTTP %ld", server, what, rep->status);
}

static void hold_release(struct source *s, struct apollo_release *rel)
{
	json_decref(s->held);
	free(s->release_key);
	s->held = rel->configurations;
	s->release_key = rel->release_key;
	rel->configurations = NULL;
	rel->release_key = NULL;
}

struct apply_ctx {
	struct source *s;
	int64_t now;
};

static int apply_key(void *ctx, const char *key, size_t klen, const char *value, size_t vlen)
{
	struct apply_ctx *a = ctx;
	int rc = value ? node_put(a->s->map, key, klen, value, vlen, NULL, a->now)
	               : node_delete(a->s->map, key, klen, a->now);
	return rc < 0 ? -1 : 0;
}

/* GET /configs (release_key: what is held, NULL for the whole release). 1 with *rel
 * filled, 0 on 304, -1 with err. With `scanned` (a read of changes, a map held), a full
 * reply the walk takes (scan.h) is applied at once: 2, *scanned the keys that differed. */
static int read_release(struct source *s, const char *release_key, struct apollo_release *rel,
                        long *scanned, struct gw_err *err)
{
	struct http_reply rep = {0};
	memset(rel, 0, sizeof *rel);
	if (apollo_client_configs(s->client, release_key, &rep, err) != 0)
		return -1;
	apollo_count(s, 0, rep.status == 200 ? rep.len : 0);
	int rc;
	if (rep.status == 304) {
		rc = 0;
	} else if (rep.status != 200) {
		rc = status_error(s, "configs read", &rep, err);
	} else {
		char *key = NULL;
		struct apply_ctx a = {s, gw_mono_ms()};
		rc = scanned && s->held ? apollo_scan_release(rep.body, rep.len, s->held, apply_key,
		                                              &a, &key, scanned)
		                        : 0;
		if (rc == 1) {
			free(s->release_key);
			s->release_key = key;
			rc = 2;
		} else if (rc < 0) {
			/* the held map may be part way: read everything at the next session */
			s->need_full = KV_FULL_RECOVER;
			err->kind = SYNC_FAIL_PARSE;
			gw_errf(err, "apollo: out of memory");
		} else {
			struct gw_err perr = {0};
			rc = apollo_parse_release(rep.body, rep.len, rel, &perr) == 0 ? 1 : -1;
			if (rc < 0) {
				err->kind = perr.kind;
				gw_errf(err, "%s: %s", apollo_client_server(s->client), perr.msg);
			}
		}
	}
	apollo_client_recycle(s->client, &rep);
	return rc;
}

int apollo_full_read(struct source *s, enum kv_full_kind kind, struct gw_err *err)
{
	struct apollo_release rel;
	int rc = read_release(s, NULL, &rel, NULL, err);
	if (rc <= 0 || !rel.configurations) {
		/* a 304 or changes to a read without a releaseKey: not what Apollo answers */
		if (rc >= 0) {
			err->kind = SYNC_FAIL_HTTP;
			gw_errf(err,
			        "%s: configs read: %s to a read without a releaseKey (the whole "
			        "release was asked for)",
			        apollo_client_server(s->client),
			        rc == 0 ? "HTTP 304" : "configurationChanges");
		}
		if (rc > 0)
			apollo_release_free(&rel);
		return -1;
	}
	if (node_full_begin(s->map) != 0)
		goto oom;
	const char *k;
	size_t klen;
	json_t *v;
	json_object_keylen_foreach(rel.configurations, k, klen, v)
	{
		if (node_full_put(s->map, k, klen, json_string_value(v), json_string_length(v),
		                  NULL) != 0)
			goto oom;
	}
	if (node_full_end(s->map, kind, gw_mono_ms()) < 0)
		goto oom;
	hold_release(s, &rel);
	apollo_mark_success(s);
	return 0;
oom:
	apollo_release_free(&rel);
	err->kind = SYNC_FAIL_PARSE;
	return gw_errf(err, "apollo: out of memory");
}

/* Read what changed since the release held and hand the differing keys on. The number
 * of keys that differed (0 on 304), or -1 with err. */
static long read_changes(struct source *s, struct gw_err *err)
{
	struct apollo_release rel;
	long scanned = 0;
	int rc = read_release(s, s->release_key, &rel, &scanned, err);
	if (rc == 2)
		return scanned;
	if (rc <= 0)
		return rc;
	struct apply_ctx a = {s, gw_mono_ms()};
	long n;
	if (rel.configurations) {
		n = apollo_diff(s->held, rel.configurations, apply_key, &a);
	} else {
		/* incremental: the held map becomes the new release in place */
		if (!s->held && !(s->held = json_object()))
			n = -1;
		else
			n = apollo_apply_changes(s->held, rel.changes, apply_key, &a);
		if (n >= 0) {
			json_decref(rel.changes);
			rel.changes = NULL;
			rel.configurations = json_incref(s->held);
		}
	}
	if (n < 0) {
		apollo_release_free(&rel);
		/* the held map may be part way: read everything at the next session */
		s->need_full = KV_FULL_RECOVER;
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "apollo: out of memory");
	}
	hold_release(s, &rel);
	return n;
}

/* After a read that changed keys: the settle wait (see the top). 0, or -1 with err. */
static int settle(struct source *s, struct gw_err *err)
{
	int64_t dl;
	while ((dl = node_deadline(s->map)) >= 0) {
		if (conn_pause_until(&s->sh.status, &s->sh.stop, dl, NULL, NULL))
			return 0;
		long n = read_changes(s, err);
		if (n < 0) {
			/* the rest of the burst cannot be read now: what was read is whole and
			 * valid, so it is delivered rather than held back for the retries (an
			 * item its list does not name yet stays out) */
			node_flush(s->map, gw_mono_ms(), 1);
			return -1;
		}
		node_flush(s->map, gw_mono_ms(), 0);
	}
	return 0;
}

static int resync_due(struct source *s)
{
	return s->resync_at >= 0 && gw_mono_ms() >= s->resync_at;
}

static void schedule_resync(struct source *s)
{
	s->resync_at =
	    s->ac->resync_interval_ms > 0 ? gw_mono_ms() + s->ac->resync_interval_ms : -1;
}

int apollo_session(struct source *s, struct gw_err *err)
{
	if (s->need_full != APOLLO_NO_FULL_READ) {
		if (apollo_full_read(s, (enum kv_full_kind)s->need_full, err) != 0)
			return -1;
		s->need_full = APOLLO_NO_FULL_READ;
		schedule_resync(s);
	}
	conn_set_state(&s->sh.status, SOURCE_CONN_CONNECTED, NULL);
	while (!atomic_load(&s->sh.stop)) {
		if (resync_due(s)) {
			if (apollo_full_read(s, KV_FULL_RESYNC, err) != 0)
				return -1;
			schedule_resync(s);
		}
		struct http_reply rep = {0};
		int rc = apollo_client_notifications(s->client, s->notification, &rep, err);
		if (atomic_load(&s->sh.stop))
			return 0;
		apollo_count(s, 1, 0); /* polls: answered or failed */
		if (rc != 0)
			return -1;
		if (rep.status == 304) {
			apollo_client_recycle(s->client, &rep);
			apollo_mark_success(s);
			continue;
		}
		if (rep.status != 200) {
			status_error(s, "notifications", &rep, err);
			apollo_client_recycle(s->client, &rep);
			return -1;
		}
		int64_t id = 0;
		struct gw_err perr = {0};
		int found = apollo_parse_notifications(rep.body, rep.len, s->ac->namespace_name,
		                                       &id, &perr);
		apollo_client_recycle(s->client, &rep);
		if (found < 0) {
			err->kind = perr.kind;
			return gw_errf(err, "%s: %s", apollo_client_server(s->client), perr.msg);
		}
		if (!found || id == s->notification) {
			/* a 200 that names nothing new would be answered again at once: a service
			 * that does this is failing, not idle (no busy loop) */
			err->kind = SYNC_FAIL_PARSE;
			return gw_errf(
			    err,
			    "%s: notifications: HTTP 200 without a newer notification id "
			    "for namespace %s (held %" PRId64 ")",
			    apollo_client_server(s->client), s->ac->namespace_name,
			    s->notification);
		}
		pthread_mutex_lock(&s->sh.status.mu);
		s->sh.status.st.last_event_ms = gw_wall_ms();
		pthread_mutex_unlock(&s->sh.status.mu);
		long n = read_changes(s, err);
		if (n < 0)
			return -1;
		node_flush(s->map, gw_mono_ms(), 0);
		if (settle(s, err) != 0)
			return -1;
		s->notification = id;
		pthread_mutex_lock(&s->sh.status.mu);
		s->sh.status.st.revision = id;
		pthread_mutex_unlock(&s->sh.status.mu);
		apollo_mark_success(s);
	}
	return 0;
}
