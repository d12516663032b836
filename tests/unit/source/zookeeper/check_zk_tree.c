/*
 * Unit tests of the ZooKeeper source's pure parts: the table of watched znodes and its
 * children diff (source/zookeeper/tree.h), path joining, and the event queue between the
 * client library's completion thread and the source thread (source/zookeeper/events.h).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "source/zookeeper/events.h"
#include "source/zookeeper/tree.h"

/* Set n's children from a NULL-terminated list; returns the old list's names joined by
 * ',' (the caller frees), so a test reads what a child event replaced. */
static char *set_kids(struct zk_node *n, const char *const *names)
{
	size_t count = 0;
	while (names[count])
		count++;
	char **old = NULL;
	size_t n_old = 0;
	ck_assert_int_eq(zk_node_set_kids(n, (char *const *)names, count, &old, &n_old), 0);
	char *joined = calloc(1, 1024);
	for (size_t i = 0; i < n_old; i++) {
		strcat(joined, i ? "," : "");
		strcat(joined, old[i]);
	}
	zk_names_free(old, n_old);
	return joined;
}

START_TEST(join_puts_one_slash_between_parent_and_name)
{
	char *p = zk_path_join("/ns/shenyu/plugin", "divide");
	ck_assert_str_eq(p, "/ns/shenyu/plugin/divide");
	free(p);
	p = zk_path_join("/", "shenyu");
	ck_assert_str_eq(p, "/shenyu");
	free(p);
}
END_TEST

START_TEST(children_are_kept_sorted_and_the_old_list_is_handed_back)
{
	struct zk_tree t;
	zk_tree_init(&t);
	struct zk_node *n = zk_tree_put(&t, "/r/selector/divide");
	ck_assert_ptr_nonnull(n);
	const char *first[] = {"s3", "s1", "s2", NULL};
	char *old = set_kids(n, first);
	ck_assert_str_eq(old, "");
	free(old);
	ck_assert_uint_eq(n->n_kids, 3);
	ck_assert_str_eq(n->kids[0], "s1");
	ck_assert_str_eq(n->kids[2], "s3");
	/* a child event: s1 deleted, s4 created */
	const char *second[] = {"s4", "s2", "s3", NULL};
	old = set_kids(n, second);
	ck_assert_str_eq(old, "s1,s2,s3");
	free(old);
	ck_assert(!zk_names_contains(n->kids, n->n_kids, "s1"));
	ck_assert(zk_names_contains(n->kids, n->n_kids, "s4"));
	ck_assert(!zk_names_contains(NULL, 0, "s4"));
	zk_tree_free(&t);
}
END_TEST

START_TEST(removing_a_node_removes_its_known_subtree_and_nothing_else)
{
	struct zk_tree t;
	zk_tree_init(&t);
	const char *plugin_kids[] = {"a", "b", NULL};
	const char *a_kids[] = {"x", NULL};
	free(set_kids(zk_tree_put(&t, "/r/selector/divide"), plugin_kids));
	free(set_kids(zk_tree_put(&t, "/r/selector/divide/a"), a_kids));
	zk_tree_put(&t, "/r/selector/divide/a/x");
	zk_tree_put(&t, "/r/selector/divide/b");
	zk_tree_put(&t, "/r/selector/divide2"); /* shares the prefix: not below */
	zk_tree_put(&t, "/r/selector/divide2/a");
	ck_assert_uint_eq(zk_tree_count(&t), 6);
	ck_assert_uint_eq(zk_tree_remove(&t, "/r/selector/divide"), 4);
	ck_assert_uint_eq(zk_tree_count(&t), 2);
	ck_assert_ptr_null(zk_tree_get(&t, "/r/selector/divide/a/x"));
	ck_assert_ptr_nonnull(zk_tree_get(&t, "/r/selector/divide2"));
	ck_assert_ptr_nonnull(zk_tree_get(&t, "/r/selector/divide2/a"));
	/* a node no longer known: nothing to remove */
	ck_assert_uint_eq(zk_tree_remove(&t, "/r/selector/divide"), 0);
	zk_tree_free(&t);
}
END_TEST

START_TEST(removing_a_node_removes_nodes_below_it_that_no_children_list_names)
{
	/* Issue 12's lost selector: S's delete event re-read S (created again) after its
	 * plugin directory P had been found gone, so S was in the table and P's list did not
	 * name it. P's own delete event then removed P's subtree from the mirror by path; had
	 * the table kept S, the walk of P created again would have skipped S as known. */
	struct zk_tree t;
	zk_tree_init(&t);
	const char *old_kids[] = {"s2", NULL};
	free(set_kids(zk_tree_put(&t, "/r/selector/divide"), old_kids));
	zk_tree_put(&t, "/r/selector/divide/s2");
	zk_tree_put(&t, "/r/selector/divide/s1");   /* named by no list */
	zk_tree_put(&t, "/r/selector/divide/s1/x"); /* below it */
	zk_tree_put(&t, "/r/selector/divide2/s1");  /* shares the prefix: not below */
	ck_assert_uint_eq(zk_tree_remove(&t, "/r/selector/divide"), 4);
	ck_assert_ptr_null(zk_tree_get(&t, "/r/selector/divide/s1"));
	ck_assert_ptr_null(zk_tree_get(&t, "/r/selector/divide/s1/x"));
	ck_assert_ptr_nonnull(zk_tree_get(&t, "/r/selector/divide2/s1"));
	/* the parent itself need not be in the table */
	zk_tree_put(&t, "/r/rule/divide/a-1");
	ck_assert_uint_eq(zk_tree_remove(&t, "/r/rule/divide"), 1);
	ck_assert_ptr_null(zk_tree_get(&t, "/r/rule/divide/a-1"));
	ck_assert_uint_eq(zk_tree_count(&t), 1);
	zk_tree_free(&t);
}
END_TEST

START_TEST(a_node_deleted_and_created_again_is_new_to_the_table)
{
	/* the rule the source walks by: a listed child not in the table is new, even when
	 * the previous list named it too */
	struct zk_tree t;
	zk_tree_init(&t);
	const char *kids[] = {"p", NULL};
	struct zk_node *dir = zk_tree_put(&t, "/r/plugin");
	free(set_kids(dir, kids));
	zk_tree_put(&t, "/r/plugin/p");
	zk_tree_remove(&t, "/r/plugin/p"); /* its delete event */
	char *old = set_kids(dir, kids);   /* the child event lists it again */
	ck_assert_str_eq(old, "p");
	free(old);
	ck_assert_ptr_null(zk_tree_get(&t, "/r/plugin/p"));
	zk_tree_free(&t);
}
END_TEST

START_TEST(thousands_of_nodes_stay_findable_as_the_table_grows)
{
	struct zk_tree t;
	zk_tree_init(&t);
	char path[64];
	struct zk_node *first = NULL;
	for (int i = 0; i < 5000; i++) {
		snprintf(path, sizeof path, "/r/metaData/app/m%d", i);
		struct zk_node *n = zk_tree_put(&t, path);
		ck_assert_ptr_nonnull(n);
		if (i == 0)
			first = n;
		ck_assert_ptr_eq(zk_tree_put(&t, path), n); /* found, not added twice */
	}
	ck_assert_uint_eq(zk_tree_count(&t), 5000);
	/* growing never moved a node (the source keeps pointers across walks) */
	ck_assert_ptr_eq(zk_tree_get(&t, "/r/metaData/app/m0"), first);
	for (int i = 0; i < 5000; i += 7) {
		snprintf(path, sizeof path, "/r/metaData/app/m%d", i);
		ck_assert_ptr_nonnull(zk_tree_get(&t, path));
	}
	ck_assert_ptr_null(zk_tree_get(&t, "/r/metaData/app/m5000"));
	zk_tree_free(&t);
}
END_TEST

/* ---------------------------------------------------------------- the event queue */

START_TEST(events_come_out_in_the_order_they_were_queued)
{
	struct zk_events q;
	ck_assert_int_eq(zk_events_init(&q), 0);
	zk_events_push(&q, 4, 3, "/r/plugin");
	zk_events_push(&q, 2, 3, "/r/plugin/divide");
	zk_events_push(&q, -1, 1, NULL);
	int lost = 1;
	struct zk_event *e = zk_events_take(&q, &lost);
	ck_assert_int_eq(lost, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(e->type, 4);
	ck_assert_str_eq(e->path, "/r/plugin");
	ck_assert_str_eq(e->next->path, "/r/plugin/divide");
	ck_assert_int_eq(e->next->next->type, -1);
	ck_assert_int_eq(e->next->next->state, 1);
	ck_assert_str_eq(e->next->next->path, "");
	ck_assert_ptr_null(e->next->next->next);
	zk_events_free_list(e);
	ck_assert_ptr_null(zk_events_take(&q, NULL));
	zk_events_destroy(&q);
}
END_TEST

START_TEST(wait_returns_at_the_deadline_without_events)
{
	struct zk_events q;
	ck_assert_int_eq(zk_events_init(&q), 0);
	int64_t t0 = gw_mono_ms();
	zk_events_wait(&q, t0 + 50);
	int64_t waited = gw_mono_ms() - t0;
	ck_assert_int_ge(waited, 50);
	ck_assert_int_lt(waited, 2000);
	/* an event already queued: no wait at all, even without a deadline */
	zk_events_push(&q, 3, 3, "/r/auth/k");
	zk_events_wait(&q, -1);
	zk_events_clear(&q);
	ck_assert_ptr_null(zk_events_take(&q, NULL));
	zk_events_destroy(&q);
}
END_TEST

static void *push_later(void *arg)
{
	struct timespec ts = {0, 30 * 1000000};
	nanosleep(&ts, NULL);
	zk_events_push(arg, 3, 3, "/r/rule/divide/s-r");
	return NULL;
}

static void *stop_later(void *arg)
{
	struct timespec ts = {0, 30 * 1000000};
	nanosleep(&ts, NULL);
	zk_events_stop(arg);
	return NULL;
}

START_TEST(an_event_from_another_thread_wakes_the_waiter)
{
	struct zk_events q;
	ck_assert_int_eq(zk_events_init(&q), 0);
	pthread_t t;
	pthread_create(&t, NULL, push_later, &q);
	zk_events_wait(&q, -1); /* no deadline: only the push can end it */
	pthread_join(t, NULL);
	struct zk_event *e = zk_events_take(&q, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->path, "/r/rule/divide/s-r");
	zk_events_free_list(e);
	zk_events_destroy(&q);
}
END_TEST

START_TEST(stop_wakes_the_waiter_and_every_later_wait_returns_at_once)
{
	struct zk_events q;
	ck_assert_int_eq(zk_events_init(&q), 0);
	pthread_t t;
	pthread_create(&t, NULL, stop_later, &q);
	zk_events_wait(&q, -1);
	pthread_join(t, NULL);
	ck_assert(zk_events_stopping(&q));
	int64_t t0 = gw_mono_ms();
	zk_events_wait(&q, t0 + 5000);
	ck_assert_int_lt(gw_mono_ms() - t0, 1000);
	zk_events_destroy(&q);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zookeeper");
	TCase *tree = tcase_create("tree");
	tcase_add_test(tree, join_puts_one_slash_between_parent_and_name);
	tcase_add_test(tree, children_are_kept_sorted_and_the_old_list_is_handed_back);
	tcase_add_test(tree, removing_a_node_removes_its_known_subtree_and_nothing_else);
	tcase_add_test(tree, removing_a_node_removes_nodes_below_it_that_no_children_list_names);
	tcase_add_test(tree, a_node_deleted_and_created_again_is_new_to_the_table);
	tcase_add_test(tree, thousands_of_nodes_stay_findable_as_the_table_grows);
	suite_add_tcase(s, tree);
	TCase *events = tcase_create("events");
	tcase_add_test(events, events_come_out_in_the_order_they_were_queued);
	tcase_add_test(events, wait_returns_at_the_deadline_without_events);
	tcase_add_test(events, an_event_from_another_thread_wakes_the_waiter);
	tcase_add_test(events, stop_wakes_the_waiter_and_every_later_wait_returns_at_once);
	suite_add_tcase(s, events);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
