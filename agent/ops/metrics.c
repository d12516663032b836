/*
 * Prometheus text rendering (see metrics.h). Written to an open_memstream() so the code is
 * a list of fprintf()s in the order of the exposition; every series of a labelled counter
 * is emitted from the start (zeros included), so rate() and alerts work from the first
 * scrape instead of after the first failure.
 */
#include "ops/metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/failure.h"
#include "deliver/latency.h"
#include "model/groups.h"

const char *metrics_escape_label(const char *value, char *buf, size_t cap)
{
	size_t o = 0;
	for (const char *p = value ? value : ""; *p && o + 2 < cap; p++) {
		if (*p == '\\' || *p == '"') {
			buf[o++] = '\\';
			buf[o++] = *p;
		} else if (*p == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
	return buf;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* `name{key="value"}` prefix with the value escaped. */
static const char *series1(char *buf, size_t cap, const char *name, const char *key,
                           const char *value)
{
	char esc[1024];
	snprintf(buf, cap, "%s{%s=\"%s\"}", name, key,
	         metrics_escape_label(value, esc, sizeof esc));
	return buf;
}

/* `name{subscriber="...",group="..."}` prefix with the subscriber's name escaped. */
static const char *series2(char *buf, size_t cap, const char *name, const char *subscriber,
                           const char *group)
{
	char esc[1024];
	snprintf(buf, cap, "%s{subscriber=\"%s\",group=\"%s\"}", name,
	         metrics_escape_label(subscriber, esc, sizeof esc), group);
	return buf;
}

/* Milliseconds as seconds with three decimals ("1714567890.123"). */
static void ms_value(FILE *f, const char *series, int64_t ms)
{
	if (ms < 0)
		ms = 0;
	fprintf(f, "%s %" PRId64 ".%03" PRId64 "\n", series, ms / 1000, ms % 1000);
}

static void u64_value(FILE *f, const char *series, uint64_t n)
{
	fprintf(f, "%s %" PRIu64 "\n", series, n);
}

static void agent_metrics(FILE *f, const struct status_view *v)
{
	char esc[256];
	struct gw_err why;
	family(f, "gwsync_up", "gauge", "1 while the agent runs and answers.");
	fprintf(f, "gwsync_up 1\n");
	family(f, "gwsync_build_info", "gauge", "The agent's version, as a label.");
	fprintf(f, "gwsync_build_info{version=\"%s\"} 1\n",
	        metrics_escape_label(v->version, esc, sizeof esc));
	family(f, "gwsync_start_time_seconds", "gauge", "When the agent started (Unix time).");
	ms_value(f, "gwsync_start_time_seconds", v->started_wall_ms);
	family(f, "gwsync_healthy", "gauge",
	       "1 if every configured group holds data and the dispatcher runs (as /healthz).");
	fprintf(f, "gwsync_healthy %d\n", status_healthy(v, &why));
	family(f, "gwsync_sync_paused", "gauge",
	       "1 while delivery to subscribers is paused (POST /sync/pause).");
	fprintf(f, "gwsync_sync_paused %d\n", v->paused ? 1 : 0);
}

static void server_metrics(FILE *f, const struct status_view *v)
{
	char s[1400];
	static const enum source_conn_state states[] = {
	    SOURCE_CONN_POLLING, SOURCE_CONN_RETRYING,   SOURCE_CONN_BACKING_OFF,
	    SOURCE_CONN_STOPPED, SOURCE_CONN_CONNECTING, SOURCE_CONN_CONNECTED};

	family(f, "gwsync_server_state", "gauge",
	       "1 for the state each admin server's poller is in (starting before it runs).");
	for (size_t i = 0; i < v->n_servers; i++) {
		const struct status_server_view *sv = &v->servers[i];
		char url[1024];
		metrics_escape_label(sv->url, url, sizeof url);
		fprintf(f, "gwsync_server_state{server=\"%s\",state=\"starting\"} %d\n", url,
		        !sv->running);
		for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
			fprintf(f, "gwsync_server_state{server=\"%s\",state=\"%s\"} %d\n", url,
			        source_conn_state_name(states[k]),
			        sv->running && sv->st.state == states[k]);
	}

	static const char *const counters[][2] = {
	    {"gwsync_polls_total", "Listener requests (long polls) answered or failed."},
	    {"gwsync_fetches_total", "Fetch requests for changed groups."},
	    {"gwsync_changes_total", "Group versions from this server accepted into the store."},
	    {"gwsync_fetched_bytes_total", "Reply bytes of successful fetches."},
	    {"gwsync_repairs_total",
	     "Group versions an anti-entropy full sync corrected (event sources)."},
	};
	for (size_t c = 0; c < sizeof counters / sizeof counters[0]; c++) {
		family(f, counters[c][0], "counter", counters[c][1]);
		for (size_t i = 0; i < v->n_servers; i++) {
			const struct source_conn_status *st = &v->servers[i].st;
			uint64_t n = c == 0   ? st->polls
			             : c == 1 ? st->fetches
			             : c == 2 ? st->changes
			             : c == 3 ? st->bytes_fetched
			                      : st->repairs;
			u64_value(f,
			          series1(s, sizeof s, counters[c][0], "server", v->servers[i].url),
			          n);
		}
	}

	family(f, "gwsync_errors_total", "counter",
	       "Failed conversations with an admin server, by reason (connect, timeout, http, "
	       "code, parse, fetch, too_large, auth).");
	for (size_t i = 0; i < v->n_servers; i++) {
		char url[1024];
		metrics_escape_label(v->servers[i].url, url, sizeof url);
		for (enum sync_fail r = SYNC_OK + 1; r < SYNC_FAIL_COUNT; r++)
			if (r != SYNC_STOPPED)
				fprintf(f,
				        "gwsync_errors_total{server=\"%s\",reason=\"%s\"} %" PRIu64
				        "\n",
				        url, sync_fail_name(r), v->servers[i].st.failures[r]);
	}

	family(f, "gwsync_server_consecutive_failures", "gauge",
	       "Failed tries since the server last answered well (0 when healthy).");
	for (size_t i = 0; i < v->n_servers; i++)
		u64_value(f,
		          series1(s, sizeof s, "gwsync_server_consecutive_failures", "server",
		                  v->servers[i].url),
		          v->servers[i].st.consecutive_failures);

	family(f, "gwsync_server_last_success_timestamp_seconds", "gauge",
	       "When the server last answered a poll well (Unix time; 0: never).");
	for (size_t i = 0; i < v->n_servers; i++)
		ms_value(f,
		         series1(s, sizeof s, "gwsync_server_last_success_timestamp_seconds",
		                 "server", v->servers[i].url),
		         v->servers[i].st.last_success_ms);
}

/* The same facts for any source, labelled source (its configuration section), type and
 * connection, so a dashboard built on them survives a change of source (WebSocket,
 * ZooKeeper, etcd). The gwsync_server_* families above stay: they are the first names. */
static void source_metrics(FILE *f, const struct status_view *v)
{
	static const enum source_conn_state states[] = {
	    SOURCE_CONN_POLLING, SOURCE_CONN_RETRYING,   SOURCE_CONN_BACKING_OFF,
	    SOURCE_CONN_STOPPED, SOURCE_CONN_CONNECTING, SOURCE_CONN_CONNECTED};
	char sec[128], type[128], lbl[1400];
	metrics_escape_label(v->source_section ? v->source_section : "none", sec, sizeof sec);
	metrics_escape_label(v->source_type ? v->source_type : "none", type, sizeof type);
	family(f, "gwsync_source_info", "gauge", "The agent's source: its section and type.");
	fprintf(f, "gwsync_source_info{source=\"%s\",type=\"%s\"} 1\n", sec, type);

	family(f, "gwsync_source_connection_state", "gauge",
	       "1 for the state each connection of the source is in (starting before it runs).");
	for (size_t i = 0; i < v->n_servers; i++) {
		const struct status_server_view *sv = &v->servers[i];
		char conn[1024];
		metrics_escape_label(sv->url, conn, sizeof conn);
		snprintf(lbl, sizeof lbl, "source=\"%s\",type=\"%s\",connection=\"%s\"", sec, type,
		         conn);
		fprintf(f, "gwsync_source_connection_state{%s,state=\"starting\"} %d\n", lbl,
		        !sv->running);
		for (size_t k = 0; k < sizeof states / sizeof states[0]; k++)
			fprintf(f, "gwsync_source_connection_state{%s,state=\"%s\"} %d\n", lbl,
			        source_conn_state_name(states[k]),
			        sv->running && sv->st.state == states[k]);
	}

	static const char *const fams[][3] = {
	    {"gwsync_source_changes_total", "counter",
	     "Group versions from this connection accepted into the store."},
	    {"gwsync_source_repairs_total", "counter",
	     "Differences anti-entropy found between what was held and the source's full state."},
	    {"gwsync_source_consecutive_failures", "gauge",
	     "Failed tries since the connection last worked (0 when healthy)."},
	    {"gwsync_source_last_event_timestamp_seconds", "gauge",
	     "When the connection last announced a change (Unix time; 0: never)."},
	    {"gwsync_source_last_success_timestamp_seconds", "gauge",
	     "When the connection last worked (Unix time; 0: never)."},
	    {"gwsync_source_watches", "gauge",
	     "Watches the connection holds (ZooKeeper: watched nodes; etcd: watch streams)."},
	    {"gwsync_source_revision", "gauge",
	     "The store revision the source has reached (etcd: revision; ZooKeeper: zxid)."},
	};
	for (size_t c = 0; c < sizeof fams / sizeof fams[0]; c++) {
		family(f, fams[c][0], fams[c][1], fams[c][2]);
		for (size_t i = 0; i < v->n_servers; i++) {
			const struct source_conn_status *st = &v->servers[i].st;
			char conn[1024];
			metrics_escape_label(v->servers[i].url, conn, sizeof conn);
			snprintf(lbl, sizeof lbl, "%s{source=\"%s\",type=\"%s\",connection=\"%s\"}",
			         fams[c][0], sec, type, conn);
			if (c == 0)
				u64_value(f, lbl, st->changes);
			else if (c == 1)
				u64_value(f, lbl, st->repairs);
			else if (c == 2)
				u64_value(f, lbl, st->consecutive_failures);
			else if (c == 5)
				u64_value(f, lbl, st->watches);
			else if (c == 6)
				u64_value(f, lbl, (uint64_t)(st->revision > 0 ? st->revision : 0));
			else
				ms_value(f, lbl, c == 3 ? st->last_event_ms : st->last_success_ms);
		}
	}

	family(f, "gwsync_source_errors_total", "counter",
	       "Failed conversations of a source's connection, by reason.");
	for (size_t i = 0; i < v->n_servers; i++) {
		char conn[1024];
		metrics_escape_label(v->servers[i].url, conn, sizeof conn);
		for (enum sync_fail r = SYNC_OK + 1; r < SYNC_FAIL_COUNT; r++)
			if (r != SYNC_STOPPED)
				fprintf(f,
				        "gwsync_source_errors_total{source=\"%s\",type=\"%s\","
				        "connection=\"%s\",reason=\"%s\"} %" PRIu64 "\n",
				        sec, type, conn, sync_fail_name(r),
				        v->servers[i].st.failures[r]);
	}
}

static void group_metrics(FILE *f, const struct status_view *v)
{
	char s[256];
	family(f, "gwsync_group_held", "gauge",
	       "1 if the agent holds a version of the group (from an admin or the snapshot).");
	for (size_t k = 0; k < v->n_groups; k++)
		fprintf(
		    f, "%s %d\n",
		    series1(s, sizeof s, "gwsync_group_held", "group", gw_group_name(v->groups[k])),
		    v->data[v->groups[k]] != NULL);

	family(f, "gwsync_group_items", "gauge", "Items in the held version of the group.");
	for (size_t k = 0; k < v->n_groups; k++) {
		const struct group_data *gd = v->data[v->groups[k]];
		if (gd)
			fprintf(f, "%s %zu\n",
			        series1(s, sizeof s, "gwsync_group_items", "group",
			                gw_group_name(gd->group)),
			        gd->n_items);
	}

	family(f, "gwsync_group_last_update_timestamp_seconds", "gauge",
	       "The admin's lastModifyTime of the held version (Unix time).");
	for (size_t k = 0; k < v->n_groups; k++) {
		const struct group_data *gd = v->data[v->groups[k]];
		if (gd)
			ms_value(f,
			         series1(s, sizeof s, "gwsync_group_last_update_timestamp_seconds",
			                 "group", gw_group_name(gd->group)),
			         gd->last_modify_time);
	}

	family(f, "gwsync_group_received_timestamp_seconds", "gauge",
	       "When this agent received (or loaded from the snapshot) the held version.");
	for (size_t k = 0; k < v->n_groups; k++) {
		const struct group_data *gd = v->data[v->groups[k]];
		if (gd) {
			int64_t age_ms = (v->mono_us - gd->received_us) / 1000;
			ms_value(f,
			         series1(s, sizeof s, "gwsync_group_received_timestamp_seconds",
			                 "group", gw_group_name(gd->group)),
			         v->wall_ms - (age_ms > 0 ? age_ms : 0));
		}
	}

	family(f, "gwsync_group_from_snapshot", "gauge",
	       "1 if the held version was loaded from the local snapshot, not yet confirmed by an "
	       "admin.");
	for (size_t k = 0; k < v->n_groups; k++) {
		const struct group_data *gd = v->data[v->groups[k]];
		if (gd)
			fprintf(f, "%s %d\n",
			        series1(s, sizeof s, "gwsync_group_from_snapshot", "group",
			                gw_group_name(gd->group)),
			        gd->provisional ? 1 : 0);
	}
}

static void subscriber_metrics(FILE *f, const struct status_view *v)
{
	char s[512];
	size_t n = v->have_dispatch ? v->dispatch.n_subscribers : 0;
	const struct dispatch_subscriber_status *subs = v->dispatch.subscribers;

	family(f, "gwsync_subscriber_applies_total", "counter",
	       "Changes a subscriber accepted, all groups.");
	for (size_t i = 0; i < n; i++)
		u64_value(f,
		          series1(s, sizeof s, "gwsync_subscriber_applies_total", "subscriber",
		                  subs[i].name),
		          subs[i].applies);

	family(f, "gwsync_subscriber_apply_failures_total", "counter",
	       "Changes a subscriber rejected, all groups (each is retried later).");
	for (size_t i = 0; i < n; i++)
		u64_value(f,
		          series1(s, sizeof s, "gwsync_subscriber_apply_failures_total",
		                  "subscriber", subs[i].name),
		          subs[i].failures);

	/* per group too: a subscriber that keeps refusing one group (while it takes the others)
	 * is seen at once, and which group it is */
	family(f, "gwsync_subscriber_group_apply_failures_total", "counter",
	       "Changes of one group a subscriber rejected (each is retried later).");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < v->n_groups; k++)
			u64_value(f,
			          series2(s, sizeof s,
			                  "gwsync_subscriber_group_apply_failures_total",
			                  subs[i].name, gw_group_name(v->groups[k])),
			          subs[i].groups[v->groups[k]].failures);
	family(f, "gwsync_subscriber_group_consecutive_failures", "gauge",
	       "Rejected deliveries of one group in a row, now (0: it accepted the last one).");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < v->n_groups; k++)
			fprintf(f, "%s %u\n",
			        series2(s, sizeof s, "gwsync_subscriber_group_consecutive_failures",
			                subs[i].name, gw_group_name(v->groups[k])),
			        subs[i].groups[v->groups[k]].consecutive_failures);

	family(f, "gwsync_subscriber_groups_behind", "gauge",
	       "Groups for which the subscriber does not hold the agent's newest version.");
	for (size_t i = 0; i < n; i++) {
		unsigned behind = 0;
		for (size_t k = 0; k < v->n_groups; k++)
			behind += !status_subscriber_in_step(v, i, v->groups[k]);
		fprintf(f, "%s %u\n",
		        series1(s, sizeof s, "gwsync_subscriber_groups_behind", "subscriber",
		                subs[i].name),
		        behind);
	}

	family(f, "gwsync_subscriber_consecutive_failures", "gauge",
	       "The longest run of rejected deliveries of any group, now (0: in step).");
	for (size_t i = 0; i < n; i++) {
		unsigned worst = 0;
		for (int g = 0; g < GW_GROUP_COUNT; g++)
			if (subs[i].groups[g].consecutive_failures > worst)
				worst = subs[i].groups[g].consecutive_failures;
		fprintf(f, "%s %u\n",
		        series1(s, sizeof s, "gwsync_subscriber_consecutive_failures", "subscriber",
		                subs[i].name),
		        worst);
	}
}

static void dispatch_metrics(FILE *f, const struct status_view *v)
{
	const struct dispatch_status *ds = &v->dispatch;
	int have = v->have_dispatch;
	family(f, "gwsync_dispatcher_up", "gauge", "1 while the dispatcher thread runs.");
	fprintf(f, "gwsync_dispatcher_up %d\n", have && ds->alive);
	family(f, "gwsync_dispatcher_busy_seconds", "gauge",
	       "How long the subscriber call in progress has been running (0: idle).");
	ms_value(f, "gwsync_dispatcher_busy_seconds", have && ds->busy_in[0] ? ds->busy_ms : 0);

	family(f, "gwsync_change_latency_seconds", "histogram",
	       "From the admin's answer to every subscriber having applied the version.");
	for (size_t b = 0; b <= LATENCY_BUCKETS; b++) {
		uint64_t cum = have ? latency_cumulative(&ds->latency, b) : 0;
		if (b < LATENCY_BUCKETS)
			fprintf(f, "gwsync_change_latency_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			        (double)latency_bounds_us[b] / 1e6, cum);
		else
			fprintf(f,
			        "gwsync_change_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n",
			        cum);
	}
	int64_t sum = have && ds->latency.sum_us > 0 ? ds->latency.sum_us : 0;
	fprintf(f, "gwsync_change_latency_seconds_sum %" PRId64 ".%06" PRId64 "\n", sum / 1000000,
	        sum % 1000000);
	fprintf(f, "gwsync_change_latency_seconds_count %" PRIu64 "\n",
	        have ? ds->latency.count : 0);
}

int metrics_render(const struct status_view *v, char **out, size_t *len, struct gw_err *err)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);
	if (!f)
		return gw_errf(err, "metrics: %s", strerror(errno));
	agent_metrics(f, v);
	server_metrics(f, v);
	source_metrics(f, v);
	group_metrics(f, v);
	subscriber_metrics(f, v);
	dispatch_metrics(f, v);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		free(buf);
		return gw_errf(err, "metrics: out of memory");
	}
	*out = buf;
	*len = size;
	return 0;
}
