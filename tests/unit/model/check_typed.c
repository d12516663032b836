/*
 * Unit tests of typed views on demand (model/typed.h, made into the ABI's items on delivery:
 * model/abi.h) and interned strings (model/intern.h): a parsed version keeps no view (no
 * item of the ABI at all); one made on delivery equals the view a full decode gives, points
 * at the item's key and name, shares repeated strings within its store; a version made by
 * edits makes only its new items', and its views outlive the version they were made for;
 * items copied by a store compaction get theirs; a copy on demand leaves the shared item
 * alone. Run under ASan with leak detection: a view is freed
 * with its store, with the last version that holds it.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"
#include "model/fields.h"
#include "model/groups.h"
#include "model/intern.h"
#include "model/itemdec.h"
#include "model/model.h"
#include "model/patch.h"
#include "model/typed.h"
#include "model/abi.h"
#include "model/diff.h"

#define NS "649330b6-c2d7-4edc-be8e-8a54df9eb385"

static void rule_json(char *buf, size_t cap, unsigned id, unsigned version)
{
	snprintf(
	    buf, cap,
	    "{\"id\":\"r%u\",\"name\":\"rule %u v%u\",\"pluginName\":\"divide\","
	    "\"selectorId\":\"s%u\",\"sort\":%u,\"enabled\":true,\"namespaceId\":\"" NS "\","
	    "\"handle\":\"{\\\"timeout\\\":3000}\",\"conditionDataList\":[{\"paramType\":"
	    "\"uri\",\"operator\":\"match\",\"paramName\":\"/\",\"paramValue\":\"/p/\\u00e9%u\"}]}",
	    id, id, version, id % 3, version, id % 2);
}

static struct group_data *rules(unsigned n, unsigned version)
{
	struct strbuf b = {0};
	char json[512];
	strbuf_add(&b, "[", 1);
	for (unsigned i = 0; i < n; i++) {
		rule_json(json, sizeof json, i, version);
		strbuf_addf(&b, "%s%s", i ? "," : "", json);
	}
	strbuf_add(&b, "]", 1);
	char *text = strbuf_finish(&b);
	struct group_data *gd = NULL;
	struct gw_err err = {0};
	ck_assert_msg(model_parse_items(GW_GROUP_RULE, text, strlen(text), "t", NULL, &gd, &err) ==
	                  0,
	              "%s", err.msg);
	free(text);
	return gd;
}

/* Deliver from..to to a subscriber that reads the lists (with their typed views when
 * `typed`): the ABI's items made, kept with to (its abi_items). */
static void deliver(struct group_data *to, struct group_data *from, int typed)
{
	struct diff d;
	struct abi_change ac;
	struct gw_err err = {0};
	ck_assert_int_eq(diff_build(&d, to->group, from, to, &err), 0);
	ck_assert_msg(abi_change_make(&ac, &d, from, to, 1, typed, &err) == 0, "%s", err.msg);
	abi_change_free(&ac);
	diff_free(&d);
}

static void fill(struct group_data *to, struct group_data *from)
{
	deliver(to, from, 1);
}

/* Item i of gd as the last delivery made it. */
static const struct gw_item *V(const struct group_data *gd, size_t i)
{
	ck_assert_ptr_nonnull(gd->abi_items);
	return gd->abi_items[i];
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The view of `it` equals what a full decode of its text gives, field by field. */
static void assert_view_is_a_full_decode(const struct gw_item *it)
{
	struct group_data *scratch = group_data_new(it->group);
	struct gw_err err = {0};
	int syntax = 0;
	struct item_ctx c = {.gd = scratch,
	                     .mem = &scratch->arena,
	                     .err = &err,
	                     .group = gw_group_name(it->group),
	                     .syntax = &syntax};
	struct itemdec *dec = itemdec_new();
	struct gw_item ref = {0};
	ck_assert_int_eq(itemdec_item(dec, &c, it->group, it->json, it->json_len, &ref), 0);
	const struct gw_rule_data *a = it->rule, *b = ref.rule;
	ck_assert_ptr_nonnull(a);
	ck_assert(same_str(a->id, b->id) && same_str(a->name, b->name));
	ck_assert(same_str(a->plugin_name, b->plugin_name) &&
	          same_str(a->selector_id, b->selector_id));
	ck_assert(same_str(a->handle, b->handle) && same_str(a->namespace_id, b->namespace_id));
	ck_assert_int_eq(a->sort, b->sort);
	ck_assert_int_eq(a->enabled, b->enabled);
	ck_assert_int_eq(a->logged, b->logged);
	ck_assert_int_eq(a->match_mode, b->match_mode);
	ck_assert_uint_eq(a->n_conditions, b->n_conditions);
	for (size_t i = 0; i < a->n_conditions; i++) {
		ck_assert(same_str(a->conditions[i].param_type, b->conditions[i].param_type));
		ck_assert(same_str(a->conditions[i].op, b->conditions[i].op));
		ck_assert(same_str(a->conditions[i].param_name, b->conditions[i].param_name));
		ck_assert(same_str(a->conditions[i].param_value, b->conditions[i].param_value));
	}
	ck_assert_uint_eq(a->n_before_conditions, b->n_before_conditions);
	/* the item's own strings, not copies */
	ck_assert_ptr_eq(a->id, it->key);
	ck_assert_ptr_eq(a->name, it->name);
	itemdec_free(dec);
	group_data_unref(scratch);
}

START_TEST(views_are_made_on_delivery_equal_and_interned)
{
	struct group_data *gd = rules(20, 1);
	char name[64];
	ck_assert_ptr_null(gd->abi_items); /* checked at parse, not made */
	for (size_t i = 0; i < gd->n_items; i++)
		ck_assert_ptr_nonnull(gd_item_text(&gd->items[i], "name", name, sizeof name));
	fill(gd, NULL);
	ck_assert_int_eq(gd->abi_typed, 1);
	for (size_t i = 0; i < gd->n_items; i++)
		assert_view_is_a_full_decode(V(gd, i));
	/* what repeats is held once in the store: namespace, plugin, handle, condition fields,
	 * the selector ids rules name */
	const struct gw_rule_data *a = V(gd, 0)->rule, *b = V(gd, 3)->rule;
	ck_assert_ptr_eq(a->namespace_id, b->namespace_id);
	ck_assert_ptr_eq(a->plugin_name, b->plugin_name);
	ck_assert_ptr_eq(a->handle, b->handle);
	ck_assert_ptr_eq(a->selector_id, b->selector_id); /* s0 both */
	ck_assert_ptr_eq(a->conditions[0].param_type, b->conditions[0].param_type);
	ck_assert_ptr_ne(a->conditions, b->conditions); /* lists are each item's own */
	ck_assert_ptr_eq(a->conditions[0].param_value, V(gd, 2)->rule->conditions[0].param_value);
	ck_assert_ptr_ne(a->selector_id, V(gd, 1)->rule->selector_id);
	/* a second fill makes nothing new */
	const struct gw_rule_data *before = V(gd, 5)->rule;
	fill(gd, NULL);
	ck_assert_ptr_eq(V(gd, 5)->rule, before);
	group_data_unref(gd);
}
END_TEST

/* One upsert among 50: the next version's fill makes only the new item's view; the others
 * are the held version's, and outlive it. */
START_TEST(a_version_made_by_edits_makes_only_its_new_views)
{
	struct group_data *list = rules(50, 1);
	struct patch p = {GW_GROUP_RULE, NULL, list, NULL, 0, 1, 0, "t", 1};
	struct group_data *v1 = NULL, *v2 = NULL, *up = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(model_patch(&p, &v1, &err), 0);
	fill(v1, NULL);
	char json[512], one[600];
	rule_json(json, sizeof json, 7, 2);
	snprintf(one, sizeof one, "[%s]", json);
	ck_assert_int_eq(model_parse_items(GW_GROUP_RULE, one, strlen(one), "t", v1, &up, &err), 0);
	p = (struct patch){GW_GROUP_RULE, v1, up, NULL, 0, 0, 0, "t", 2};
	ck_assert_int_eq(model_patch(&p, &v2, &err), 0);
	ck_assert_int_eq(v2->delta_shares, 1);
	ck_assert_ptr_null(v2->abi_items);
	fill(v2, v1);
	ck_assert_ptr_nonnull(V(v2, 7)->rule);
	ck_assert_int_eq(V(v2, 7)->rule->sort, 2);
	ck_assert_ptr_ne(V(v2, 7), V(v1, 7));
	ck_assert_ptr_eq(V(v2, 6), V(v1, 6)); /* shared item, shared gw_item and view */
	ck_assert_ptr_eq(V(v2, 6)->rule, V(v1, 6)->rule);
	group_data_unref(v1);
	group_data_unref(list);
	group_data_unref(up);
	for (size_t i = 0; i < v2->n_items; i++) /* v1's store is held by v2: views alive */
		assert_view_is_a_full_decode(V(v2, i));
	group_data_unref(v2);
}
END_TEST

/* Thousands of one-item events compact their stores now and then (items copied into a new
 * store, without views): every fill still leaves every item with its view. */
START_TEST(items_copied_by_a_compaction_get_their_views)
{
	struct group_data *list = rules(400, 0);
	struct patch p = {GW_GROUP_RULE, NULL, list, NULL, 0, 1, 0, "t", 1};
	struct group_data *held = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(model_patch(&p, &held, &err), 0);
	fill(held, NULL);
	int copied = 0;
	for (unsigned k = 1; k <= 700; k++) {
		char json[512], one[600];
		rule_json(json, sizeof json, (k * 37) % 400, k);
		snprintf(one, sizeof one, "[%s]", json);
		struct group_data *up = NULL, *next = NULL;
		ck_assert_int_eq(
		    model_parse_items(GW_GROUP_RULE, one, strlen(one), "t", held, &up, &err), 0);
		p = (struct patch){GW_GROUP_RULE, held, up, NULL, 0, 0, 0, "t", (int64_t)k + 1};
		ck_assert_int_eq(model_patch(&p, &next, &err), 0);
		copied += !next->delta_shares;
		fill(next, held);
		for (size_t i = 0; i < next->n_items; i++)
			ck_assert(!model_typed_missing(V(next, i)));
		group_data_unref(up);
		group_data_unref(held);
		held = next;
	}
	ck_assert_int_gt(copied, 0); /* a compaction happened */
	for (size_t i = 0; i < held->n_items; i++)
		assert_view_is_a_full_decode(V(held, i));
	group_data_unref(held);
	group_data_unref(list);
}
END_TEST

START_TEST(a_view_on_demand_is_a_copy)
{
	struct group_data *gd = rules(3, 1);
	struct arena scratch;
	arena_init(&scratch);
	deliver(gd, NULL, 0); /* to a subscriber that asks for views: items without them */
	const struct gw_item *c = model_typed_copy(V(gd, 1), &scratch);
	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_ne(c, V(gd, 1));
	ck_assert_ptr_null(V(gd, 1)->rule); /* the shared item is left as it was */
	assert_view_is_a_full_decode(c);
	fill(gd, NULL);
	ck_assert_ptr_eq(model_typed_copy(V(gd, 1), &scratch), V(gd, 1));
	arena_free(&scratch);
	char buf[64];
	ck_assert_str_eq(gd_item_text(&gd->items[2], "pluginName", buf, sizeof buf), "divide");
	ck_assert_ptr_null(gd_item_text(&gd->items[2], "sort", buf, sizeof buf));
	ck_assert_ptr_null(gd_item_text(&gd->items[2], "absent", buf, sizeof buf));
	ck_assert_ptr_null(gd_item_text(&gd->items[2], "namespaceId", buf, 8)); /* too long */
	group_data_unref(gd);
}
END_TEST

START_TEST(intern_shares_within_one_arena_only)
{
	struct intern *in = intern_new();
	struct arena a, b;
	arena_init(&a);
	arena_init(&b);
	const char *x = intern_get(in, &a, "uri-and-more", 3);
	ck_assert_str_eq(x, "uri");
	ck_assert_ptr_eq(intern_get(in, &a, "uri", 3), x);
	ck_assert_ptr_ne(intern_get(in, &b, "uri", 3), x);
	ck_assert_ptr_ne(intern_get(in, &a, "uri ", 4), x);
	/* many strings: the table grows and still finds each one */
	const char *kept[5000];
	for (int i = 0; i < 5000; i++) {
		char s[16];
		int n = snprintf(s, sizeof s, "v%d", i);
		kept[i] = intern_get(in, &a, s, (size_t)n);
	}
	for (int i = 0; i < 5000; i++) {
		char s[16];
		int n = snprintf(s, sizeof s, "v%d", i);
		ck_assert_ptr_eq(intern_get(in, &a, s, (size_t)n), kept[i]);
	}
	size_t asked, made;
	intern_counts(in, &asked, &made);
	ck_assert_uint_eq(made, 5003);
	ck_assert_uint_eq(asked, 10004);
	intern_free(in);
	ck_assert_str_eq(x, "uri"); /* the strings are the arena's, not the table's */
	arena_free(&a);
	arena_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("typed");
	TCase *tc = tcase_create("typed");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, views_are_made_on_delivery_equal_and_interned);
	tcase_add_test(tc, a_version_made_by_edits_makes_only_its_new_views);
	tcase_add_test(tc, items_copied_by_a_compaction_get_their_views);
	tcase_add_test(tc, a_view_on_demand_is_a_copy);
	tcase_add_test(tc, intern_shares_within_one_arena_only);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
