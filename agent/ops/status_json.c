/*
 * The /status document (see status_json.h). Built member by member with one "ok" flag
 * instead of a check per call: a half-built document is never returned, and the code still
 * reads as the shape it produces.
 */
#include "ops/status_json.h"

#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "source/failure.h"
#include "model/groups.h"

struct doc {
	int ok;
};

/* Set obj[key] = val (stealing val); returns val, or NULL if anything failed. */
static json_t *put(struct doc *d, json_t *obj, const char *key, json_t *val)
{
	if (!obj) {
		json_decref(val);
		val = NULL;
	}
	if (!val || json_object_set_new(obj, key, val) != 0) {
		d->ok = 0;
		return NULL;
	}
	return val;
}

static void append(struct doc *d, json_t *arr, json_t *val)
{
	if (!arr) {
		json_decref(val);
		val = NULL;
	}
	if (!val || json_array_append_new(arr, val) != 0)
		d->ok = 0;
}

void status_time_text(int64_t wall_ms, char buf[32])
{
	time_t secs = (time_t)(wall_ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char day[24];
	strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, 32, "%s.%03dZ", day, (int)(wall_ms % 1000));
}

/* An RFC 3339 time, or null for 0 ("never"). */
static json_t *time_or_null(int64_t wall_ms)
{
	if (wall_ms <= 0)
		return json_null();
	char buf[32];
	status_time_text(wall_ms, buf);
	return json_string(buf);
}

static json_t *text_or_null(const char *s)
{
	if (!s || !*s)
		return json_null();
	json_t *j = json_string(s);
	if (j)
		return j;
	char *copy = strdup(s); /* not UTF-8 (an error text quoting foreign bytes) */
	if (!copy)
		return NULL;
	utf8_scrub(copy);
	j = json_string(copy);
	free(copy);
	return j;
}

/* Seconds with millisecond precision. */
static json_t *seconds(int64_t ms)
{
	return json_real((double)ms / 1000.0);
}

static json_t *server_json(struct doc *d, const struct status_view *v,
                           const struct status_server_view *sv)
{
	json_t *o = json_object();
	const struct source_conn_status *st = &sv->st;
	put(d, o, "url", json_string(sv->url));
	/* the same keys in every state (null or 0 before the poller runs), so a consumer
	 * never meets a missing one */
	put(d, o, "state",
	    json_string(sv->running ? source_conn_state_name(st->state) : "starting"));
	put(d, o, "lastSuccess", time_or_null(st->last_success_ms));
	put(d, o, "secondsSinceSuccess",
	    st->last_success_ms > 0 ? seconds(v->wall_ms - st->last_success_ms) : json_null());
	put(d, o, "consecutiveFailures", json_integer((json_int_t)st->consecutive_failures));
	put(d, o, "lastError", text_or_null(st->last_error));
	put(d, o, "lastErrorAt", time_or_null(st->last_error_ms));
	put(d, o, "polls", json_integer((json_int_t)st->polls));
	put(d, o, "changes", json_integer((json_int_t)st->changes));
	put(d, o, "fetches", json_integer((json_int_t)st->fetches));
	put(d, o, "fetchedBytes", json_integer((json_int_t)st->bytes_fetched));
	put(d, o, "lastEvent", time_or_null(st->last_event_ms));
	put(d, o, "repairs", json_integer((json_int_t)st->repairs));
	put(d, o, "session", text_or_null(st->session));
	put(d, o, "watches", json_integer((json_int_t)st->watches));
	put(d, o, "revision", json_integer((json_int_t)st->revision));
	json_t *errors = put(d, o, "errors", json_object());
	for (enum sync_fail r = SYNC_OK + 1; r < SYNC_FAIL_COUNT; r++)
		if (r != SYNC_STOPPED)
			put(d, errors, sync_fail_name(r),
			    json_integer((json_int_t)st->failures[r]));
	return o;
}

static json_t *group_json(struct doc *d, const struct status_view *v, const struct group_data *gd)
{
	if (!gd)
		return json_null();
	json_t *o = json_object();
	int64_t age_ms = (v->mono_us - gd->received_us) / 1000;
	if (gd->received_us <= 0 || age_ms < 0)
		age_ms = 0;
	put(d, o, "md5", json_string(gd->md5));
	put(d, o, "lastModifyTime", json_integer((json_int_t)gd->last_modify_time));
	put(d, o, "items", json_integer((json_int_t)gd->n_items));
	put(d, o, "source", json_string(gd->provisional ? "snapshot" : gd->server));
	put(d, o, "fromSnapshot", json_boolean(gd->provisional));
	put(d, o, "receivedAt", time_or_null(v->wall_ms - age_ms));
	put(d, o, "ageSeconds", seconds(age_ms));
	return o;
}

static json_t *delivered_json(struct doc *d, const struct status_view *v, size_t i, enum gw_group g)
{
	const struct dispatch_group_status *pg = &v->dispatch.subscribers[i].groups[g];
	json_t *o = json_object();
	put(d, o, "md5", pg->delivered ? json_string(pg->md5) : json_null());
	put(d, o, "lastModifyTime",
	    pg->delivered ? json_integer((json_int_t)pg->last_modify_time) : json_null());
	put(d, o, "items", pg->delivered ? json_integer((json_int_t)pg->n_items) : json_null());
	put(d, o, "deliveredAt", time_or_null(pg->delivered ? pg->delivered_wall_ms : 0));
	put(d, o, "inStep", json_boolean(status_subscriber_in_step(v, i, g)));
	put(d, o, "failures", json_integer((json_int_t)pg->failures));
	put(d, o, "consecutiveFailures", json_integer((json_int_t)pg->consecutive_failures));
	put(d, o, "lastError", text_or_null(pg->last_error));
	put(d, o, "lastErrorAt", time_or_null(pg->last_error_wall_ms));
	return o;
}

static json_t *subscriber_json(struct doc *d, const struct status_view *v, size_t i)
{
	const struct dispatch_subscriber_status *s = &v->dispatch.subscribers[i];
	json_t *o = json_object();
	put(d, o, "name", json_string(s->name));
	put(d, o, "plugin", text_or_null(s->plugin));
	int in_step = 1;
	for (size_t k = 0; k < v->n_groups; k++)
		in_step &= status_subscriber_in_step(v, i, v->groups[k]);
	put(d, o, "inStep", json_boolean(in_step));
	put(d, o, "applies", json_integer((json_int_t)s->applies));
	put(d, o, "failures", json_integer((json_int_t)s->failures));
	put(d, o, "lastError", text_or_null(s->last_error));
	put(d, o, "lastErrorAt", time_or_null(s->last_error_wall_ms));
	json_t *groups = put(d, o, "groups", json_object());
	for (size_t k = 0; k < v->n_groups; k++) /* only the groups it takes (its `groups:`) */
		if (dispatch_takes(s, v->groups[k]))
			put(d, groups, gw_group_name(v->groups[k]),
			    delivered_json(d, v, i, v->groups[k]));
	return o;
}

static json_t *dispatcher_json(struct doc *d, const struct status_view *v)
{
	if (!v->have_dispatch)
		return json_null();
	const struct dispatch_status *ds = &v->dispatch;
	json_t *o = json_object();
	put(d, o, "alive", json_boolean(ds->alive));
	put(d, o, "busyIn", text_or_null(ds->busy_in));
	put(d, o, "busySeconds", seconds(ds->busy_in[0] ? ds->busy_ms : 0));
	put(d, o, "changes", json_integer((json_int_t)ds->changes));
	put(d, o, "failures", json_integer((json_int_t)ds->failures));
	return o;
}

json_t *status_json(const struct status_view *v)
{
	struct doc d = {1};
	json_t *root = json_object();
	struct gw_err why;
	int healthy = status_healthy(v, &why);

	put(&d, root, "version", json_string(v->version ? v->version : ""));
	put(&d, root, "startedAt", time_or_null(v->started_wall_ms));
	put(&d, root, "uptimeSeconds",
	    seconds(v->started_wall_ms > 0 ? v->wall_ms - v->started_wall_ms : 0));
	put(&d, root, "healthy", json_boolean(healthy));
	put(&d, root, "health", json_string(why.msg));
	put(&d, root, "paused", json_boolean(v->paused));

	/* "source" describes any source the same way (its connections are its servers, or its
	 * ZooKeeper/etcd endpoints); "servers" is the same list under its first name, kept so
	 * dashboards built on it go on working. */
	json_t *source = put(&d, root, "source", json_object());
	put(&d, source, "name", json_string(v->source_section ? v->source_section : "none"));
	put(&d, source, "type", json_string(v->source_type ? v->source_type : "none"));
	json_t *conns = put(&d, source, "connections", json_array());
	json_t *servers = put(&d, root, "servers", json_array());
	for (size_t i = 0; i < v->n_servers; i++) {
		append(&d, conns, server_json(&d, v, &v->servers[i]));
		append(&d, servers, server_json(&d, v, &v->servers[i]));
	}

	json_t *groups = put(&d, root, "groups", json_object());
	for (size_t k = 0; k < v->n_groups; k++)
		put(&d, groups, gw_group_name(v->groups[k]),
		    group_json(&d, v, v->data[v->groups[k]]));

	json_t *subs = put(&d, root, "subscribers", json_array());
	size_t n_subs = v->have_dispatch ? v->dispatch.n_subscribers : 0;
	for (size_t i = 0; i < n_subs; i++)
		append(&d, subs, subscriber_json(&d, v, i));

	put(&d, root, "dispatcher", dispatcher_json(&d, v));

	if (!d.ok) {
		json_decref(root);
		return NULL;
	}
	return root;
}
