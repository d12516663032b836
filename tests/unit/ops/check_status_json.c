/*
 * Unit tests of the /status document and of the judgements made on a status view: health
 * (/healthz), readiness (systemd READY=1) and the one-line summary. Views are built by hand
 * (viewtest.h), so each test states a situation an operator meets and checks what the
 * agent says about it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/status_json.h"
#include "subtest.h"
#include "viewtest.h"

static json_t *doc_of(const struct status_view *v)
{
	json_t *doc = status_json(v);
	ck_assert_ptr_nonnull(doc);
	/* what the endpoint sends must be valid JSON that reads back the same */
	char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	ck_assert_ptr_nonnull(text);
	json_t *back = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(back);
	ck_assert(json_equal(doc, back));
	json_decref(back);
	free(text);
	return doc;
}

static const char *str_at(json_t *doc, const char *fmt_path)
{
	json_t *v = json_object_get(doc, fmt_path);
	ck_assert_msg(json_is_string(v), "%s is not a string", fmt_path);
	return json_string_value(v);
}

START_TEST(agent_fields_and_time_text)
{
	char buf[32];
	status_time_text(1700000000123LL, buf);
	ck_assert_str_eq(buf, "2023-11-14T22:13:20.123Z");

	struct status_view v;
	vt_init(&v, 1, 0);
	json_t *doc = doc_of(&v);
	ck_assert_str_eq(str_at(doc, "version"), "9.9.9");
	ck_assert_str_eq(str_at(doc, "startedAt"), "2023-11-14T22:13:20.000Z");
	ck_assert_double_eq(json_real_value(json_object_get(doc, "uptimeSeconds")), 100.0);
	ck_assert(json_is_false(json_object_get(doc, "paused")));
	ck_assert(json_is_false(json_object_get(doc, "healthy")));
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

START_TEST(servers_failing_and_recovered)
{
	struct status_view v;
	vt_init(&v, 2, 0);
	struct source_conn_status *a = &v.servers[0].st;
	a->state = SOURCE_CONN_BACKING_OFF;
	a->consecutive_failures = 3;
	snprintf(a->last_error, sizeof a->last_error,
	         "server http://a:9095: POST /configs/listener: Connection refused");
	a->last_error_ms = VT_WALL_MS - 2000;
	a->failures[SYNC_FAIL_CONNECT] = 3;
	a->polls = 10;
	a->last_success_ms = VT_WALL_MS - 61000;
	v.servers[1].st.last_success_ms = VT_WALL_MS - 250;
	v.servers[1].st.changes = 4;
	v.servers[1].st.bytes_fetched = 2048;
	json_t *doc = doc_of(&v);
	json_t *servers = json_object_get(doc, "servers");
	ck_assert_uint_eq(json_array_size(servers), 2);
	json_t *s0 = json_array_get(servers, 0), *s1 = json_array_get(servers, 1);
	ck_assert_str_eq(str_at(s0, "url"), "http://a:9095");
	ck_assert_str_eq(str_at(s0, "state"), "backing_off");
	ck_assert_int_eq(json_integer_value(json_object_get(s0, "consecutiveFailures")), 3);
	ck_assert_ptr_nonnull(strstr(str_at(s0, "lastError"), "Connection refused"));
	ck_assert_str_eq(str_at(s0, "lastErrorAt"), "2023-11-14T22:14:58.000Z");
	ck_assert_double_eq(json_real_value(json_object_get(s0, "secondsSinceSuccess")), 61.0);
	json_t *errors = json_object_get(s0, "errors");
	ck_assert_int_eq(json_integer_value(json_object_get(errors, "connect")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(errors, "auth")), 0);
	ck_assert_ptr_null(json_object_get(errors, "ok"));
	ck_assert_ptr_null(json_object_get(errors, "stopped"));
	ck_assert_int_eq(json_integer_value(json_object_get(s0, "polls")), 10);
	/* the healthy one */
	ck_assert_str_eq(str_at(s1, "state"), "polling");
	ck_assert(json_is_null(json_object_get(s1, "lastError")));
	ck_assert(json_is_null(json_object_get(s1, "lastErrorAt")));
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "consecutiveFailures")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "changes")), 4);
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "fetchedBytes")), 2048);
	ck_assert_double_eq(json_real_value(json_object_get(s1, "secondsSinceSuccess")), 0.25);
	json_decref(doc);

	/* before its poller runs (start-up fetch), a server is "starting" */
	v.servers[1].running = 0;
	memset(&v.servers[1].st, 0, sizeof v.servers[1].st); /* as status_view_take leaves it */
	doc = doc_of(&v);
	s1 = json_array_get(json_object_get(doc, "servers"), 1);
	ck_assert_str_eq(str_at(s1, "state"), "starting");
	ck_assert_str_eq(str_at(s1, "url"), "http://b:9095");
	/* regression: the same keys in every state (a client read lastSuccess and failed) */
	ck_assert(json_is_null(json_object_get(s1, "lastSuccess")));
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "polls")), 0);
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

/* Regression: an error text that is not UTF-8 (an admin's GBK error page, a reply excerpt
 * cut inside a character) made json_string() fail and /status answer 500. */
START_TEST(source_object_lists_connections_and_servers_stays)
{
	struct status_view v;
	vt_init(&v, 2, 0);
	v.servers[0].st.last_event_ms = VT_WALL_MS - 1500;
	v.servers[0].st.repairs = 3;
	v.servers[0].st.changes = 7;
	json_t *doc = doc_of(&v);
	json_t *src = json_object_get(doc, "source");
	ck_assert_ptr_nonnull(src);
	ck_assert_str_eq(str_at(src, "name"), "admin");
	ck_assert_str_eq(str_at(src, "type"), "http");
	json_t *conns = json_object_get(src, "connections");
	ck_assert_uint_eq(json_array_size(conns), 2);
	json_t *c0 = json_array_get(conns, 0);
	ck_assert_str_eq(str_at(c0, "url"), "http://a:9095");
	ck_assert_str_eq(str_at(c0, "state"), "polling");
	ck_assert_int_eq(json_integer_value(json_object_get(c0, "repairs")), 3);
	ck_assert_ptr_nonnull(json_object_get(c0, "lastEvent"));
	ck_assert(json_is_string(json_object_get(c0, "lastEvent")));
	ck_assert(json_is_null(json_object_get(json_array_get(conns, 1), "lastEvent")));
	/* "servers" is the same list under its first name */
	json_t *servers = json_object_get(doc, "servers");
	ck_assert(json_equal(servers, conns));
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

START_TEST(error_text_that_is_not_utf8_still_renders)
{
	struct status_view v;
	vt_init(&v, 1, 0);
	struct source_conn_status *a = &v.servers[0].st;
	snprintf(a->last_error, sizeof a->last_error, "HTTP 502: \xb7\xfe\xce\xf1 cut \xe6\x9c");
	json_t *doc = doc_of(&v);
	ck_assert_ptr_nonnull(doc);
	json_t *s0 = json_array_get(json_object_get(doc, "servers"), 0);
	ck_assert_str_eq(str_at(s0, "lastError"), "HTTP 502: ???? cut ??");
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

START_TEST(groups_held_from_admin_and_snapshot)
{
	struct status_view v;
	vt_init(&v, 1, 0);
	vt_hold(&v, GW_GROUP_RULE, "abc123", 1700000000123LL, 3, 0, 1500);
	vt_hold(&v, GW_GROUP_PLUGIN, "p9", 42, 1, 1, 0);
	json_t *doc = doc_of(&v);
	json_t *groups = json_object_get(doc, "groups");
	ck_assert_uint_eq(json_object_size(groups), 5);
	/* configured order, every configured group present, null when nothing is held */
	const char *order[] = {"PLUGIN", "SELECTOR", "RULE", "APP_AUTH", "META_DATA"};
	size_t i = 0;
	const char *key;
	json_t *val;
	json_object_foreach(groups, key, val) ck_assert_str_eq(key, order[i++]);
	ck_assert(json_is_null(json_object_get(groups, "SELECTOR")));
	json_t *rule = json_object_get(groups, "RULE");
	ck_assert_str_eq(str_at(rule, "md5"), "abc123");
	ck_assert_int_eq(json_integer_value(json_object_get(rule, "lastModifyTime")),
	                 1700000000123LL);
	ck_assert_int_eq(json_integer_value(json_object_get(rule, "items")), 3);
	ck_assert_str_eq(str_at(rule, "source"), "http://a:9095");
	ck_assert(json_is_false(json_object_get(rule, "fromSnapshot")));
	double age = json_real_value(json_object_get(rule, "ageSeconds"));
	ck_assert_double_eq_tol(age, 1.5, 0.0015);
	json_t *plugin = json_object_get(groups, "PLUGIN");
	ck_assert_str_eq(str_at(plugin, "source"), "snapshot");
	ck_assert(json_is_true(json_object_get(plugin, "fromSnapshot")));

	ck_assert(json_is_false(json_object_get(doc, "healthy")));
	const char *health = str_at(doc, "health");
	ck_assert_ptr_nonnull(strstr(health, "SELECTOR, APP_AUTH, META_DATA"));
	ck_assert_ptr_null(strstr(health, "RULE"));
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

START_TEST(subscriber_failing_and_behind)
{
	struct status_view v;
	vt_init(&v, 1, 2);
	vt_hold_all(&v);
	vt_all_delivered(&v, 0);
	vt_all_delivered(&v, 1);
	/* a new RULE arrives; sub0 takes it, sub1 rejects it twice */
	vt_hold(&v, GW_GROUP_RULE, "r2", 2000, 1, 0, 0);
	vt_delivered(&v, 0, GW_GROUP_RULE, "r2", 2000, 1, VT_WALL_MS - 3);
	vt_failed(&v, 1, GW_GROUP_RULE, 2, "cannot write /var/lib/gateway/rules: No space left");
	json_t *doc = doc_of(&v);
	json_t *subs = json_object_get(doc, "subscribers");
	ck_assert_uint_eq(json_array_size(subs), 2);
	json_t *s0 = json_array_get(subs, 0), *s1 = json_array_get(subs, 1);
	ck_assert_str_eq(str_at(s0, "name"), "sub0");
	ck_assert_str_eq(str_at(s0, "plugin"), "recorder");
	ck_assert(json_is_true(json_object_get(s0, "inStep")));
	ck_assert(json_is_null(json_object_get(s0, "lastError")));
	json_t *r0 = json_object_get(json_object_get(s0, "groups"), "RULE");
	ck_assert_str_eq(str_at(r0, "md5"), "r2");
	ck_assert_int_eq(json_integer_value(json_object_get(r0, "lastModifyTime")), 2000);
	ck_assert_str_eq(str_at(r0, "deliveredAt"), "2023-11-14T22:14:59.997Z");

	ck_assert(json_is_false(json_object_get(s1, "inStep")));
	ck_assert_int_eq(json_integer_value(json_object_get(s1, "failures")), 2);
	ck_assert_str_eq(str_at(s1, "lastError"),
	                 "RULE: cannot write /var/lib/gateway/rules: No space left");
	json_t *r1 = json_object_get(json_object_get(s1, "groups"), "RULE");
	ck_assert_str_eq(str_at(r1, "md5"), "m-RULE"); /* still what it last accepted */
	ck_assert(json_is_false(json_object_get(r1, "inStep")));
	ck_assert_int_eq(json_integer_value(json_object_get(r1, "consecutiveFailures")), 2);
	ck_assert_ptr_nonnull(strstr(str_at(r1, "lastError"), "No space left"));
	json_t *p1 = json_object_get(json_object_get(s1, "groups"), "PLUGIN");
	ck_assert(json_is_true(json_object_get(p1, "inStep")));
	json_t *disp = json_object_get(doc, "dispatcher");
	ck_assert(json_is_true(json_object_get(disp, "alive")));
	ck_assert(json_is_null(json_object_get(disp, "busyIn")));
	ck_assert_int_eq(json_integer_value(json_object_get(disp, "failures")), 2);
	ck_assert(json_is_true(json_object_get(doc, "healthy")));
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

START_TEST(undelivered_group_is_null_and_paused_shows)
{
	struct status_view v;
	vt_init(&v, 1, 1);
	vt_hold_all(&v);
	v.paused = 1;
	json_t *doc = doc_of(&v);
	ck_assert(json_is_true(json_object_get(doc, "paused")));
	json_t *s0 = json_array_get(json_object_get(doc, "subscribers"), 0);
	json_t *g = json_object_get(json_object_get(s0, "groups"), "APP_AUTH");
	ck_assert(json_is_null(json_object_get(g, "md5")));
	ck_assert(json_is_null(json_object_get(g, "deliveredAt")));
	ck_assert(json_is_false(json_object_get(g, "inStep")));
	json_decref(doc);
	status_view_free(&v);
}
END_TEST

START_TEST(health_rules)
{
	struct status_view v;
	struct gw_err why;
	vt_init(&v, 1, 1);
	ck_assert_int_eq(status_healthy(&v, &why), 0);
	ck_assert_ptr_nonnull(strstr(why.msg, "no data yet for PLUGIN, SELECTOR, RULE"));
	vt_hold_all(&v);
	/* holding data is enough, delivered or not (a failing plugin shows in /status) */
	ck_assert_int_eq(status_healthy(&v, &why), 1);
	ck_assert_str_eq(why.msg, "ok");
	/* snapshot data counts */
	vt_hold(&v, GW_GROUP_RULE, "s", 1, 1, 1, 0);
	ck_assert_int_eq(status_healthy(&v, &why), 1);
	v.dispatch.alive = 0;
	ck_assert_int_eq(status_healthy(&v, &why), 0);
	ck_assert_str_eq(why.msg, "the dispatcher is not running");
	v.dispatch.alive = 1;
	v.have_dispatch = 0;
	ck_assert_int_eq(status_healthy(&v, &why), 0);
	v.have_dispatch = 1;
	status_view_free(&v);
}
END_TEST

START_TEST(readiness_rules)
{
	struct status_view v;
	struct gw_err why;
	vt_init(&v, 1, 2);
	ck_assert_int_eq(status_ready(&v, &why), 0);
	ck_assert_ptr_nonnull(strstr(why.msg, "waiting for data"));
	vt_hold_all(&v);
	/* stored but not delivered: not ready ... */
	ck_assert_int_eq(status_ready(&v, &why), 0);
	ck_assert_ptr_nonnull(strstr(why.msg, "sub0"));
	/* ... unless paused: then stored is enough */
	v.paused = 1;
	ck_assert_int_eq(status_ready(&v, &why), 1);
	v.paused = 0;
	vt_all_delivered(&v, 0);
	ck_assert_int_eq(status_ready(&v, &why), 0);
	ck_assert_ptr_nonnull(strstr(why.msg, "sub1"));
	/* a rejection counts as delivered-to for readiness: the failure shows in /status */
	for (size_t k = 0; k < v.n_groups; k++)
		vt_failed(&v, 1, v.groups[k], 1, "nope");
	ck_assert_int_eq(status_ready(&v, &why), 1);
	ck_assert_str_eq(why.msg, "ready");
	status_view_free(&v);

	/* no subscribers: stored is enough */
	vt_init(&v, 1, 0);
	vt_hold_all(&v);
	ck_assert_int_eq(status_ready(&v, &why), 1);
	status_view_free(&v);
}
END_TEST

START_TEST(summary_lines)
{
	struct status_view v;
	char line[256];
	vt_init(&v, 2, 1);
	v.servers[1].st.consecutive_failures = 2;
	v.servers[1].st.state = SOURCE_CONN_RETRYING;
	status_summary(&v, line, sizeof line);
	ck_assert_str_eq(line, "waiting for data: PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA (1 "
	                       "of 2 admin servers failing)");
	vt_hold_all(&v);
	vt_hold(&v, GW_GROUP_RULE, "s", 1, 1, 1, 0);
	status_summary(&v, line, sizeof line);
	ck_assert_str_eq(line, "5 groups held (1 from the snapshot), 1 of 2 admin servers polling, "
	                       "0 of 1 subscribers in step");
	vt_all_delivered(&v, 0);
	v.paused = 1;
	status_summary(&v, line, sizeof line);
	ck_assert_str_eq(line, "paused: 5 groups held (1 from the snapshot), 1 of 2 admin servers "
	                       "polling, nothing delivered");
	v.paused = 0;
	status_summary(&v, line, sizeof line);
	ck_assert_ptr_nonnull(strstr(line, "1 of 1 subscribers in step"));
	status_view_free(&v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status_json");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, agent_fields_and_time_text);
	tcase_add_test(tc, servers_failing_and_recovered);
	tcase_add_test(tc, source_object_lists_connections_and_servers_stays);
	tcase_add_test(tc, error_text_that_is_not_utf8_still_renders);
	tcase_add_test(tc, groups_held_from_admin_and_snapshot);
	tcase_add_test(tc, subscriber_failing_and_behind);
	tcase_add_test(tc, undelivered_group_is_null_and_paused_shows);
	tcase_add_test(tc, health_rules);
	tcase_add_test(tc, readiness_rules);
	tcase_add_test(tc, summary_lines);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
