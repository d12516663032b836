/*
 * The patch of event sources (agent/model/patch.c): upserts replace in place and append,
 * deletes remove by the model's key, a full list replaces, nothing changed gives no
 * version, the md5 is that of the canonical (key-ordered) item list whatever the order,
 * and lastModifyTime strictly increases. Also the items of one event (model_parse_items).
 */
#include <check.h>
#include <string.h>

#include "model/patch.h"

static struct group_data *items(enum gw_group g, const char *json)
{
	struct group_data *gd = NULL;
	struct gw_err err = {""};
	ck_assert_msg(model_parse_items(g, json, strlen(json), "ws://a", NULL, &gd, &err) == 0,
	              "%s", err.msg);
	return gd;
}

/* The keys of gd in its order, as "a,b,c". */
static const char *order(const struct group_data *gd)
{
	static char buf[512];
	buf[0] = '\0';
	for (size_t i = 0; i < gd->n_items; i++) {
		if (i)
			strcat(buf, ",");
		strcat(buf, gd->items[i].key);
	}
	return buf;
}

#define R(id, v) "{\"id\":\"" id "\",\"name\":\"" v "\",\"pluginName\":\"divide\"}"

static struct group_data *patch(const struct group_data *prev, const struct group_data *up,
                                const char *const *dels, size_t n_dels, int replace, int64_t now)
{
	struct patch p = {GW_GROUP_RULE, prev, up, dels, n_dels, replace, 0, "ws://a", now};
	struct group_data *out = NULL;
	struct gw_err err = {""};
	ck_assert_msg(model_patch(&p, &out, &err) == 0, "%s", err.msg);
	return out;
}

START_TEST(upsert_delete_replace)
{
	struct group_data *first = items(GW_GROUP_RULE, "[" R("b", "1") "," R("a", "1") "]");
	struct group_data *v1 = patch(NULL, first, NULL, 0, 1, 1000);
	ck_assert_ptr_nonnull(v1);
	ck_assert_str_eq(order(v1), "b,a");
	ck_assert_int_eq(v1->last_modify_time, 1000);
	ck_assert_str_eq(v1->source, "ws://a");
	ck_assert_uint_eq(strlen(v1->md5), 32);
	ck_assert_ptr_nonnull(v1->items[0].rule); /* typed like a fetched item */
	ck_assert_str_eq(v1->items[0].rule->plugin_name, "divide");

	/* upsert: b replaced in place, c appended; the clock went back: stamp still grows */
	struct group_data *up = items(GW_GROUP_RULE, "[" R("c", "1") "," R("b", "2") "]");
	struct group_data *v2 = patch(v1, up, NULL, 0, 0, 500);
	ck_assert_str_eq(order(v2), "b,a,c");
	ck_assert_str_eq(v2->items[0].name, "2");
	ck_assert_int_eq(v2->last_modify_time, 1001);
	ck_assert_str_ne(v2->md5, v1->md5);

	/* the same upsert again, and deleting an absent key: no change, no version */
	ck_assert_ptr_null(patch(v2, up, NULL, 0, 0, 2000));
	const char *absent[] = {"zz"};
	ck_assert_ptr_null(patch(v2, NULL, absent, 1, 0, 2000));

	/* delete by key; a key both deleted and upserted stays */
	const char *dels[] = {"c", "a"};
	struct group_data *keep_a = items(GW_GROUP_RULE, "[" R("a", "9") "]");
	struct group_data *v3 = patch(v2, keep_a, dels, 2, 0, 3000);
	ck_assert_str_eq(order(v3), "b,a");
	ck_assert_str_eq(v3->items[1].name, "9");
	struct group_data *v4 = patch(v3, NULL, dels, 2, 0, 3000);
	ck_assert_str_eq(order(v4), "b");
	ck_assert_int_eq(v4->last_modify_time, 3001);

	/* replace with the same items in another order: the same canonical md5, no change */
	struct group_data *same = items(GW_GROUP_RULE, "[" R("a", "1") "," R("b", "1") "]");
	ck_assert_ptr_null(patch(v1, same, NULL, 0, 1, 4000));
	/* ... but forced (the held version came from the snapshot) it is made */
	struct patch p = {GW_GROUP_RULE, v1, same, NULL, 0, 1, 1, "ws://a", 4000};
	struct group_data *forced = NULL;
	struct gw_err err = {""};
	ck_assert_int_eq(model_patch(&p, &forced, &err), 0);
	ck_assert_ptr_nonnull(forced);
	ck_assert_str_eq(forced->md5, v1->md5);
	ck_assert_str_eq(order(forced), "a,b");

	/* replace with nothing: an empty version */
	struct group_data *none = items(GW_GROUP_RULE, "[]");
	struct group_data *empty = patch(v4, none, NULL, 0, 1, 5000);
	ck_assert_ptr_nonnull(empty);
	ck_assert_uint_eq(empty->n_items, 0);
	char md5[33];
	model_canonical_md5(NULL, md5);
	ck_assert_str_eq(empty->md5, md5);
	ck_assert_str_eq(md5, "d751713988987e9331980363e24189ce"); /* md5("[]") */

	struct group_data *all[] = {first, v1, up, v2, keep_a, v3, v4, same, forced, none, empty};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		group_data_unref(all[i]);
}
END_TEST

START_TEST(canonical_md5_is_key_ordered)
{
	struct group_data *a = items(GW_GROUP_RULE, "[" R("x", "1") "," R("y", "1") "]");
	struct group_data *b = items(GW_GROUP_RULE, "[" R("y", "1") "," R("x", "1") "]");
	char ma[33], mb[33];
	model_canonical_md5(a, ma);
	model_canonical_md5(b, mb);
	ck_assert_str_eq(ma, mb);
	/* md5 of "[" x "," y "]" */
	ck_assert_str_eq(ma, "58c8ecd7cbd6863e158aa358bf7555de");
	group_data_unref(a);
	group_data_unref(b);
}
END_TEST

START_TEST(items_refused)
{
	struct group_data *gd = NULL;
	struct gw_err err = {""};
	const char *bad[][2] = {
	    {"{}", "'data' must be an array"},
	    {"[{\"id\":\"a\"},{\"id\":\"a\"}]", "duplicate key 'a'"},
	    {"[{\"name\":\"no id\"}]", "item 0: missing key field"},
	    {"[{\"id\":\"a\",\"enabled\":\"yes\"}]", "enabled"},
	    {"[{\"id\":\"a\"},3]", "item 1: expected an object"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(model_parse_items(GW_GROUP_RULE, bad[i][0], strlen(bad[i][0]),
		                                   "ws://a", NULL, &gd, &err),
		                 -1);
		ck_assert_ptr_null(gd);
		ck_assert_msg(strstr(err.msg, bad[i][1]) && strstr(err.msg, "group RULE"),
		              "'%s' -> '%s'", bad[i][0], err.msg);
	}
	/* the newer groups: key and raw JSON */
	gd = items(GW_GROUP_DISCOVER_UPSTREAM, "[{\"selectorId\":\"s1\",\"upstreamDataList\":[]}]");
	ck_assert_str_eq(gd->items[0].key, "s1");
	group_data_unref(gd);
}
END_TEST

/* Per-plugin REFRESH as the WebSocket source does it: the deletes are the held items of
 * the refreshed plugins; other plugins' items stay where they were. */
START_TEST(per_plugin_refresh)
{
	struct group_data *first =
	    items(GW_GROUP_RULE, "[{\"id\":\"d1\",\"pluginName\":\"divide\"},"
	                         "{\"id\":\"w1\",\"pluginName\":\"waf\"},"
	                         "{\"id\":\"d2\",\"pluginName\":\"divide\"}]");
	struct group_data *v1 = patch(NULL, first, NULL, 0, 1, 1);
	struct group_data *up =
	    items(GW_GROUP_RULE, "[{\"id\":\"d2\",\"pluginName\":\"divide\",\"sort\":2}]");
	const char *dels[] = {"d1", "d2"};
	struct group_data *v2 = patch(v1, up, dels, 2, 0, 2);
	ck_assert_str_eq(order(v2), "w1,d2");
	ck_assert_int_eq(v2->items[1].rule->sort, 2);
	group_data_unref(first);
	group_data_unref(v1);
	group_data_unref(up);
	group_data_unref(v2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("patch");
	TCase *tc = tcase_create("patch");
	tcase_add_test(tc, upsert_delete_replace);
	tcase_add_test(tc, canonical_md5_is_key_ordered);
	tcase_add_test(tc, items_refused);
	tcase_add_test(tc, per_plugin_refresh);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
