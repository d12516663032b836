/*
 * The change a subscriber receives: added / updated (same key, different raw JSON) /
 * removed, with unchanged items reported in no list, whatever the admin's item order, and
 * an emptied group delivered as "everything removed".
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/abi.h"
#include "model/diff.h"
#include "subtest.h"

/* The delta as a subscriber receives it: the ABI's change made from it (model/abi.h),
 * every list made. */
struct tdiff {
	struct diff raw;
	struct abi_change ac;
	struct gw_change change;
};

static int tbuild(struct tdiff *t, enum gw_group g, struct group_data *from, struct group_data *to,
                  struct gw_err *err)
{
	memset(t, 0, sizeof *t);
	if (diff_build(&t->raw, g, from, to, err) != 0 ||
	    abi_change_make(&t->ac, &t->raw, from, to, 1, 0, err) != 0)
		return -1;
	t->change = t->ac.change;
	return 0;
}

static void tfree(struct tdiff *t)
{
	abi_change_free(&t->ac);
	diff_free(&t->raw);
}

static int has_key(const struct gw_item *const *v, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i]->key, key) == 0)
			return 1;
	return 0;
}

START_TEST(add_update_remove_unchanged)
{
	/* Admin order deliberately differs from key order and between versions. */
	struct group_data *a = gd_make(GW_GROUP_RULE, "m1", 100,
	                               (const char *[]){"k3", "{\"id\":\"k3\",\"v\":1}", //
	                                                "k1", "{\"id\":\"k1\",\"v\":1}", //
	                                                "k2", "{\"id\":\"k2\",\"v\":1}", //
	                                                "k5", "{\"id\":\"k5\",\"v\":1}", NULL});
	struct group_data *b = gd_make(GW_GROUP_RULE, "m2", 200,
	                               (const char *[]){"k4", "{\"id\":\"k4\",\"v\":1}", //
	                                                "k2", "{\"id\":\"k2\",\"v\":2}", //
	                                                "k1", "{\"id\":\"k1\",\"v\":1}", //
	                                                "k5", "{\"id\":\"k5\", \"v\":1}", NULL});
	struct tdiff d;
	struct gw_err err;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_RULE, a, b, &err), 0);
	const struct gw_change *c = &d.change;
	ck_assert_int_eq(c->group, GW_GROUP_RULE);
	ck_assert_str_eq(c->group_name, "RULE");
	ck_assert_str_eq(c->version.md5, "m2");
	ck_assert_int_eq(c->version.last_modify_time, 200);
	ck_assert_str_eq(c->previous.md5, "m1");
	ck_assert_int_eq(c->previous.last_modify_time, 100);
	ck_assert_ptr_eq(c->items[0]->json, b->items[0].json); /* the admin's order */
	ck_assert_uint_eq(c->n_items, 4);
	ck_assert_str_eq(c->items[0]->key, "k4");
	ck_assert_str_eq(c->items[3]->key, "k5");
	ck_assert_uint_eq(c->size, sizeof(struct gw_change));
	ck_assert_uint_eq(c->items[0]->size, sizeof(struct gw_item));
	ck_assert_int_eq(c->confirmed_only, 0);

	ck_assert_uint_eq(c->n_added, 1);
	ck_assert_str_eq(c->added[0]->key, "k4");
	ck_assert_uint_eq(c->n_removed, 1);
	ck_assert_str_eq(c->removed[0]->key, "k3");
	ck_assert_ptr_eq(c->removed[0]->json, a->items[0].json); /* the old item, readable */
	/* k2 changed value; k5 changed only in whitespace: raw JSON differs, so updated. */
	ck_assert_uint_eq(c->n_updated, 2);
	ck_assert_str_eq(c->updated[0].old_item->key, "k2");
	ck_assert_str_eq(c->updated[0].old_item->json, "{\"id\":\"k2\",\"v\":1}");
	ck_assert_str_eq(c->updated[0].new_item->json, "{\"id\":\"k2\",\"v\":2}");
	ck_assert_str_eq(c->updated[1].new_item->key, "k5");
	/* k1 is byte-identical: in items, in no delta list. */
	ck_assert(!has_key(c->added, c->n_added, "k1"));
	ck_assert(!has_key(c->removed, c->n_removed, "k1"));
	ck_assert_int_eq(c->stale, 0);
	tfree(&d);
	group_data_unref(a);
	group_data_unref(b);
}
END_TEST

START_TEST(from_nothing_everything_added)
{
	struct group_data *b =
	    gd_make(GW_GROUP_PLUGIN, "m1", 5, (const char *[]){"b", "{}", "a", "{}", NULL});
	b->provisional = 1;
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_PLUGIN, NULL, b, NULL), 0);
	ck_assert_ptr_null(d.change.previous.md5);
	/* The contract: a first change's previous.last_modify_time is GW_INT_UNSET. */
	ck_assert(d.change.previous.last_modify_time == GW_INT_UNSET);
	ck_assert_uint_eq(d.change.n_added, 2);
	ck_assert_str_eq(d.change.added[0]->key, "a"); /* key order */
	ck_assert_str_eq(d.change.added[1]->key, "b");
	ck_assert_uint_eq(d.change.n_updated + d.change.n_removed, 0);
	ck_assert_int_eq(d.change.stale, 1); /* from the snapshot */
	tfree(&d);
	group_data_unref(b);
}
END_TEST

START_TEST(emptied_group_removes_everything)
{
	struct group_data *a = gd_make(GW_GROUP_SELECTOR, "m1", 5,
	                               (const char *[]){"x", "{}", "y", "{}", "z", "{}", NULL});
	struct group_data *b =
	    gd_make(GW_GROUP_SELECTOR, "d751713988987e9331980363e24189ce", 6, NULL);
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_SELECTOR, a, b, NULL), 0);
	ck_assert_uint_eq(d.change.n_items, 0);
	ck_assert_uint_eq(d.change.n_removed, 3);
	ck_assert_uint_eq(d.change.n_added + d.change.n_updated, 0);
	ck_assert_str_eq(d.change.version.md5, "d751713988987e9331980363e24189ce");
	tfree(&d);

	/* Empty to empty: a change with nothing in it, still a valid change. */
	ck_assert_int_eq(tbuild(&d, GW_GROUP_SELECTOR, b, b, NULL), 0);
	ck_assert_uint_eq(d.change.n_added + d.change.n_updated + d.change.n_removed, 0);
	tfree(&d);
	tfree(&d); /* harmless twice */
	group_data_unref(a);
	group_data_unref(b);
}
END_TEST

START_TEST(same_version_reports_nothing)
{
	struct group_data *a = gd_make(GW_GROUP_META_DATA, "m1", 5,
	                               (const char *[]){"p", "{\"a\":1}", "q", "{\"b\":2}", NULL});
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_META_DATA, a, a, NULL), 0);
	ck_assert_uint_eq(d.change.n_items, 2);
	ck_assert_uint_eq(d.change.n_added + d.change.n_updated + d.change.n_removed, 0);
	tfree(&d);
	group_data_unref(a);
}
END_TEST

/* The contract: no list is NULL, even when its count is 0 (an empty group from nothing). */
START_TEST(empty_lists_are_not_null)
{
	struct group_data *e = gd_make(GW_GROUP_RULE, "m0", 1, NULL);
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_RULE, NULL, e, NULL), 0);
	ck_assert_uint_eq(
	    d.change.n_items + d.change.n_added + d.change.n_updated + d.change.n_removed, 0);
	ck_assert_ptr_nonnull(d.change.items);
	ck_assert_ptr_nonnull(d.change.added);
	ck_assert_ptr_nonnull(d.change.updated);
	ck_assert_ptr_nonnull(d.change.removed);
	tfree(&d);
	ck_assert_int_eq(tbuild(&d, GW_GROUP_RULE, e, NULL, NULL), 0);
	ck_assert_ptr_nonnull(d.change.items);
	ck_assert_ptr_nonnull(d.change.version.md5 ? d.change.version.md5 : "");
	tfree(&d);
	group_data_unref(e);
}
END_TEST

/* The contract: each delta list is in key order (strcmp), whatever the admin's order. */
START_TEST(delta_lists_in_key_order)
{
	struct group_data *a =
	    gd_make(GW_GROUP_RULE, "m1", 1,
	            (const char *[]){"r9", "{}", "r1", "{}", "u9", "{}", "u1", "{}", NULL});
	struct group_data *b = gd_make(GW_GROUP_RULE, "m2", 2,
	                               (const char *[]){"a9", "{}", "a1", "{}", "a5", "{}", "u9",
	                                                "{\"x\":1}", "u1", "{\"x\":1}", NULL});
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_RULE, a, b, NULL), 0);
	const struct gw_change *c = &d.change;
	ck_assert_uint_eq(c->n_added, 3);
	ck_assert_str_eq(c->added[0]->key, "a1");
	ck_assert_str_eq(c->added[1]->key, "a5");
	ck_assert_str_eq(c->added[2]->key, "a9");
	ck_assert_uint_eq(c->n_removed, 2);
	ck_assert_str_eq(c->removed[0]->key, "r1");
	ck_assert_str_eq(c->removed[1]->key, "r9");
	ck_assert_uint_eq(c->n_updated, 2);
	ck_assert_str_eq(c->updated[0].new_item->key, "u1");
	ck_assert_str_eq(c->updated[1].new_item->key, "u9");
	tfree(&d);
	group_data_unref(a);
	group_data_unref(b);
}
END_TEST

/* The contract: the snapshot's version confirmed by an admin serving identical data is
 * delivered with md5 == previous.md5, an empty delta, stale 1 -> 0 and confirmed_only. */
START_TEST(snapshot_confirmed_only)
{
	struct group_data *snap =
	    gd_make(GW_GROUP_SELECTOR, "same", 9, (const char *[]){"s1", "{}", NULL});
	snap->provisional = 1;
	struct group_data *admin =
	    gd_make(GW_GROUP_SELECTOR, "same", 9, (const char *[]){"s1", "{}", NULL});
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_SELECTOR, NULL, snap, NULL), 0);
	ck_assert_int_eq(d.change.stale, 1);
	ck_assert_int_eq(d.change.confirmed_only, 0);
	tfree(&d);
	ck_assert_int_eq(tbuild(&d, GW_GROUP_SELECTOR, snap, admin, NULL), 0);
	ck_assert_str_eq(d.change.version.md5, d.change.previous.md5);
	ck_assert_uint_eq(d.change.n_added + d.change.n_updated + d.change.n_removed, 0);
	ck_assert_int_eq(d.change.stale, 0);
	ck_assert_int_eq(d.change.confirmed_only, 1);
	tfree(&d);
	group_data_unref(snap);
	group_data_unref(admin);
}
END_TEST

/* Large, shuffled versions checked against a brute-force answer. */
START_TEST(large_matches_brute_force)
{
	enum { N = 5000 };
	static const char *kv1[2 * N + 1], *kv2[2 * N + 1];
	static char keys[N][16], j1[N][32], j2[N][32];
	size_t n1 = 0, n2 = 0;
	unsigned seed = 12345;
	int expect_add = 0, expect_rem = 0, expect_upd = 0;
	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof keys[i], "key%05d", (i * 7919) % N);
		seed = seed * 1103515245u + 12345u;
		int r = (int)((seed >> 16) % 4); /* 0 only old, 1 only new, 2 same, 3 changed */
		snprintf(j1[i], sizeof j1[i], "{\"i\":%d}", i);
		snprintf(j2[i], sizeof j2[i], r == 3 ? "{\"i\":%d,\"x\":1}" : "{\"i\":%d}", i);
		if (r != 1) {
			kv1[2 * n1] = keys[i];
			kv1[2 * n1++ + 1] = j1[i];
		}
		if (r != 0) {
			kv2[2 * n2] = keys[i];
			kv2[2 * n2++ + 1] = j2[i];
		}
		expect_rem += r == 0;
		expect_add += r == 1;
		expect_upd += r == 3;
	}
	kv1[2 * n1] = kv2[2 * n2] = NULL;
	struct group_data *a = gd_make(GW_GROUP_RULE, "a", 1, kv1);
	struct group_data *b = gd_make(GW_GROUP_RULE, "b", 2, kv2);
	struct tdiff d;
	ck_assert_int_eq(tbuild(&d, GW_GROUP_RULE, a, b, NULL), 0);
	ck_assert_int_eq((int)d.change.n_added, expect_add);
	ck_assert_int_eq((int)d.change.n_removed, expect_rem);
	ck_assert_int_eq((int)d.change.n_updated, expect_upd);
	for (size_t i = 0; i < d.change.n_added; i++)
		ck_assert_ptr_null(group_data_find(a, d.change.added[i]->key));
	for (size_t i = 0; i < d.change.n_removed; i++)
		ck_assert_ptr_null(group_data_find(b, d.change.removed[i]->key));
	for (size_t i = 0; i < d.change.n_updated; i++)
		ck_assert_str_ne(d.change.updated[i].old_item->json,
		                 d.change.updated[i].new_item->json);
	tfree(&d);
	group_data_unref(a);
	group_data_unref(b);
}
END_TEST

/* diff_count: the counts diff_build gives, empty lists (never NULL) until diff_lists, then
 * the very lists diff_build makes. */
START_TEST(counted_lists_are_made_when_asked)
{
	struct group_data *a = gd_make(GW_GROUP_RULE, "m1", 1,
	                               (const char *[]){"k3", "{\"v\":1}", "k1", "{\"v\":1}", //
	                                                "k2", "{\"v\":1}", NULL});
	struct group_data *b = gd_make(GW_GROUP_RULE, "m2", 2,
	                               (const char *[]){"k4", "{\"v\":1}", "k2", "{\"v\":2}", //
	                                                "k1", "{\"v\":1}", NULL});
	struct diff w, c;
	ck_assert_int_eq(diff_build(&w, GW_GROUP_RULE, a, b, NULL), 0);
	diff_count(&c, GW_GROUP_RULE, a, b);
	ck_assert_uint_eq(c.n_added, 1);
	ck_assert_uint_eq(c.n_updated, 1);
	ck_assert_uint_eq(c.n_removed, 1);
	ck_assert_ptr_nonnull(c.added);
	ck_assert_ptr_nonnull(c.updated);
	ck_assert_ptr_nonnull(c.removed);
	ck_assert_ptr_null(c.own_added); /* nothing allocated for them */
	ck_assert_int_eq(diff_lists(&c), 0);
	ck_assert_ptr_eq(c.added[0], w.added[0]);
	ck_assert_ptr_eq(c.added[0], &b->items[0]); /* k4: b's own item */
	ck_assert_ptr_eq(c.updated[0].old_item, w.updated[0].old_item);
	ck_assert_ptr_eq(c.updated[0].new_item, w.updated[0].new_item);
	ck_assert_ptr_eq(c.removed[0], w.removed[0]);
	ck_assert_ptr_eq(c.removed[0], &a->items[0]); /* k3: a's own item */
	ck_assert_int_eq(diff_lists(&c), 0);          /* made once */
	ck_assert_ptr_eq(c.added[0], w.added[0]);
	diff_free(&c);
	diff_free(&w);
	group_data_unref(a);
	group_data_unref(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("diff");
	tcase_add_test(tc, add_update_remove_unchanged);
	tcase_add_test(tc, empty_lists_are_not_null);
	tcase_add_test(tc, delta_lists_in_key_order);
	tcase_add_test(tc, snapshot_confirmed_only);
	tcase_add_test(tc, from_nothing_everything_added);
	tcase_add_test(tc, emptied_group_removes_everything);
	tcase_add_test(tc, same_version_reports_nothing);
	tcase_add_test(tc, large_matches_brute_force);
	tcase_add_test(tc, counted_lists_are_made_when_asked);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
