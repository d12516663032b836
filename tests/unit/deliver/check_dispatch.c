/*
 * The dispatcher with real plugins (the recording test plugin, loaded with dlopen) and a
 * real store: exact deltas per subscriber, an emptied group delivered, coalescing under a
 * deliberately slow plugin, a failing plugin retried with backoff while another keeps
 * receiving, pause and resume, tick() deadlines, a prompt stop, and --once. The retry
 * schedule runs on a clock the tests move (dispatch_clock), so a backoff is proved to the
 * millisecond without sleeping through it.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "deliver/dispatch.h"
#include "deliver/host.h"
#include "store/store.h"
#include "deliver/subscribers.h"
#include "model/abi.h"
#include "model/diff.h"
#include "model/model.h"
#include "subtest.h"

static char *dir;
static char out_a[4200], out_b[4200], flag[4200];
static struct gw_log *lg;
static struct store *st;
static struct tcfg t;
static struct subscribers *subs;
static struct dispatcher *disp;
static _Atomic int64_t fake_now; /* the retry schedule's clock, in ms */

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(out_a, sizeof out_a, "%s/a.txt", dir);
	snprintf(out_b, sizeof out_b, "%s/b.txt", dir);
	snprintf(flag, sizeof flag, "%s/fail-now", dir);
	lg = test_log(NULL);
	st = store_new();
	tcfg_init(&t);
	subs = NULL;
	disp = NULL;
	atomic_store(&fake_now, 1000000);
}

static void teardown(void)
{
	dispatcher_free(disp);
	subscribers_free(subs);
	tcfg_free(&t);
	store_free(st);
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

/* Add a recorder writing to `out` with extra YAML options. */
static void add_recorder(const char *name, const char *out, const char *extra)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "out: %s\n%s", out, extra);
	tcfg_add(&t, name, "recorder", yaml);
}

static void start(void)
{
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	ck_assert_msg(dispatcher_start(&disp, subs, st, &t.cfg, lg, &err) == 0, "%s", err.msg);
}

static int64_t fake_clock(void *arg)
{
	(void)arg;
	return atomic_load(&fake_now);
}

/* start() with the retry schedule on the tests' clock: retries come only from advance(). */
static void start_on_fake_clock(void)
{
	struct gw_err err;
	struct dispatch_clock clock = {fake_clock, NULL};
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	ck_assert_msg(dispatcher_start_clocked(&disp, subs, st, &t.cfg, lg, &clock, &err) == 0,
	              "%s", err.msg);
}

/* Move the retry schedule's clock on by ms and wake the dispatcher to look at it. */
static void advance(int64_t ms)
{
	atomic_fetch_add(&fake_now, ms);
	store_kick(st);
}

/* Room for a wrong extra delivery to show up: the negative checks wait this long. */
#define SETTLE_MS 200

/* Wait (up to 5 s) until subscriber i's group g has `n` consecutive failures. */
static void wait_consecutive(size_t i, enum gw_group g, unsigned n)
{
	unsigned got = 0;
	for (int k = 0; k < 500; k++) {
		struct dispatch_status s;
		ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
		got = s.subscribers[i].groups[g].consecutive_failures;
		dispatch_status_free(&s);
		if (got == n)
			return;
		sleep_ms(10);
	}
	ck_abort_msg("consecutive failures: %u, want %u", got, n);
}

static void offer(struct group_data *gd)
{
	ck_assert_int_eq(store_swap(st, gd, ingest_accept_polled, NULL), INGEST_ACCEPTED);
	group_data_unref(gd);
}

static void expect_line(const char *path, const char *prefix, int n, const char *want)
{
	char *line = nth_line(path, prefix, n);
	ck_assert_msg(line != NULL, "%s: no line %d starting with '%s'", path, n, prefix);
	ck_assert_str_eq(line, want);
	free(line);
}

START_TEST(delivers_exact_deltas)
{
	add_recorder("a", out_a, "");
	start();
	offer(gd_make(GW_GROUP_RULE, "m1", 10,
	              (const char *[]){"r2", "{\"v\":1}", "r1", "{\"v\":1}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply", 1, 5000), 1);
	offer(gd_make(GW_GROUP_RULE, "m2", 20,
	              (const char *[]){"r3", "{\"v\":1}", "r1", "{\"v\":2}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	expect_line(out_a, "apply", 0,
	            "apply RULE md5=m1 prev=- lmt=10 items=2 added=r1,r2 updated= removed= "
	            "stale=0 ok");
	expect_line(out_a, "apply", 1,
	            "apply RULE md5=m2 prev=m1 lmt=20 items=2 added=r3 updated=r1 removed=r2 "
	            "stale=0 ok");

	/* Status: what was delivered, and one latency observation per version. */
	struct dispatch_status s;
	ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
	ck_assert_int_eq(s.alive, 1);
	ck_assert_int_eq(s.paused, 0);
	ck_assert_uint_eq(s.n_subscribers, 1);
	ck_assert_str_eq(s.subscribers[0].name, "a");
	ck_assert_str_eq(s.subscribers[0].plugin, "recorder");
	const struct dispatch_group_status *g = &s.subscribers[0].groups[GW_GROUP_RULE];
	ck_assert_int_eq(g->delivered, 1);
	ck_assert_str_eq(g->md5, "m2");
	ck_assert_int_eq(g->last_modify_time, 20);
	ck_assert_uint_eq(g->n_items, 2);
	ck_assert_uint_eq(g->applies, 2);
	ck_assert_uint_eq(g->failures, 0);
	ck_assert_int_eq(s.subscribers[0].groups[GW_GROUP_PLUGIN].delivered, 0);
	ck_assert_uint_eq(s.changes, 2);
	ck_assert_uint_eq(s.latency.count, 2);
	ck_assert_uint_eq(latency_cumulative(&s.latency, LATENCY_BUCKETS), 2);
	dispatch_status_free(&s);
}
END_TEST

/* GW_SUB_LISTS_ON_DEMAND: the plugin is handed empty lists and reads the same items, in the
 * same order, through host->change_item() (recorder_od checks the contract itself). */
START_TEST(lists_on_demand_read_through_change_item)
{
	add_recorder("a", out_a, "");
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "out: %s\n", out_b);
	tcfg_add(&t, "b", "recorder_od", yaml);
	start();
	offer(gd_make(GW_GROUP_RULE, "m1", 10,
	              (const char *[]){"r2", "{\"v\":1}", "r1", "{\"v\":1}", NULL}));
	ck_assert_int_eq(wait_lines(out_b, "apply", 1, 5000), 1);
	offer(gd_make(GW_GROUP_RULE, "m2", 20,
	              (const char *[]){"r3", "{\"v\":1}", "r1", "{\"v\":2}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	ck_assert_int_eq(wait_lines(out_b, "apply", 2, 5000), 2);
	for (int i = 0; i < 2; i++) {
		char *want = nth_line(out_a, "apply", i);
		ck_assert_ptr_nonnull(want);
		expect_line(out_b, "apply", i, want);
		free(want);
	}
	expect_line(out_b, "apply", 1,
	            "apply RULE md5=m2 prev=m1 lmt=20 items=2 added=r3 updated=r1 removed=r2 "
	            "stale=0 ok");
	expect_line(out_b, "items", 0, "items keys=r2,r1");
	expect_line(out_b, "items", 1, "items keys=r3,r1");
	ck_assert_ptr_null(nth_line(out_b, "lists-not-empty", 0));
	ck_assert_ptr_null(nth_line(out_b, "change_item-past-the-end", 0));
}
END_TEST

/* What the header promises of host->change_item for a GW_SUB_LISTS_ON_DEMAND plugin, on
 * the host the dispatcher hands it (its items made one at a time from the delta): NULL
 * past a list's count and for a list it does not know; an item valid for
 * GW_CHANGE_ITEMS_KEPT more asked; host->item_typed()'s copy of one (the plugin declared
 * GW_SUB_TYPED_ON_DEMAND too) valid until apply() returns, however many items are asked
 * after it; nothing after apply() has returned. */
#define OD_N 70
START_TEST(change_item_lifetimes_as_the_header_promises)
{
	static char keys[OD_N][8], json[OD_N][80];
	const char *kv[2 * OD_N + 1];
	for (int i = 0; i < OD_N; i++) {
		snprintf(keys[i], sizeof keys[i], "r%02d", i);
		snprintf(json[i], sizeof json[i],
		         "{\"id\":\"r%02d\",\"selectorId\":\"s%02d\",\"name\":\"n%02d\"}", i, i, i);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = json[i];
	}
	kv[2 * OD_N] = NULL;
	struct group_data *to = gd_make(GW_GROUP_RULE, "m1", 10, kv);
	struct diff d;
	diff_count(&d, GW_GROUP_RULE, NULL, to);
	struct abi_change ac;
	struct gw_err e;
	ck_assert_int_eq(abi_change_make(&ac, &d, NULL, to, 0, 0, &e), 0);
	struct host_ctx ctx;
	struct gw_host h;
	memset(&ctx, 0, sizeof ctx);
	ctx.instance = "od";
	ctx.log = lg;
	host_table_init(&h, &ctx);
	ctx.typed = 0; /* GW_SUB_TYPED_ON_DEMAND */
	const struct gw_change *c = host_change_begin(&ctx, &ac.change, 1, &d);
	ck_assert_uint_eq(c->n_added, OD_N);
	ck_assert_ptr_null(h.change_item(&h, c, GW_LIST_ADDED, OD_N));
	ck_assert_ptr_null(h.change_item(&h, c, GW_LIST_ITEMS, OD_N));
	ck_assert_ptr_null(h.change_item(&h, c, GW_LIST_REMOVED, 0));
	ck_assert_ptr_null(h.change_item(&h, c, GW_LIST_UPDATED_OLD, 0));
	ck_assert_ptr_null(h.change_item(&h, c, (enum gw_list)99, 0));
	const struct gw_item *first = h.change_item(&h, c, GW_LIST_ADDED, 0);
	ck_assert_ptr_nonnull(first);
	ck_assert_ptr_null(first->rule);
	const struct gw_item *typed = h.item_typed(&h, first);
	ck_assert(typed && typed->rule);
	for (int i = 1; i <= GW_CHANGE_ITEMS_KEPT; i++) {
		const struct gw_item *it = h.change_item(&h, c, GW_LIST_ADDED, (size_t)i);
		ck_assert_ptr_nonnull(it);
		ck_assert_str_eq(it->key, keys[i]);
	}
	ck_assert_str_eq(first->key, "r00"); /* GW_CHANGE_ITEMS_KEPT more asked: still valid */
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < OD_N; i++)
			ck_assert_ptr_nonnull(h.change_item(&h, c, GW_LIST_ITEMS, i));
	ck_assert_str_eq(typed->key, "r00");
	ck_assert_str_eq(typed->name, "n00");
	ck_assert_str_eq(typed->rule->selector_id, "s00");
	ck_assert_str_eq(typed->rule->name, "n00");
	host_call_done(&ctx);
	ck_assert_ptr_null(h.change_item(&h, c, GW_LIST_ADDED, 0));
	abi_change_free(&ac);
	diff_free(&d);
	group_data_unref(to);
}
END_TEST

/* Also to a plugin reading its lists on demand (recorder_od): the removed items made from
 * the delta of an empty version, none past the counts; then the same empty group again. */
START_TEST(emptied_group_is_delivered)
{
	add_recorder("a", out_a, "");
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "out: %s\n", out_b);
	tcfg_add(&t, "b", "recorder_od", yaml);
	start();
	offer(gd_make(GW_GROUP_SELECTOR, "m1", 10, (const char *[]){"s1", "{}", "s2", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply", 1, 5000), 1);
	offer(gd_make(GW_GROUP_SELECTOR, "d751713988987e9331980363e24189ce", 20, NULL));
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	const char *want = "apply SELECTOR md5=d751713988987e9331980363e24189ce prev=m1 lmt=20 "
	                   "items=0 added= updated= removed=s1,s2 stale=0 ok";
	expect_line(out_a, "apply", 1, want);
	ck_assert_int_eq(wait_lines(out_b, "apply", 2, 5000), 2);
	expect_line(out_b, "apply", 1, want);
	expect_line(out_b, "items", 1, "items keys=");
	offer(gd_make(GW_GROUP_SELECTOR, "e2", 30, NULL));
	ck_assert_int_eq(wait_lines(out_b, "apply", 3, 5000), 3);
	expect_line(out_b, "apply", 2,
	            "apply SELECTOR md5=e2 prev=d751713988987e9331980363e24189ce lmt=30 items=0 "
	            "added= updated= removed= stale=0 ok");
	ck_assert_ptr_null(nth_line(out_b, "lists-not-empty", 0));
	ck_assert_ptr_null(nth_line(out_b, "change_item-past-the-end", 0));
}
END_TEST

START_TEST(coalesces_under_a_slow_plugin)
{
	add_recorder("slow", out_a, "delay: 400ms\n");
	add_recorder("fast", out_b, "");
	start();
	offer(
	    gd_make(GW_GROUP_RULE, "m1", 1,
	            (const char *[]){"a", "{\"v\":1}", "b", "{\"v\":1}", "c", "{\"v\":1}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "begin RULE m1", 1, 5000), 1);
	/* Three versions while "slow" is inside apply(). */
	offer(
	    gd_make(GW_GROUP_RULE, "m2", 2,
	            (const char *[]){"a", "{\"v\":2}", "b", "{\"v\":1}", "c", "{\"v\":1}", NULL}));
	offer(gd_make(GW_GROUP_RULE, "m3", 3,
	              (const char *[]){"a", "{\"v\":2}", "b", "{\"v\":1}", "c", "{\"v\":1}", "d",
	                               "{\"v\":1}", NULL}));
	offer(
	    gd_make(GW_GROUP_RULE, "m4", 4,
	            (const char *[]){"d", "{\"v\":1}", "a", "{\"v\":2}", "c", "{\"v\":1}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	sleep_ms(600); /* room for a wrong extra delivery to show up */
	ck_assert_int_eq(count_lines(out_a, "apply"), 2);
	expect_line(out_a, "apply", 1,
	            "apply RULE md5=m4 prev=m1 lmt=4 items=3 added=d updated=a removed=b stale=0 "
	            "ok");
	/* The fast one got m1 right after slow's turn, then the newest: never m2 or m3. */
	ck_assert_int_eq(wait_lines(out_b, "apply", 2, 5000), 2);
	ck_assert_int_eq(count_lines(out_b, "apply"), 2);
	expect_line(out_b, "apply", 1,
	            "apply RULE md5=m4 prev=m1 lmt=4 items=3 added=d updated=a removed=b stale=0 "
	            "ok");
}
END_TEST

START_TEST(failing_plugin_retried_while_other_receives)
{
	FILE *f = fopen(flag, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	char extra[4300];
	snprintf(extra, sizeof extra, "fail_if_exists: %s\n", flag);
	add_recorder("flaky", out_a, extra);
	add_recorder("steady", out_b, "");
	start_on_fake_clock();

	offer(gd_make(GW_GROUP_PLUGIN, "m1", 1, (const char *[]){"p1", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_b, "apply PLUGIN md5=m1", 1, 5000), 1);
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m1", 1, 5000), 1);
	/* A newer version is tried at once, even during the backoff; the other proceeds. */
	offer(gd_make(GW_GROUP_PLUGIN, "m2", 2, (const char *[]){"p1", "{}", "p2", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_b, "apply PLUGIN md5=m2", 1, 5000), 1);
	expect_line(out_b, "apply PLUGIN md5=m2", 0,
	            "apply PLUGIN md5=m2 prev=m1 lmt=2 items=2 added=p2 updated= removed= "
	            "stale=0 ok");
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m2", 1, 5000), 1);

	/* Two failures in a row: the next retry is 2 s away, not sooner. */
	int tries = count_lines(out_a, "apply");
	ck_assert_int_eq(tries, 2);
	advance(1999);
	sleep_ms(SETTLE_MS);
	ck_assert_int_eq(count_lines(out_a, "apply"), tries);

	struct dispatch_status s;
	ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
	const struct dispatch_subscriber_status *fl = &s.subscribers[0];
	ck_assert_str_eq(fl->name, "flaky");
	ck_assert_uint_ge(fl->groups[GW_GROUP_PLUGIN].failures, 2);
	ck_assert_uint_ge(fl->groups[GW_GROUP_PLUGIN].consecutive_failures, 2);
	ck_assert_int_eq(fl->groups[GW_GROUP_PLUGIN].delivered, 0);
	ck_assert_ptr_nonnull(strstr(fl->groups[GW_GROUP_PLUGIN].last_error, "told to fail"));
	ck_assert_ptr_nonnull(strstr(fl->last_error, "PLUGIN: told to fail"));
	ck_assert_uint_eq(s.subscribers[1].groups[GW_GROUP_PLUGIN].applies, 2);
	ck_assert_uint_eq(s.subscribers[1].failures, 0);
	ck_assert_uint_eq(s.latency.count, 0); /* not every subscriber holds it yet */
	dispatch_status_free(&s);

	/* Fixed: brought back in step with the full delta from what it last accepted, at the
	 * retry 2 s after the second rejection. */
	unlink(flag);
	advance(1);
	const char *fixed = "apply PLUGIN md5=m2 prev=- lmt=2 items=2 added=p1,p2 updated= "
	                    "removed= stale=0 ok";
	ck_assert_msg(wait_has_line(out_a, fixed, 5000), "retried after the fix");
	char *last = nth_line(out_a, "apply", count_lines(out_a, "apply") - 1);
	ck_assert_str_eq(last, fixed);
	free(last);
	ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
	ck_assert_uint_eq(s.subscribers[0].groups[GW_GROUP_PLUGIN].consecutive_failures, 0);
	ck_assert_str_eq(s.subscribers[0].groups[GW_GROUP_PLUGIN].md5, "m2");
	ck_assert_uint_eq(s.latency.count, 1);
	dispatch_status_free(&s);
}
END_TEST

START_TEST(a_refusing_subscriber_warns_once_per_round)
{
	/* issue 20, item 5: a subscriber that keeps refusing a group is a warning each retry
	 * round naming subscriber, group and reason, but newer versions tried at once and
	 * refused at once within the round are not one warning each */
	char logpath[4300];
	snprintf(logpath, sizeof logpath, "%s/agent.log", dir);
	gw_log_close(lg);
	lg = test_log(logpath);
	FILE *f = fopen(flag, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	char extra[4300];
	snprintf(extra, sizeof extra, "fail_if_exists: %s\n", flag);
	add_recorder("flaky", out_a, extra);
	start_on_fake_clock();
	const char *warn = "warn  dispatch: subscriber 'flaky' rejected PLUGIN version";
	offer(gd_make(GW_GROUP_PLUGIN, "m1", 1, (const char *[]){"p1", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m1", 1, 5000), 1);
	/* two newer versions at once: each tried at once, refused at once */
	offer(gd_make(GW_GROUP_PLUGIN, "m2", 2, (const char *[]){"p1", "{}", "p2", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m2", 1, 5000), 1);
	offer(gd_make(GW_GROUP_PLUGIN, "m3", 3, (const char *[]){"p3", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m3", 1, 5000), 1);
	sleep_ms(100);
	char *text = slurp(logpath, NULL);
	ck_assert_ptr_nonnull(text);
	int warnings = 0;
	for (const char *p = strstr(text, warn); p; p = strstr(p + 1, warn))
		warnings++;
	ck_assert_msg(warnings == 1, "%d warnings for 3 fast rejections:\n%s", warnings, text);
	ck_assert_ptr_nonnull(strstr(text, "rejected PLUGIN version m1 (+1 ~0 -0): told to fail"));
	free(text);
	/* the round's retry (4 s after the third rejection) warns again, saying how many it
	 * did not */
	advance(4000);
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m3", 2, 5000), 2);
	sleep_ms(100);
	text = slurp(logpath, NULL);
	ck_assert_ptr_nonnull(strstr(text, "failure 4 in a row (2 more since the last warning)"));
	free(text);
	struct dispatch_status s;
	ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
	ck_assert_uint_eq(s.subscribers[0].groups[GW_GROUP_PLUGIN].failures, 4);
	dispatch_status_free(&s);
	/* fixed: accepted again, said at info */
	unlink(flag);
	offer(gd_make(GW_GROUP_PLUGIN, "m4", 4, (const char *[]){"p4", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply PLUGIN md5=m4", 1, 5000), 1);
	sleep_ms(100);
	text = slurp(logpath, NULL);
	ck_assert_ptr_nonnull(strstr(text, "subscriber 'flaky' accepted PLUGIN again (version m4), "
	                                   "after 4 rejection(s) in a row"));
	free(text);
	ck_assert_int_eq(dispatch_warn_due(1, 0), 1);
	ck_assert_int_eq(dispatch_warn_due(2, 999), 0);
	ck_assert_int_eq(dispatch_warn_due(2, 1000), 1);
	ck_assert_int_eq(dispatch_warn_due(30, 59999), 0);
	ck_assert_int_eq(dispatch_warn_due(30, 60000), 1);
}
END_TEST

START_TEST(pause_delivers_nothing_resume_delivers_newest)
{
	add_recorder("a", out_a, "");
	start();
	dispatcher_set_paused(disp, 1);
	offer(gd_make(GW_GROUP_META_DATA, "m1", 1, (const char *[]){"x", "{}", NULL}));
	offer(gd_make(GW_GROUP_META_DATA, "m2", 2, (const char *[]){"x", "{}", "y", "{}", NULL}));
	sleep_ms(300);
	ck_assert_int_eq(count_lines(out_a, "apply"), 0);
	struct dispatch_status s;
	ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
	ck_assert_int_eq(s.paused, 1);
	dispatch_status_free(&s);

	dispatcher_set_paused(disp, 0);
	ck_assert_int_eq(wait_lines(out_a, "apply", 1, 5000), 1);
	sleep_ms(200);
	ck_assert_int_eq(count_lines(out_a, "apply"), 1);
	expect_line(out_a, "apply", 0,
	            "apply META_DATA md5=m2 prev=- lmt=2 items=2 added=x,y updated= removed= "
	            "stale=0 ok");
}
END_TEST

START_TEST(only_configured_groups_and_snapshot_flag)
{
	add_recorder("a", out_a, "");
	struct group_data *snap =
	    gd_make(GW_GROUP_APP_AUTH, "s1", 1, (const char *[]){"k", "{}", NULL});
	snap->provisional = 1;
	store_put(st, snap);
	group_data_unref(snap);
	offer(gd_make(GW_GROUP_PROXY_SELECTOR, "x1", 1, NULL)); /* not in cfg.groups */
	start();
	ck_assert_int_eq(wait_lines(out_a, "apply", 1, 5000), 1);
	sleep_ms(200);
	ck_assert_int_eq(count_lines(out_a, "apply"), 1);
	expect_line(out_a, "apply", 0,
	            "apply APP_AUTH md5=s1 prev=- lmt=1 items=1 added=k updated= removed= "
	            "stale=1 ok");
	struct dispatch_status s;
	ck_assert_int_eq(dispatcher_status(disp, &s, NULL), 0);
	ck_assert_uint_eq(s.latency.count, 0); /* no admin answer to measure from */
	dispatch_status_free(&s);
}
END_TEST

START_TEST(tick_deadlines_are_honoured)
{
	add_recorder("ticking", out_a, "tick_every: 100ms\n");
	add_recorder("quiet", out_b, "");
	start();
	/* No change at all: ticks come from the deadlines alone. */
	sleep_ms(650);
	int ticks = count_lines(out_a, "tick");
	ck_assert_int_ge(ticks, 4);
	ck_assert_int_le(ticks, 9);
	ck_assert_int_eq(count_lines(out_b, "tick"), 0);
	/* And once after every apply. */
	offer(gd_make(GW_GROUP_RULE, "m1", 1, NULL));
	ck_assert_int_eq(wait_lines(out_a, "apply", 1, 5000), 1);
	sleep_ms(50);
	char *text = slurp(out_a, NULL);
	char *after = strstr(text, "apply RULE");
	ck_assert_ptr_nonnull(after);
	ck_assert_ptr_nonnull(strstr(after, "\ntick"));
	free(text);
}
END_TEST

START_TEST(stop_waits_for_the_running_apply_and_starts_no_other)
{
	add_recorder("slow", out_a, "delay: 500ms\n");
	start();
	offer(gd_make(GW_GROUP_RULE, "r1", 1, NULL));
	offer(gd_make(GW_GROUP_PLUGIN, "p1", 1, NULL));
	offer(gd_make(GW_GROUP_SELECTOR, "s1", 1, NULL));
	ck_assert_int_eq(wait_lines(out_a, "begin", 1, 5000), 1);
	int64_t t0 = gw_mono_ms();
	dispatcher_free(disp);
	disp = NULL;
	int64_t took = gw_mono_ms() - t0;
	ck_assert_int_lt(took, 1500);
	ck_assert_int_eq(count_lines(out_a, "begin"), 1);
	ck_assert_int_eq(count_lines(out_a, "apply"), 1);
}
END_TEST

START_TEST(stop_says_which_plugin_it_waits_for)
{
	char logpath[4300];
	snprintf(logpath, sizeof logpath, "%s/agent.log", dir);
	gw_log_close(lg);
	lg = test_log(logpath);
	add_recorder("sluggish", out_a, "delay: 1500ms\n");
	start();
	offer(gd_make(GW_GROUP_RULE, "r1", 1, NULL));
	ck_assert_int_eq(wait_lines(out_a, "begin", 1, 5000), 1);
	dispatcher_free(disp);
	disp = NULL;
	ck_assert_int_eq(count_lines(out_a, "apply"), 1);
	char *text = slurp(logpath, NULL);
	ck_assert_msg(strstr(text, "stopping: waiting 1 s for subscriber 'sluggish' to return"),
	              "%s", text);
	free(text);
}
END_TEST

START_TEST(once_delivers_everything_and_counts_failures)
{
	FILE *f = fopen(flag, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	char extra[4300];
	snprintf(extra, sizeof extra, "fail_if_exists: %s\n", flag);
	add_recorder("good", out_a, "");
	add_recorder("bad", out_b, extra);
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	offer(gd_make(GW_GROUP_RULE, "r1", 1, (const char *[]){"x", "{}", NULL}));
	offer(gd_make(GW_GROUP_PLUGIN, "p1", 1, NULL));
	offer(gd_make(GW_GROUP_DISCOVER_UPSTREAM, "d1", 1, NULL)); /* not configured */
	ck_assert_int_eq(dispatch_once(subs, st, &t.cfg, lg), 2);
	ck_assert_int_eq(count_lines(out_a, "apply"), 2);
	ck_assert(has_line(out_a, "apply RULE md5=r1 prev=- lmt=1 items=1 added=x updated= "
	                          "removed= stale=0 ok"));
	ck_assert(has_line(out_a, "apply PLUGIN md5=p1 prev=- lmt=1 items=0 added= updated= "
	                          "removed= stale=0 ok"));
	ck_assert_int_eq(count_lines(out_b, "apply"), 2);
	unlink(flag);
	ck_assert_int_eq(dispatch_once(subs, st, &t.cfg, lg), 0);
}
END_TEST

/* The contract: at start-up (everything pending at once) groups go PLUGIN, SELECTOR, RULE,
 * then the others in configuration order (tcfg configures APP_AUTH, PLUGIN, RULE, ...). */
START_TEST(dependency_order_at_start)
{
	add_recorder("a", out_a, "");
	offer(gd_make(GW_GROUP_APP_AUTH, "ma", 1, (const char *[]){"k", "{}", NULL}));
	offer(gd_make(GW_GROUP_RULE, "mr", 1, (const char *[]){"r", "{}", NULL}));
	offer(gd_make(GW_GROUP_META_DATA, "mm", 1, (const char *[]){"m", "{}", NULL}));
	offer(gd_make(GW_GROUP_SELECTOR, "ms", 1, (const char *[]){"s", "{}", NULL}));
	offer(gd_make(GW_GROUP_PLUGIN, "mp", 1, (const char *[]){"p", "{}", NULL}));
	start();
	ck_assert_int_eq(wait_lines(out_a, "begin", 5, 5000), 5);
	expect_line(out_a, "begin", 0, "begin PLUGIN mp");
	expect_line(out_a, "begin", 1, "begin SELECTOR ms");
	expect_line(out_a, "begin", 2, "begin RULE mr");
	expect_line(out_a, "begin", 3, "begin APP_AUTH ma");
	expect_line(out_a, "begin", 4, "begin META_DATA mm");
	enum gw_group order[GW_GROUP_COUNT];
	ck_assert_uint_eq(dispatch_order(&t.cfg, order), 5);
	ck_assert_int_eq(order[0], GW_GROUP_PLUGIN);
	ck_assert_int_eq(order[3], GW_GROUP_APP_AUTH);
}
END_TEST

/* The contract: the wait doubles with consecutive rejections and is capped; the count (and
 * so the wait) starts again from 1 s once the group's change is accepted. */
START_TEST(backoff_doubles_and_resets_on_acceptance)
{
	ck_assert_int_eq(dispatch_backoff_ms(1), 1000);
	ck_assert_int_eq(dispatch_backoff_ms(2), 2000);
	ck_assert_int_eq(dispatch_backoff_ms(3), 4000);
	ck_assert_int_eq(dispatch_backoff_ms(20), DISPATCH_BACKOFF_MAX_MS);

	add_recorder("a", out_a, "");
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "fail_if_exists: %s\n", flag);
	add_recorder("b", out_b, yaml);
	FILE *f = fopen(flag, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	start_on_fake_clock();
	offer(gd_make(GW_GROUP_RULE, "m1", 1, (const char *[]){"r", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_b, "apply", 1, 5000), 1); /* the first try */
	wait_consecutive(1, GW_GROUP_RULE, 1);
	advance(999);
	sleep_ms(SETTLE_MS);
	ck_assert_int_eq(count_lines(out_b, "apply"), 1); /* not before 1 s */
	advance(1);
	ck_assert_int_eq(wait_lines(out_b, "apply", 2, 5000), 2); /* the retry at 1 s */
	wait_consecutive(1, GW_GROUP_RULE, 2);
	unlink(flag);
	advance(1999);
	sleep_ms(SETTLE_MS);
	ck_assert_int_eq(count_lines(out_b, "apply"), 2); /* the next wait is 2 s */
	advance(1);
	ck_assert_int_eq(wait_lines(out_b, "apply", 3, 5000), 3);
	wait_consecutive(1, GW_GROUP_RULE, 0); /* accepted: the count starts again */
}
END_TEST

/* The contract: the snapshot's data confirmed by an admin arrives as a confirmed_only
 * change (same md5, empty delta, stale 1 -> 0). */
START_TEST(snapshot_then_same_admin_data_is_confirmed_only)
{
	add_recorder("a", out_a, "");
	start();
	struct group_data *snap =
	    gd_make(GW_GROUP_RULE, "same", 5, (const char *[]){"r", "{}", NULL});
	snap->provisional = 1;
	offer(snap);
	ck_assert_int_eq(wait_lines(out_a, "apply", 1, 5000), 1);
	offer(gd_make(GW_GROUP_RULE, "same", 5, (const char *[]){"r", "{}", NULL}));
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	expect_line(
	    out_a, "apply", 0,
	    "apply RULE md5=same prev=- lmt=5 items=1 added=r updated= removed= stale=1 ok");
	expect_line(out_a, "apply", 1,
	            "apply RULE md5=same prev=same lmt=5 items=1 added= updated= removed= "
	            "stale=0 confirmed ok");
}
END_TEST

/* A plugin built against the ABI-1 header receives the same changes through the adapter. */
START_TEST(abi1_plugin_receives_changes)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "out: %s\ntick_every: 10ms\nfail_if_exists: %s\n", out_b, flag);
	tcfg_add(&t, "old", "recorder1", yaml);
	add_recorder("a", out_a, "");
	start_on_fake_clock();
	offer(gd_make(GW_GROUP_RULE, "m1", 10,
	              (const char *[]){"r2", "{\"v\":1}", "r1", "{\"v\":1}", NULL}));
	ck_assert_int_eq(wait_lines(out_b, "apply", 1, 5000), 1);
	FILE *f = fopen(flag, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	offer(gd_make(GW_GROUP_RULE, "m2", 20,
	              (const char *[]){"r3", "{\"v\":1}", "r1", "{\"v\":2}", NULL}));
	ck_assert_int_eq(wait_lines(out_b, "apply", 2, 5000), 2);
	unlink(flag);
	advance(1000); /* the retry, 1 s after the rejection */
	ck_assert_int_eq(wait_lines(out_b, "apply", 3, 5000), 3);
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	expect_line(out_b, "apply", 0,
	            "apply RULE md5=m1 prev=- lmt=10 items=2 added=r1,r2 updated= removed= "
	            "stale=0 ok");
	expect_line(out_b, "apply", 1,
	            "apply RULE md5=m2 prev=m1 lmt=20 items=2 added=r3 updated=r1 removed=r2 "
	            "stale=0 fail");
	/* the retry: again from what it last accepted */
	expect_line(out_b, "apply", 2,
	            "apply RULE md5=m2 prev=m1 lmt=20 items=2 added=r3 updated=r1 removed=r2 "
	            "stale=0 ok");
	ck_assert_int_ge(count_lines(out_b, "tick"), 1);
	ck_assert_str_eq(subs->v[0].desc->name, "recorder1");
	ck_assert_int_eq(subs->v[0].abi, 1);
	dispatcher_free(disp);
	disp = NULL;
	subscribers_free(subs);
	subs = NULL;
	ck_assert_int_eq(count_lines(out_b, "fini"), 1);
}
END_TEST

/* A RULE version parsed from the admin's text (its items checked, no typed views made). */
static struct group_data *parsed_rules(const char *md5, int lmt, const char *items,
                                       const struct group_data *prev)
{
	char doc[2048];
	snprintf(doc, sizeof doc, "{\"RULE\":{\"md5\":\"%s\",\"lastModifyTime\":%d,\"data\":[%s]}}",
	         md5, lmt, items);
	const enum gw_group want = GW_GROUP_RULE;
	struct group_data *prevs[GW_GROUP_COUNT] = {0}, *out[GW_GROUP_COUNT] = {0};
	prevs[GW_GROUP_RULE] = (struct group_data *)prev;
	int syntax;
	struct gw_err err;
	ck_assert_msg(
	    model_parse_groups(doc, strlen(doc), &want, 1, "t", prevs, out, &syntax, &err) == 0,
	    "%s", err.msg);
	return out[GW_GROUP_RULE];
}

/* Typed views reach the subscribers that read them (ABI 2 without flags, ABI 1, ABI 2
 * reading its items one at a time), made on delivery; one that declared
 * GW_SUB_TYPED_ON_DEMAND gets them only through host->item_typed(), and when no
 * subscriber reads them none are kept at all. */
START_TEST(typed_views_reach_who_reads_them)
{
	char yaml[8400], out_c[4200];
	snprintf(out_c, sizeof out_c, "%s/c.txt", dir);
	snprintf(yaml, sizeof yaml, "out: %s\n", out_a);
	tcfg_add(&t, "od", "typedsub_od", yaml); /* first: before anyone made a view */
	snprintf(yaml, sizeof yaml, "out: %s\n", out_b);
	tcfg_add(&t, "eager", "typedsub", yaml);
	snprintf(yaml, sizeof yaml, "out: %s\n", out_c);
	tcfg_add(&t, "old", "typedsub1", yaml);
	char out_d[4200];
	snprintf(out_d, sizeof out_d, "%s/d.txt", dir);
	snprintf(yaml, sizeof yaml, "out: %s\n", out_d);
	tcfg_add(&t, "lists", "typedsub_lists", yaml); /* items one at a time, with views */
	start();
	ck_assert_int_eq(subs->v[0].typed, 0);
	ck_assert_int_eq(subs->v[1].typed, 1);
	ck_assert_int_eq(subs->v[2].typed, 1);
	ck_assert_int_eq(subs->v[3].typed, 1);
	ck_assert_int_eq(subs->v[3].lists, 0);
	const char *r1 =
	    "{\"id\":\"r1\",\"selectorId\":\"s1\"},{\"id\":\"r2\",\"selectorId\":\"s2\"}";
	struct group_data *v1 = parsed_rules("m1", 1, r1, NULL);
	ck_assert_ptr_null(v1->abi_items); /* parsed: no item of the ABI made */
	offer(v1);
	ck_assert_int_eq(wait_lines(out_c, "apply", 1, 5000), 1);
	expect_line(out_a, "apply", 0, "apply RULE added=2 typed=0 asked=2 first=s1");
	expect_line(out_b, "apply", 0, "apply RULE added=2 typed=2 asked=0 first=s1");
	expect_line(out_c, "apply", 0, "apply RULE added=2 typed=2 asked=0 first=s1");
	ck_assert_int_eq(wait_lines(out_d, "apply", 1, 5000), 1);
	expect_line(out_d, "apply", 0, "apply RULE added=2 typed=2 asked=0 first=s1");
	dispatcher_free(disp);
	disp = NULL;
	subscribers_free(subs);
	subs = NULL;

	/* on demand only: the version keeps no typed view */
	tcfg_free(&t);
	tcfg_init(&t);
	snprintf(yaml, sizeof yaml, "out: %s\n", out_a);
	tcfg_add(&t, "od", "typedsub_od", yaml);
	store_free(st);
	st = store_new();
	start();
	struct group_data *v2 = parsed_rules("m2", 2, r1, NULL);
	ck_assert_int_eq(store_swap(st, v2, ingest_accept_polled, NULL), INGEST_ACCEPTED);
	ck_assert_int_eq(wait_lines(out_a, "apply", 2, 5000), 2);
	expect_line(out_a, "apply", 1, "apply RULE added=2 typed=0 asked=2 first=s1");
	dispatcher_free(disp); /* joined: what it made is ours to read */
	disp = NULL;
	ck_assert_ptr_nonnull(v2->abi_items);
	ck_assert_ptr_null(v2->abi_items[0]->rule);
	ck_assert_ptr_null(v2->abi_items[1]->rule);
	group_data_unref(v2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = tcase_create("dispatch");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, dependency_order_at_start);
	tcase_add_test(tc, backoff_doubles_and_resets_on_acceptance);
	tcase_add_test(tc, snapshot_then_same_admin_data_is_confirmed_only);
	tcase_add_test(tc, typed_views_reach_who_reads_them);
	tcase_add_test(tc, abi1_plugin_receives_changes);
	tcase_add_test(tc, delivers_exact_deltas);
	tcase_add_test(tc, lists_on_demand_read_through_change_item);
	tcase_add_test(tc, change_item_lifetimes_as_the_header_promises);
	tcase_add_test(tc, emptied_group_is_delivered);
	tcase_add_test(tc, coalesces_under_a_slow_plugin);
	tcase_add_test(tc, failing_plugin_retried_while_other_receives);
	tcase_add_test(tc, a_refusing_subscriber_warns_once_per_round);
	tcase_add_test(tc, pause_delivers_nothing_resume_delivers_newest);
	tcase_add_test(tc, only_configured_groups_and_snapshot_flag);
	tcase_add_test(tc, tick_deadlines_are_honoured);
	tcase_add_test(tc, stop_waits_for_the_running_apply_and_starts_no_other);
	tcase_add_test(tc, stop_says_which_plugin_it_waits_for);
	tcase_add_test(tc, once_delivers_everything_and_counts_failures);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
