/*
 * Unit tests of /metrics rendering: the output is valid Prometheus text exposition 0.0.4
 * (checked line by line by a small strict parser below: HELP then TYPE before a family's
 * samples, well-formed names and escaped labels, numeric values, no duplicate series,
 * cumulative histogram buckets ending in +Inf == _count), and every figure comes from the
 * view it was rendered from.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deliver/latency.h"
#include "ops/metrics.h"
#include "subtest.h"
#include "viewtest.h"

/* ---------------------------------------------------------------- a strict parser */

struct expo {
	char families[128][96];
	char types[128][32];
	size_t n_families;
	char **series;
	size_t n_series;
	char err[512];
};

static int is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

static int expo_fail(struct expo *e, int line, const char *what, const char *text)
{
	snprintf(e->err, sizeof e->err, "line %d: %s: %.200s", line, what, text);
	return -1;
}

/* Which family a sample name belongs to (histogram suffixes folded). */
static const char *family_of(struct expo *e, const char *name, const char **type)
{
	if (e->n_families == 0)
		return NULL;
	const char *fam = e->families[e->n_families - 1];
	*type = e->types[e->n_families - 1];
	size_t fl = strlen(fam);
	if (strcmp(name, fam) == 0)
		return fam;
	if (strcmp(*type, "histogram") == 0 && strncmp(name, fam, fl) == 0 &&
	    (!strcmp(name + fl, "_bucket") || !strcmp(name + fl, "_sum") ||
	     !strcmp(name + fl, "_count")))
		return fam;
	return NULL;
}

/* Parse the whole exposition; 0 or -1 with e->err. */
static int expo_parse(struct expo *e, const char *text)
{
	memset(e, 0, sizeof *e);
	char *copy = strdup(text);
	int lineno = 0, rc = 0;
	int help_pending = 0;
	char *save = NULL;
	ck_assert_msg(text[strlen(text) - 1] == '\n', "the text must end with a newline");
	for (char *line = strtok_r(copy, "\n", &save); line && rc == 0;
	     line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (strncmp(line, "# HELP ", 7) == 0) {
			char name[96];
			if (sscanf(line + 7, "%95s", name) != 1 || !is_name_start(name[0]))
				rc = expo_fail(e, lineno, "bad HELP", line);
			else if (strlen(line + 7) <= strlen(name) + 1)
				rc = expo_fail(e, lineno, "HELP without text", line);
			for (size_t i = 0; rc == 0 && i < e->n_families; i++)
				if (strcmp(e->families[i], name) == 0)
					rc = expo_fail(e, lineno, "family repeated", line);
			if (rc == 0) {
				snprintf(e->families[e->n_families], 96, "%s", name);
				e->types[e->n_families][0] = '\0';
				e->n_families++;
				help_pending = 1;
			}
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			char name[96], type[32];
			if (sscanf(line + 7, "%95s %31s", name, type) != 2)
				rc = expo_fail(e, lineno, "bad TYPE", line);
			else if (!help_pending || strcmp(name, e->families[e->n_families - 1]) != 0)
				rc = expo_fail(e, lineno, "TYPE not right after its HELP", line);
			else if (strcmp(type, "counter") && strcmp(type, "gauge") &&
			         strcmp(type, "histogram"))
				rc = expo_fail(e, lineno, "unknown type", line);
			else
				snprintf(e->types[e->n_families - 1], 32, "%s", type);
			help_pending = 0;
			continue;
		}
		if (line[0] == '#') {
			rc = expo_fail(e, lineno, "unexpected comment", line);
			continue;
		}
		/* a sample: name{labels} value */
		const char *p = line;
		if (!is_name_start(*p)) {
			rc = expo_fail(e, lineno, "bad metric name", line);
			continue;
		}
		while (is_name_char(*p))
			p++;
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)(p - line), line);
		const char *type = NULL;
		if (!family_of(e, name, &type)) {
			rc = expo_fail(e, lineno, "sample outside its family (HELP/TYPE first)",
			               line);
			continue;
		}
		if (strcmp(type, "counter") == 0 &&
		    (strlen(name) < 6 || strcmp(name + strlen(name) - 6, "_total") != 0)) {
			rc = expo_fail(e, lineno, "counter without _total", line);
			continue;
		}
		if (*p == '{') {
			p++;
			while (rc == 0 && *p != '}') {
				if (!is_name_start(*p) || *p == ':') {
					rc = expo_fail(e, lineno, "bad label name", line);
					break;
				}
				while (is_name_char(*p) && *p != ':')
					p++;
				if (p[0] != '=' || p[1] != '"') {
					rc = expo_fail(e, lineno, "label without =\"", line);
					break;
				}
				p += 2;
				while (*p && *p != '"') {
					if (*p == '\\') {
						if (p[1] != '\\' && p[1] != '"' && p[1] != 'n') {
							rc = expo_fail(e, lineno, "bad escape",
							               line);
							break;
						}
						p++;
					}
					p++;
				}
				if (rc || *p != '"') {
					rc = rc ? rc
					        : expo_fail(e, lineno, "unterminated label value",
					                    line);
					break;
				}
				p++;
				if (*p == ',')
					p++;
				else if (*p != '}')
					rc = expo_fail(e, lineno, "expected , or }", line);
			}
			if (rc)
				continue;
			p++;
		}
		size_t series_len = (size_t)(p - line);
		if (*p != ' ') {
			rc = expo_fail(e, lineno, "expected one space before the value", line);
			continue;
		}
		p++;
		char *end;
		if (*p == ' ' || *p == '\t') {
			rc = expo_fail(e, lineno, "more than one space before the value", line);
			continue;
		}
		if (strcmp(p, "+Inf") && strcmp(p, "-Inf") && strcmp(p, "NaN")) {
			strtod(p, &end);
			if (end == p || *end) {
				rc = expo_fail(e, lineno, "bad value", line);
				continue;
			}
		}
		for (size_t i = 0; i < e->n_series; i++)
			if (strlen(e->series[i]) == series_len &&
			    strncmp(e->series[i], line, series_len) == 0)
				rc = expo_fail(e, lineno, "duplicate series", line);
		e->series = realloc(e->series, (e->n_series + 1) * sizeof *e->series);
		e->series[e->n_series++] = strndup(line, series_len);
	}
	free(copy);
	for (size_t i = 0; rc == 0 && i < e->n_families; i++)
		if (!e->types[i][0])
			rc = expo_fail(e, 0, "family without TYPE", e->families[i]);
	return rc;
}

static void expo_free(struct expo *e)
{
	for (size_t i = 0; i < e->n_series; i++)
		free(e->series[i]);
	free(e->series);
}

/* ---------------------------------------------------------------- helpers */

static char *render(const struct status_view *v)
{
	char *text = NULL;
	size_t len = 0;
	struct gw_err err = {0};
	ck_assert_msg(metrics_render(v, &text, &len, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(len, strlen(text));
	struct expo e;
	int rc = expo_parse(&e, text);
	expo_free(&e);
	ck_assert_msg(rc == 0, "not valid exposition text: %s\n%s", e.err, text);
	return text;
}

/* The value of the sample whose series (name{labels}) is exactly `series`; NAN if absent. */
static double value_of(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		if (len > n && strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
		p += len + (p[len] == '\n');
	}
	return NAN;
}

static int has_series(const char *text, const char *series)
{
	return !isnan(value_of(text, series));
}

/* ---------------------------------------------------------------- tests */

START_TEST(empty_agent_is_valid_text)
{
	struct status_view v;
	vt_init(&v, 1, 0);
	char *t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_up"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_healthy"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_sync_paused"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_group_held{group=\"RULE\"}"), 0);
	ck_assert(!has_series(t, "gwsync_group_items{group=\"RULE\"}"));
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_count"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"+Inf\"}"), 0);
	ck_assert_ptr_nonnull(strstr(t, "# TYPE gwsync_polls_total counter\n"));
	ck_assert_ptr_nonnull(strstr(t, "# TYPE gwsync_change_latency_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(t, "gwsync_build_info{version=\"9.9.9\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(t, "gwsync_start_time_seconds 1700000000.000\n"));
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(server_counters_and_errors_by_reason)
{
	struct status_view v;
	vt_init(&v, 2, 0);
	struct source_conn_status *a = &v.servers[0].st, *b = &v.servers[1].st;
	a->polls = 7;
	a->fetches = 3;
	a->changes = 5;
	a->bytes_fetched = 123456789012ULL;
	a->failures[SYNC_FAIL_CONNECT] = 4;
	a->failures[SYNC_FAIL_PARSE] = 1;
	a->consecutive_failures = 2;
	a->state = SOURCE_CONN_RETRYING;
	a->last_success_ms = 1700000050250LL;
	b->state = SOURCE_CONN_BACKING_OFF;
	b->failures[SYNC_FAIL_TOO_LARGE] = 9;
	char *t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_polls_total{server=\"http://a:9095\"}"), 7);
	ck_assert_double_eq(value_of(t, "gwsync_polls_total{server=\"http://b:9095\"}"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_fetches_total{server=\"http://a:9095\"}"), 3);
	ck_assert_double_eq(value_of(t, "gwsync_changes_total{server=\"http://a:9095\"}"), 5);
	ck_assert_ptr_nonnull(
	    strstr(t, "gwsync_fetched_bytes_total{server=\"http://a:9095\"} 123456789012\n"));
	ck_assert_double_eq(
	    value_of(t, "gwsync_errors_total{server=\"http://a:9095\",reason=\"connect\"}"), 4);
	ck_assert_double_eq(
	    value_of(t, "gwsync_errors_total{server=\"http://a:9095\",reason=\"parse\"}"), 1);
	ck_assert_double_eq(
	    value_of(t, "gwsync_errors_total{server=\"http://b:9095\",reason=\"too_large\"}"), 9);
	/* every reason is there from the start, zeros included; "ok"/"stopped" never are */
	const char *reasons[] = {"connect", "timeout",   "http", "code",   "parse",
	                         "fetch",   "too_large", "auth", "session"};
	for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
		char s[200];
		snprintf(s, sizeof s, "gwsync_errors_total{server=\"http://b:9095\",reason=\"%s\"}",
		         reasons[i]);
		ck_assert_msg(has_series(t, s), "missing %s", s);
	}
	ck_assert_ptr_null(strstr(t, "reason=\"ok\""));
	ck_assert_ptr_null(strstr(t, "reason=\"stopped\""));
	ck_assert_double_eq(
	    value_of(t, "gwsync_server_state{server=\"http://a:9095\",state=\"retrying\"}"), 1);
	ck_assert_double_eq(
	    value_of(t, "gwsync_server_state{server=\"http://a:9095\",state=\"polling\"}"), 0);
	ck_assert_double_eq(
	    value_of(t, "gwsync_server_state{server=\"http://b:9095\",state=\"backing_off\"}"), 1);
	ck_assert_double_eq(
	    value_of(t, "gwsync_server_consecutive_failures{server=\"http://a:9095\"}"), 2);
	ck_assert_ptr_nonnull(strstr(t, "gwsync_server_last_success_timestamp_seconds{server="
	                                "\"http://a:9095\"} 1700000050.250\n"));
	ck_assert_ptr_nonnull(strstr(t, "gwsync_server_last_success_timestamp_seconds{server="
	                                "\"http://b:9095\"} 0.000\n"));
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(any_source_is_described_with_source_type_and_connection_labels)
{
	struct status_view v;
	vt_init(&v, 2, 0);
	struct source_conn_status *a = &v.servers[0].st;
	a->changes = 5;
	a->repairs = 2;
	a->consecutive_failures = 1;
	a->state = SOURCE_CONN_RETRYING;
	a->last_event_ms = 1700000060500LL;
	a->last_success_ms = 1700000050250LL;
	a->failures[SYNC_FAIL_TIMEOUT] = 3;
	v.servers[1].running = 0; /* not started yet */
	memset(&v.servers[1].st, 0, sizeof v.servers[1].st);
	char *t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_source_info{source=\"admin\",type=\"http\"}"), 1);
#define A "source=\"admin\",type=\"http\",connection=\"http://a:9095\""
#define B "source=\"admin\",type=\"http\",connection=\"http://b:9095\""
	ck_assert_double_eq(value_of(t, "gwsync_source_connection_state{" A ",state=\"retrying\"}"),
	                    1);
	ck_assert_double_eq(value_of(t, "gwsync_source_connection_state{" A ",state=\"polling\"}"),
	                    0);
	ck_assert_double_eq(value_of(t, "gwsync_source_connection_state{" B ",state=\"starting\"}"),
	                    1);
	ck_assert_double_eq(value_of(t, "gwsync_source_changes_total{" A "}"), 5);
	ck_assert_double_eq(value_of(t, "gwsync_source_repairs_total{" A "}"), 2);
	ck_assert_double_eq(value_of(t, "gwsync_source_consecutive_failures{" A "}"), 1);
	ck_assert_ptr_nonnull(
	    strstr(t, "gwsync_source_last_event_timestamp_seconds{" A "} 1700000060.500\n"));
	ck_assert_ptr_nonnull(
	    strstr(t, "gwsync_source_last_success_timestamp_seconds{" A "} 1700000050.250\n"));
	ck_assert_double_eq(value_of(t, "gwsync_source_errors_total{" A ",reason=\"timeout\"}"), 3);
	ck_assert_double_eq(value_of(t, "gwsync_source_errors_total{" B ",reason=\"timeout\"}"), 0);
	/* the first names stay, with the same values */
	ck_assert_double_eq(value_of(t, "gwsync_changes_total{server=\"http://a:9095\"}"), 5);
#undef A
#undef B
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(a_server_not_started_yet_is_starting)
{
	struct status_view v;
	vt_init(&v, 1, 0);
	v.servers[0].running = 0;
	memset(&v.servers[0].st, 0, sizeof v.servers[0].st);
	char *t = render(&v);
	ck_assert_double_eq(
	    value_of(t, "gwsync_server_state{server=\"http://a:9095\",state=\"starting\"}"), 1);
	ck_assert_double_eq(
	    value_of(t, "gwsync_server_state{server=\"http://a:9095\",state=\"polling\"}"), 0);
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(label_values_are_escaped)
{
	char buf[64];
	ck_assert_str_eq(metrics_escape_label("a\"b\\c\nd", buf, sizeof buf), "a\\\"b\\\\c\\nd");
	ck_assert_str_eq(metrics_escape_label("規則", buf, sizeof buf), "規則");
	ck_assert_str_eq(metrics_escape_label(NULL, buf, sizeof buf), "");
	/* truncation never splits an escape */
	ck_assert_str_eq(metrics_escape_label("\"\"\"\"", buf, 6), "\\\"\\\"");

	struct status_view v;
	vt_init(&v, 1, 1);
	v.servers[0].url = "http://x/\"q\"\\y\nz";
	snprintf(v.dispatch.subscribers[0].name, sizeof v.dispatch.subscribers[0].name, "a\"b");
	char *t = render(&v); /* render() checks the text parses */
	ck_assert(has_series(t, "gwsync_polls_total{server=\"http://x/\\\"q\\\"\\\\y\\nz\"}"));
	ck_assert(has_series(t, "gwsync_subscriber_applies_total{subscriber=\"a\\\"b\"}"));
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(groups_items_and_timestamps)
{
	struct status_view v;
	vt_init(&v, 1, 0);
	vt_hold(&v, GW_GROUP_RULE, "r1", 1700000000123LL, 3, 0, 2500);
	vt_hold(&v, GW_GROUP_PLUGIN, "p1", 1600000000000LL, 0, 1, 0);
	char *t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_group_held{group=\"RULE\"}"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_group_held{group=\"SELECTOR\"}"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_group_items{group=\"RULE\"}"), 3);
	ck_assert_double_eq(value_of(t, "gwsync_group_items{group=\"PLUGIN\"}"), 0);
	ck_assert(!has_series(t, "gwsync_group_items{group=\"SELECTOR\"}"));
	ck_assert_ptr_nonnull(strstr(
	    t, "gwsync_group_last_update_timestamp_seconds{group=\"RULE\"} 1700000000.123\n"));
	/* received 2.5 s before the view's time (±1 ms of clock rounding) */
	double recv = value_of(t, "gwsync_group_received_timestamp_seconds{group=\"RULE\"}");
	ck_assert_double_eq_tol(recv, (VT_WALL_MS - 2500) / 1000.0, 0.0015);
	ck_assert_double_eq(value_of(t, "gwsync_group_from_snapshot{group=\"PLUGIN\"}"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_group_from_snapshot{group=\"RULE\"}"), 0);
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(latency_histogram_is_cumulative)
{
	struct status_view v;
	vt_init(&v, 1, 1);
	latency_observe(&v.dispatch.latency, 500);       /* 0.5 ms */
	latency_observe(&v.dispatch.latency, 3000);      /* 3 ms */
	latency_observe(&v.dispatch.latency, 2000000);   /* 2 s */
	latency_observe(&v.dispatch.latency, 100000000); /* 100 s: only +Inf */
	char *t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"0.001\"}"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"0.0025\"}"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"0.005\"}"), 2);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"1\"}"), 2);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"2.5\"}"), 3);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"60\"}"), 3);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_bucket{le=\"+Inf\"}"), 4);
	ck_assert_double_eq(value_of(t, "gwsync_change_latency_seconds_count"), 4);
	ck_assert_ptr_nonnull(strstr(t, "\ngwsync_change_latency_seconds_sum 102.003500\n"));
	/* buckets in ascending order, never decreasing, one per bound plus +Inf */
	double prev_le = -1, prev_n = -1;
	int buckets = 0;
	for (const char *p = strstr(t, "gwsync_change_latency_seconds_bucket{"); p;
	     p = strstr(p + 1, "gwsync_change_latency_seconds_bucket{")) {
		const char *le = strstr(p, "le=\"") + 4;
		double b = strncmp(le, "+Inf", 4) == 0 ? INFINITY : strtod(le, NULL);
		double n = strtod(strchr(p, ' ') + 1, NULL);
		ck_assert(b > prev_le);
		ck_assert(n >= prev_n);
		prev_le = b;
		prev_n = n;
		buckets++;
	}
	ck_assert_int_eq(buckets, LATENCY_BUCKETS + 1);
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(subscribers_paused_and_health)
{
	struct status_view v;
	vt_init(&v, 1, 2);
	vt_hold_all(&v);
	vt_all_delivered(&v, 0);
	vt_all_delivered(&v, 1);
	vt_failed(&v, 1, GW_GROUP_RULE, 3, "disk full");
	/* sub1 then gets a newer RULE it has not got yet */
	vt_hold(&v, GW_GROUP_RULE, "r2", 2000, 1, 0, 0);
	v.paused = 1;
	v.dispatch.busy_in[0] = 's';
	v.dispatch.busy_ms = 1500;
	char *t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_healthy"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_sync_paused"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_applies_total{subscriber=\"sub0\"}"), 5);
	ck_assert_double_eq(
	    value_of(t, "gwsync_subscriber_apply_failures_total{subscriber=\"sub1\"}"), 3);
	ck_assert_double_eq(
	    value_of(t, "gwsync_subscriber_apply_failures_total{subscriber=\"sub0\"}"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_groups_behind{subscriber=\"sub0\"}"), 1);
	ck_assert_double_eq(
	    value_of(t, "gwsync_subscriber_consecutive_failures{subscriber=\"sub1\"}"), 3);
	/* per subscriber and group: which group a subscriber keeps refusing (issue 20, item 5) */
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_group_apply_failures_total{"
	                                "subscriber=\"sub1\",group=\"RULE\"}"),
	                    3);
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_group_apply_failures_total{"
	                                "subscriber=\"sub1\",group=\"PLUGIN\"}"),
	                    0);
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_group_apply_failures_total{"
	                                "subscriber=\"sub0\",group=\"RULE\"}"),
	                    0);
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_group_consecutive_failures{"
	                                "subscriber=\"sub1\",group=\"RULE\"}"),
	                    3);
	ck_assert_double_eq(value_of(t, "gwsync_subscriber_group_consecutive_failures{"
	                                "subscriber=\"sub1\",group=\"SELECTOR\"}"),
	                    0);
	ck_assert_double_eq(value_of(t, "gwsync_dispatcher_up"), 1);
	ck_assert_double_eq(value_of(t, "gwsync_dispatcher_busy_seconds"), 1.5);
	free(t);

	v.dispatch.alive = 0;
	v.paused = 0;
	t = render(&v);
	ck_assert_double_eq(value_of(t, "gwsync_healthy"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_dispatcher_up"), 0);
	ck_assert_double_eq(value_of(t, "gwsync_sync_paused"), 0);
	free(t);
	status_view_free(&v);
}
END_TEST

START_TEST(parser_rejects_bad_text)
{
	/* the checker itself must be able to fail, or the tests above prove nothing */
	struct expo e;
	const char *bad[] = {
	    "gwsync_up 1\n",                                          /* no HELP/TYPE */
	    "# HELP a x\n# TYPE a gauge\na{l=\"unterminated} 1\n",    /* label */
	    "# HELP a x\n# TYPE a gauge\na{l=\"\\t\"} 1\n",           /* bad escape */
	    "# HELP a x\n# TYPE a gauge\na 1\na 2\n",                 /* duplicate */
	    "# HELP a x\n# TYPE a gauge\na one\n",                    /* value */
	    "# HELP a x\n# TYPE a counter\na 1\n",                    /* no _total */
	    "# HELP a x\n# TYPE a gauge\nb 1\n",                      /* wrong family */
	    "# HELP a_total x\n# TYPE a_total counter\na_total  1\n", /* two spaces */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = expo_parse(&e, bad[i]);
		expo_free(&e);
		ck_assert_msg(rc != 0, "accepted: %s", bad[i]);
	}
	ck_assert_int_eq(
	    expo_parse(&e, "# HELP a x y\n# TYPE a gauge\na{b=\"c\\\"\",d=\"\"} -1.5e3\n"), 0);
	expo_free(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, empty_agent_is_valid_text);
	tcase_add_test(tc, server_counters_and_errors_by_reason);
	tcase_add_test(tc, a_server_not_started_yet_is_starting);
	tcase_add_test(tc, any_source_is_described_with_source_type_and_connection_labels);
	tcase_add_test(tc, label_values_are_escaped);
	tcase_add_test(tc, groups_items_and_timestamps);
	tcase_add_test(tc, latency_histogram_is_cumulative);
	tcase_add_test(tc, subscribers_paused_and_health);
	tcase_add_test(tc, parser_rejects_bad_text);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
