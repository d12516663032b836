/*
 * Unit tests of the compact item (model/item.h): where a parsed item's key is (a span of
 * its JSON for a plain string key; kept after a copy of the JSON for an escaped, composite
 * or far-off one), keys ordered as strcmp orders them, string members read from the JSON,
 * whether an item is one of a list's, the key encoding's edges (length, offset), and each
 * group's item as a subscriber sees it (kept for the lists or made on demand).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/abi.h"
#include "model/diff.h"
#include "model/model.h"

static struct group_data *one(enum gw_group g, const char *json)
{
	struct group_data *gd = NULL;
	struct gw_err err = {0};
	ck_assert_msg(model_parse_array(g, json, strlen(json), "t", NULL, &gd, &err) == 0, "%s",
	              err.msg);
	ck_assert_uint_eq(gd->n_items, 1);
	return gd;
}

static const char *key_of(const struct gd_item *it, char *buf, size_t cap)
{
	return gd_key_str(it, buf, cap);
}

START_TEST(a_plain_key_is_a_span_of_the_json)
{
	struct group_data *gd = one(GW_GROUP_RULE, "[{\"name\":\"x\",\"id\":\"r1\"}]");
	const struct gd_item *it = &gd->items[0];
	size_t n;
	const char *k = gd_key(it, &n);
	ck_assert_uint_ne(it->key, GD_KEY_AFTER);
	ck_assert(k > it->json && k + n < it->json + it->json_len); /* inside it, no copy */
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(memcmp(k, "r1", 2), 0);
	ck_assert_str_eq(it->json, "{\"name\":\"x\",\"id\":\"r1\"}"); /* NUL-terminated */
	ck_assert_ptr_eq(group_data_find(gd, "r1"), it);
	group_data_unref(gd);
}
END_TEST

START_TEST(other_keys_are_kept_after_the_json)
{
	char buf[64];
	/* escaped: the key is its decoded text */
	struct group_data *gd = one(GW_GROUP_RULE, "[{\"id\":\"r\\u0031\"}]");
	ck_assert_uint_eq(gd->items[0].key, GD_KEY_AFTER);
	ck_assert_str_eq(key_of(&gd->items[0], buf, sizeof buf), "r1");
	ck_assert_str_eq(gd->items[0].json, "{\"id\":\"r\\u0031\"}");
	ck_assert_ptr_eq(group_data_find(gd, "r1"), &gd->items[0]);
	group_data_unref(gd);
	/* two fields */
	gd = one(GW_GROUP_AI_PROXY_API_KEY, "[{\"selectorId\":\"s1\",\"proxyApiKey\":\"sk-1\"}]");
	ck_assert_uint_eq(gd->items[0].key, GD_KEY_AFTER);
	ck_assert_str_eq(key_of(&gd->items[0], buf, sizeof buf), "s1::sk-1");
	group_data_unref(gd);
	/* beyond the offset's range (1 MiB of text before the key) */
	size_t pad = (size_t)1 << 20;
	char *json = malloc(pad + 64);
	ck_assert_ptr_nonnull(json);
	int at = snprintf(json, 64, "[{\"handle\":\"");
	memset(json + at, 'h', pad);
	snprintf(json + at + pad, 64, "\",\"id\":\"far\"}]");
	gd = one(GW_GROUP_RULE, json);
	ck_assert_uint_eq(gd->items[0].key, GD_KEY_AFTER);
	ck_assert_str_eq(key_of(&gd->items[0], buf, sizeof buf), "far");
	ck_assert_uint_eq(strlen(gd->items[0].json), gd->items[0].json_len);
	group_data_unref(gd);
	free(json);
}
END_TEST

/* The encoding's edges: a key of 4095 bytes is a span, one of 4096 is kept after the
 * JSON, whole; a key starting at the last offset the encoding holds is a span (its
 * code never the GD_KEY_AFTER mark), one past it is refused (the model then keeps it
 * after). */
START_TEST(keys_at_the_encodings_edges_are_whole)
{
	char buf[8];
	for (size_t klen = 4095; klen <= 4096; klen++) {
		char *json = malloc(klen + 64);
		ck_assert_ptr_nonnull(json);
		int at = snprintf(json, 64, "[{\"id\":\"");
		memset(json + at, 'k', klen);
		snprintf(json + at + klen, 64, "\"}]");
		struct group_data *gd = one(GW_GROUP_RULE, json);
		size_t n;
		const char *k = gd_key(&gd->items[0], &n);
		ck_assert_uint_eq(n, klen);
		ck_assert(k[0] == 'k' && k[n - 1] == 'k');
		ck_assert_int_eq(k[n], klen > 4095 ? '\0' : '"');
		ck_assert(klen > 4095 ? gd->items[0].key == GD_KEY_AFTER
		                      : gd->items[0].key != GD_KEY_AFTER);
		ck_assert_str_eq(gd_key_str(&gd->items[0], buf, sizeof buf), "kkkkkkk");
		group_data_unref(gd);
		free(json);
	}
	size_t last = ((size_t)1 << (32 - GD_KEY_LEN_BITS)) - 2;
	char *text = malloc(last + 8);
	ck_assert_ptr_nonnull(text);
	memset(text, ' ', last);
	memcpy(text + last, "kkk", 4);
	struct gd_item it;
	ck_assert_int_eq(gd_item_plain(&it, text, last + 3, text + last, 3), 0);
	ck_assert_uint_ne(it.key, GD_KEY_AFTER);
	size_t n;
	ck_assert_ptr_eq(gd_key(&it, &n), text + last);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(gd_item_plain(&it, text, last + 3, text + last + 1, 2), -1);
	free(text);
}
END_TEST

START_TEST(keys_order_as_strcmp_orders_them)
{
	struct gd_item a, b;
	const char *pairs[][2] = {{"a", "ab"}, {"ab", "b"}, {"az", "a\xc3\xa9"}, {"", "a"}};
	for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
		char ja[32], jb[32];
		snprintf(ja, sizeof ja, "%s", pairs[i][0]);
		snprintf(jb, sizeof jb, "%s", pairs[i][1]);
		ck_assert_int_eq(gd_item_plain(&a, ja, strlen(ja), ja, strlen(ja)), 0);
		ck_assert_int_eq(gd_item_plain(&b, jb, strlen(jb), jb, strlen(jb)), 0);
		int want = strcmp(ja, jb);
		ck_assert_int_lt(want, 0);
		ck_assert_int_lt(gd_keycmp(&a, &b), 0);
		ck_assert_int_gt(gd_keycmp(&b, &a), 0);
		ck_assert_int_eq(gd_keycmp(&a, &a), 0);
		ck_assert_int_lt(gd_keycmp_str(&a, jb), 0);
	}
}
END_TEST

START_TEST(members_are_read_from_the_json)
{
	struct group_data *gd =
	    one(GW_GROUP_RULE, "[{\"id\":\"r1\",\"name\":\"caf\\u00e9\",\"sort\":3}]");
	char buf[16];
	ck_assert_str_eq(gd_item_text(&gd->items[0], "name", buf, sizeof buf), "caf\xc3\xa9");
	ck_assert_ptr_null(gd_item_text(&gd->items[0], "sort", buf, sizeof buf)); /* a number */
	ck_assert_ptr_null(gd_item_text(&gd->items[0], "absent", buf, sizeof buf));
	ck_assert_ptr_null(gd_item_text(&gd->items[0], "name", buf, 4)); /* too long */
	size_t at;
	ck_assert(gd_item_in(&gd->items[0], gd->items, gd->n_items, &at));
	ck_assert_uint_eq(at, 0);
	struct gd_item other = gd->items[0];
	ck_assert(!gd_item_in(&other, gd->items, gd->n_items, &at));
	group_data_unref(gd);
}
END_TEST

/* What a subscriber sees of one item of each group: the key docs/keys.md names (escaped,
 * composite or plain) and the display name, the same in the gw_item kept for a subscriber
 * that reads the lists and in the one host->change_item makes in its ring, both with the
 * typed view and the item's own JSON. */
START_TEST(each_groups_abi_item_has_its_key_and_name_kept_or_made_on_demand)
{
	static const struct {
		enum gw_group g;
		const char *json, *key, *name;
	} cases[] = {
	    {GW_GROUP_PLUGIN, "[{\"id\":\"1\",\"name\":\"div\\u0069de\"}]", "divide", "divide"},
	    {GW_GROUP_SELECTOR, "[{\"id\":\"s1\",\"name\":\"sel\",\"pluginName\":\"divide\"}]",
	     "s1", "sel"},
	    {GW_GROUP_RULE, "[{\"id\":\"r\\u0031\",\"name\":\"caf\\u00e9\"}]", "r1", "caf\xc3\xa9"},
	    {GW_GROUP_APP_AUTH, "[{\"appKey\":\"k1\",\"appSecret\":\"x\"}]", "k1", "k1"},
	    {GW_GROUP_META_DATA, "[{\"id\":\"m1\",\"path\":\"/p\",\"appName\":\"a\"}]", "m1", "/p"},
	    {GW_GROUP_PROXY_SELECTOR, "[{\"id\":\"p1\",\"name\":\"tcp\"}]", "p1", "tcp"},
	    {GW_GROUP_DISCOVER_UPSTREAM, "[{\"selectorId\":\"s1\",\"name\":\"up\"}]", "s1", "up"},
	    {GW_GROUP_AI_PROXY_API_KEY, "[{\"selectorId\":\"s1\",\"proxyApiKey\":\"sk-1\"}]",
	     "s1::sk-1", NULL},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct group_data *gd = one(cases[c].g, cases[c].json);
		struct diff d;
		struct abi_change ac;
		struct gw_err err = {0};
		ck_assert_int_eq(diff_build(&d, cases[c].g, NULL, gd, &err), 0);
		ck_assert_msg(abi_change_make(&ac, &d, NULL, gd, 1, 1, &err) == 0, "%s", err.msg);
		struct abi_ring ring = {0};
		const struct gw_item *kept = ac.change.items[0];
		const struct gw_item *made = abi_ring_item(&ring, cases[c].g, &gd->items[0], 1);
		ck_assert_ptr_nonnull(made);
		const struct gw_item *both[] = {kept, made};
		for (int k = 0; k < 2; k++) {
			const struct gw_item *it = both[k];
			ck_assert_int_eq(it->group, cases[c].g);
			ck_assert_str_eq(it->key, cases[c].key);
			if (cases[c].name)
				ck_assert_str_eq(it->name, cases[c].name);
			else
				ck_assert_ptr_null(it->name);
			ck_assert_ptr_eq(it->json, gd->items[0].json);
			ck_assert_uint_eq(it->json_len, gd->items[0].json_len);
			int has_view =
			    it->plugin || it->selector || it->rule || it->app_auth || it->meta;
			ck_assert_int_eq(has_view, cases[c].g < GW_GROUP_PROXY_SELECTOR);
		}
		ck_assert_ptr_eq(ac.change.added[0], kept);
		abi_ring_free(&ring);
		abi_change_free(&ac);
		diff_free(&d);
		group_data_unref(gd);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("item");
	TCase *tc = tcase_create("item");
	tcase_add_test(tc, a_plain_key_is_a_span_of_the_json);
	tcase_add_test(tc, other_keys_are_kept_after_the_json);
	tcase_add_test(tc, keys_at_the_encodings_edges_are_whole);
	tcase_add_test(tc, keys_order_as_strcmp_orders_them);
	tcase_add_test(tc, members_are_read_from_the_json);
	tcase_add_test(tc, each_groups_abi_item_has_its_key_and_name_kept_or_made_on_demand);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
