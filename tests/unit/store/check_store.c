/*
 * Unit tests of the store's accept rule (md5 differs AND lastModifyTime newer; a
 * provisional snapshot version yields to any admin version) and of its wake-ups.
 */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "store/history.h"
#include "ops/history_json.h"
#include "store/ingest.h"
#include "store/store.h"

static struct group_data *version(enum gw_group g, const char *md5, int64_t lmt)
{
	struct group_data *gd = group_data_new(g);
	strcpy(gd->md5, md5);
	gd->last_modify_time = lmt;
	group_data_index(gd, NULL);
	return gd;
}

/* The long-polling policy on the offered version's md5 and lastModifyTime. */
static enum ingest_verdict judge(const struct group_data *held, const char *md5, int64_t lmt)
{
	struct group_data *offered = version(GW_GROUP_RULE, md5, lmt);
	enum ingest_verdict v = ingest_accept_polled(held, offered);
	group_data_unref(offered);
	return v;
}

START_TEST(judge_rule)
{
	struct group_data *cur = version(GW_GROUP_RULE, "aaa", 100);
	ck_assert_int_eq(judge(NULL, "aaa", 1), INGEST_ACCEPTED);
	ck_assert_int_eq(judge(cur, "aaa", 200), INGEST_SAME);  /* same md5, even if newer */
	ck_assert_int_eq(judge(cur, "bbb", 99), INGEST_OLDER);  /* lagging admin */
	ck_assert_int_eq(judge(cur, "bbb", 100), INGEST_OLDER); /* equal time: not newer */
	ck_assert_int_eq(judge(cur, "bbb", 101), INGEST_ACCEPTED);
	cur->provisional = 1;
	ck_assert_int_eq(judge(cur, "bbb", 1), INGEST_ACCEPTED); /* snapshot yields */
	ck_assert_int_eq(judge(cur, "aaa", 1), INGEST_ACCEPTED); /* the admin confirms */
	group_data_unref(cur);
}
END_TEST

START_TEST(offer_keeps_newest_and_bumps_generation)
{
	struct store *st = store_new();
	struct group_data *v1 = version(GW_GROUP_PLUGIN, "m1", 10);
	struct group_data *v0 = version(GW_GROUP_PLUGIN, "m0", 5);
	uint64_t g0 = store_generation(st);
	ck_assert_int_eq(store_swap(st, v1, ingest_accept_polled, NULL), INGEST_ACCEPTED);
	ck_assert_uint_gt(store_generation(st), g0);
	uint64_t g1 = store_generation(st);
	ck_assert_int_eq(store_swap(st, v0, ingest_accept_polled, NULL), INGEST_OLDER);
	ck_assert_int_eq(store_swap(st, v1, ingest_accept_polled, NULL), INGEST_SAME);
	ck_assert_uint_eq(store_generation(st), g1);
	struct group_data *got = store_get(st, GW_GROUP_PLUGIN);
	ck_assert_ptr_eq(got, v1);
	char md5[65];
	int64_t lmt;
	store_stamp(st, GW_GROUP_PLUGIN, md5, &lmt);
	ck_assert_str_eq(md5, "m1");
	ck_assert_int_eq(lmt, 10);
	store_stamp(st, GW_GROUP_RULE, md5, &lmt);
	ck_assert_str_eq(md5, "");
	ck_assert_int_eq(lmt, 0);
	ck_assert_ptr_null(store_get(st, GW_GROUP_RULE));
	group_data_unref(got);
	group_data_unref(v1);
	group_data_unref(v0);
	store_free(st);
}
END_TEST

struct waiter {
	struct store *st;
	uint64_t seen, got;
};

/* An event source's kind of policy: every offered version is taken. */
static enum ingest_verdict take_all(const struct group_data *held, const struct group_data *offered)
{
	(void)held;
	(void)offered;
	return INGEST_ACCEPTED;
}

START_TEST(ingest_applies_the_sources_policy_and_tells_stamps)
{
	struct store *st = store_new();
	struct gw_err err;
	struct gw_log *log;
	ck_assert_int_eq(gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err), 0);
	struct ingest *in = ingest_new(st, log);
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct group_data *v[GW_GROUP_COUNT] = {NULL};
	int older = 0;

	/* the long-polling policy refuses an older version... */
	v[GW_GROUP_RULE] = version(GW_GROUP_RULE, "b", 20);
	ck_assert_uint_eq(ingest_offer(in, "s", ingest_accept_polled, rule, 1, v, &older), 1);
	ck_assert_ptr_null(v[GW_GROUP_RULE]); /* consumed */
	v[GW_GROUP_RULE] = version(GW_GROUP_RULE, "a", 10);
	ck_assert_uint_eq(ingest_offer(in, "s", ingest_accept_polled, rule, 1, v, &older), 0);
	ck_assert_int_eq(older, 1);
	/* ...another policy, handed in by another source, takes it */
	v[GW_GROUP_RULE] = version(GW_GROUP_RULE, "a", 10);
	ck_assert_uint_eq(ingest_offer(in, "s", take_all, rule, 1, v, &older), 1);

	struct ingest_stamp held[GW_GROUP_COUNT];
	ingest_stamps(in, held);
	ck_assert_str_eq(held[GW_GROUP_RULE].md5, "a");
	ck_assert_int_eq(held[GW_GROUP_RULE].last_modify_time, 10);
	ck_assert_int_eq(held[GW_GROUP_RULE].provisional, 0);
	ck_assert_str_eq(held[GW_GROUP_PLUGIN].md5, "");
	struct group_data *snap = version(GW_GROUP_PLUGIN, "p", 1);
	snap->provisional = 1;
	store_put(st, snap);
	group_data_unref(snap);
	ingest_stamps(in, held);
	ck_assert_int_eq(held[GW_GROUP_PLUGIN].provisional, 1);
	struct group_data *h = ingest_held(in, GW_GROUP_RULE);
	ck_assert_str_eq(h->md5, "a");
	group_data_unref(h);

	ingest_free(in);
	gw_log_close(log);
	store_free(st);
}
END_TEST

/* The policy runs inside store_swap: when it returns the version is the store's, and the
 * dispatcher may apply it (and stamp that) before ingest_offer records it in the history. */
static int64_t policy_ran_at;
static enum ingest_verdict take_after_a_while(const struct group_data *held,
                                              const struct group_data *offered)
{
	(void)held;
	(void)offered;
	policy_ran_at = gw_wall_ms();
	struct timespec pause = {0, 30 * 1000 * 1000};
	nanosleep(&pause, NULL);
	return INGEST_ACCEPTED;
}

START_TEST(a_version_is_stamped_accepted_before_the_store_takes_it)
{
	/* a regression: the stamp was read after the swap, so a subscriber's apply could be
	 * recorded a millisecond before the acceptance of what it applied */
	static const char *const subs[] = {"rec"};
	struct history *h = history_new(10, subs, 1, NULL);
	ck_assert_ptr_nonnull(h);
	struct store *st = store_new();
	struct gw_err err;
	struct gw_log *log;
	ck_assert_int_eq(gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err), 0);
	struct ingest *in = ingest_new(st, log);
	ingest_set_history(in, h);
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct group_data *v[GW_GROUP_COUNT] = {NULL};
	int older = 0;
	v[GW_GROUP_RULE] = version(GW_GROUP_RULE, "m1", 10);
	ck_assert_uint_eq(ingest_offer(in, "s", take_after_a_while, rule, 1, v, &older), 1);

	json_t *doc = history_json(h, rule, 1, ~0u, 0, 0);
	ck_assert_ptr_nonnull(doc);
	json_t *e = json_array_get(json_object_get(json_object_get(doc, "groups"), "RULE"), 0);
	ck_assert_ptr_nonnull(e);
	json_int_t accepted = json_integer_value(json_object_get(e, "acceptedAt"));
	ck_assert_msg(accepted > 0 && accepted <= policy_ran_at,
	              "acceptedAt %lld, the store took it at %lld", (long long)accepted,
	              (long long)policy_ran_at);
	json_decref(doc);
	ingest_free(in);
	gw_log_close(log);
	store_free(st);
	history_free(h);
}
END_TEST

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	w->got = store_wait(w->st, w->seen, 5000);
	return NULL;
}

START_TEST(wait_wakes_on_accept)
{
	struct store *st = store_new();
	struct waiter w = {st, store_generation(st), 0};
	pthread_t t;
	pthread_create(&t, NULL, wait_thread, &w);
	struct group_data *v = version(GW_GROUP_RULE, "x", 1);
	ck_assert_int_eq(store_swap(st, v, ingest_accept_polled, NULL), INGEST_ACCEPTED);
	pthread_join(t, NULL);
	ck_assert_uint_ne(w.got, w.seen);
	ck_assert_uint_eq(store_wait(st, w.got, 10), w.got); /* timeout returns unchanged */
	group_data_unref(v);
	store_free(st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("accept");
	tcase_add_test(tc, judge_rule);
	tcase_add_test(tc, offer_keeps_newest_and_bumps_generation);
	tcase_add_test(tc, wait_wakes_on_accept);
	tcase_add_test(tc, ingest_applies_the_sources_policy_and_tells_stamps);
	tcase_add_test(tc, a_version_is_stamped_accepted_before_the_store_takes_it);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
