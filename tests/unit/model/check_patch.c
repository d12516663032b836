/*
 * The patch of event sources (agent/model/patch.c, edit.c, digest.c): upserts replace in
 * place and append, deletes remove by the model's key, a full list replaces, nothing
 * changed gives no version, a renamed plugin replaces the held one with its id, and
 * lastModifyTime strictly increases. The version a patch makes is the version a whole
 * parse of the same items makes (items, their order, keys, typed fields, the key index),
 * after random sequences of upserts and deletes (and of positional edits, as the path
 * pools make them), and its identity is the one computed from scratch, whatever path the
 * items came by. Also the items of one event (model_parse_items), and the pools a long
 * run of patches keeps.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"
#include "model/diff.h"
#include "model/edit.h"
#include "model/fields.h"
#include "model/patch.h"
#include "abiview.h"

static struct group_data *items(enum gw_group g, const char *json)
{
	struct group_data *gd = NULL;
	struct gw_err err = {0};
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
		strcat(buf, item_key(&gd->items[i]));
	}
	return buf;
}

static const char *identity(const struct group_data *gd)
{
	static char md5[33];
	ck_assert_int_eq(model_identity(gd, md5), 0);
	return md5;
}

#define R(id, v) "{\"id\":\"" id "\",\"name\":\"" v "\",\"pluginName\":\"divide\"}"

static struct group_data *patch_g(enum gw_group g, const struct group_data *prev,
                                  const struct group_data *up, const char *const *dels,
                                  size_t n_dels, int replace, int64_t now)
{
	struct patch p = {g, prev, up, dels, n_dels, replace, 0, "ws://a", now};
	struct group_data *out = NULL;
	struct gw_err err = {0};
	ck_assert_msg(model_patch(&p, &out, &err) == 0, "%s", err.msg);
	if (out)
		ck_assert_str_eq(out->md5, identity(out));
	return out;
}

static struct group_data *patch(const struct group_data *prev, const struct group_data *up,
                                const char *const *dels, size_t n_dels, int replace, int64_t now)
{
	return patch_g(GW_GROUP_RULE, prev, up, dels, n_dels, replace, now);
}

START_TEST(upsert_delete_replace)
{
	struct group_data *first = items(GW_GROUP_RULE, "[" R("b", "1") "," R("a", "1") "]");
	struct group_data *v1 = patch(NULL, first, NULL, 0, 1, 1000);
	ck_assert_ptr_nonnull(v1);
	ck_assert_str_eq(order(v1), "b,a");
	ck_assert_int_eq(v1->last_modify_time, 1000);
	ck_assert_str_eq(v1->server, "ws://a");
	ck_assert_uint_eq(strlen(v1->md5), 32);
	ck_assert_ptr_nonnull(abi_item(v1, 0)->rule); /* typed like a fetched item */
	ck_assert_str_eq(abi_item(v1, 0)->rule->plugin_name, "divide");

	/* upsert: b replaced in place, c appended; the clock went back: stamp still grows */
	struct group_data *up = items(GW_GROUP_RULE, "[" R("c", "1") "," R("b", "2") "]");
	struct group_data *v2 = patch(v1, up, NULL, 0, 0, 500);
	ck_assert_str_eq(order(v2), "b,a,c");
	ck_assert_str_eq(abi_item(v2, 0)->name, "2");
	ck_assert_int_eq(v2->last_modify_time, 1001);
	ck_assert_str_ne(v2->md5, v1->md5);
	ck_assert_ptr_eq(group_data_find(v2, "c"), &v2->items[2]);

	/* the same upsert again, and deleting an absent key: no change, no version */
	ck_assert_ptr_null(patch(v2, up, NULL, 0, 0, 2000));
	const char *absent[] = {"zz"};
	ck_assert_ptr_null(patch(v2, NULL, absent, 1, 0, 2000));

	/* delete by key; a key both deleted and upserted stays */
	const char *dels[] = {"c", "a"};
	struct group_data *keep_a = items(GW_GROUP_RULE, "[" R("a", "9") "]");
	struct group_data *v3 = patch(v2, keep_a, dels, 2, 0, 3000);
	ck_assert_str_eq(order(v3), "b,a");
	ck_assert_str_eq(abi_item(v3, 1)->name, "9");
	struct group_data *v4 = patch(v3, NULL, dels, 2, 0, 3000);
	ck_assert_str_eq(order(v4), "b");
	ck_assert_int_eq(v4->last_modify_time, 3001);

	/* replace with the same items in another order: no change */
	struct group_data *same = items(GW_GROUP_RULE, "[" R("a", "1") "," R("b", "1") "]");
	ck_assert_ptr_null(patch(v1, same, NULL, 0, 1, 4000));
	/* ... but forced (the held version came from the snapshot) it is made, with the same
	 * identity: the identity is the item set's, not the order's */
	struct patch p = {GW_GROUP_RULE, v1, same, NULL, 0, 1, 1, "ws://a", 4000};
	struct group_data *forced = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(model_patch(&p, &forced, &err), 0);
	ck_assert_ptr_nonnull(forced);
	ck_assert_str_eq(forced->md5, v1->md5);
	ck_assert_str_eq(order(forced), "a,b");

	/* replace with nothing: an empty version */
	struct group_data *none = items(GW_GROUP_RULE, "[]");
	struct group_data *empty = patch(v4, none, NULL, 0, 1, 5000);
	ck_assert_ptr_nonnull(empty);
	ck_assert_uint_eq(empty->n_items, 0);
	ck_assert_str_eq(empty->md5, identity(NULL));

	struct group_data *all[] = {first, v1, up, v2, keep_a, v3, v4, same, forced, none, empty};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		group_data_unref(all[i]);
}
END_TEST

/* A group held in key order (how an admin usually sends one) carries no key index: rank r
 * is position r. Replacing in place or appending after the last key keeps it so (nothing
 * copied per change); an insertion elsewhere makes one, and lookups stay right. */
START_TEST(a_version_in_key_order_keeps_no_key_index)
{
	struct group_data *first = items(GW_GROUP_RULE, "[" R("a", "1") "," R("c", "1") "]");
	struct group_data *v1 = patch(NULL, first, NULL, 0, 1, 1000);
	ck_assert_ptr_null(v1->by_key);
	struct group_data *up = items(GW_GROUP_RULE, "[" R("c", "2") "," R("d", "1") "]");
	struct group_data *v2 = patch(v1, up, NULL, 0, 0, 2000);
	ck_assert_str_eq(order(v2), "a,c,d");
	ck_assert_ptr_null(v2->by_key);
	struct group_data *mid = items(GW_GROUP_RULE, "[" R("b", "1") "]");
	struct group_data *v3 = patch(v2, mid, NULL, 0, 0, 3000);
	ck_assert_str_eq(order(v3), "a,c,d,b");
	ck_assert_ptr_nonnull(v3->by_key);
	const char *keys[] = {"a", "b", "c", "d"};
	for (size_t i = 0; i < 4; i++) {
		ck_assert_str_eq(item_key(&v3->items[group_data_at(v3, i)]), keys[i]);
		ck_assert_ptr_eq(group_data_find(v3, keys[i]), &v3->items[group_data_at(v3, i)]);
	}
	ck_assert_ptr_null(group_data_find(v3, "bb"));
	const char *dels[] = {"b"};
	struct group_data *v4 = patch(v3, NULL, dels, 1, 0, 4000);
	ck_assert_str_eq(order(v4), "a,c,d");
	ck_assert_ptr_eq(group_data_find(v4, "d"), &v4->items[2]);
	struct group_data *all[] = {first, v1, up, v2, mid, v3, v4};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		group_data_unref(all[i]);
}
END_TEST

/* One positional edit of `held`: op at position `at` with the single item of `json` (NULL for
 * a removal). */
static struct group_data *edit_one(const struct group_data *held, size_t at, enum edit_op op,
                                   const char *json)
{
	struct group_data *up = json ? items(GW_GROUP_RULE, json) : NULL;
	struct edit e = {at, op, up ? &up->items[0] : NULL};
	struct group_data *out = NULL;
	struct gw_err err = {0};
	ck_assert_msg(model_edit(held, up, &e, 1, &out, &err) == 0, "%s", err.msg);
	group_data_unref(up);
	return out;
}

/* Every key found at its rank, and the ranks in key order. */
static void lookups_right(const struct group_data *gd, const char *const *keys, size_t n)
{
	ck_assert_uint_eq(gd->n_items, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(item_key(&gd->items[group_data_at(gd, i)]), keys[i]);
		ck_assert_ptr_eq(group_data_find(gd, keys[i]), &gd->items[group_data_at(gd, i)]);
	}
}

/* A group not in key order (a path store's RULE: path order is selector then rule id) has a
 * key index. A change that leaves every key where it was (an item's text replaced under its
 * key: the usual one-rule change) makes a version with the same index: it shares its
 * predecessor's (one reference, nothing copied), and keeps it when the predecessor is gone.
 * A change that moves a key (a replace under another key, an insertion, a removal) makes
 * its own. */
START_TEST(a_change_that_moves_no_key_shares_the_key_index)
{
	struct group_data *first =
	    items(GW_GROUP_RULE, "[" R("c", "1") "," R("a", "1") "," R("b", "1") "]");
	struct group_data *v1 = patch(NULL, first, NULL, 0, 1, 1000);
	ck_assert_ptr_nonnull(v1->by_key);
	ck_assert_ptr_nonnull(v1->keys);
	const char *abc[] = {"a", "b", "c"};
	lookups_right(v1, abc, 3);

	/* positional (the path pools): a's text replaced in place */
	struct group_data *v2 = edit_one(v1, 1, EDIT_REPLACE, "[" R("a", "2") "]");
	ck_assert_str_eq(order(v2), "c,a,b");
	ck_assert_ptr_eq(v2->by_key, v1->by_key);
	ck_assert_ptr_eq(v2->keys, v1->keys);
	/* by key (WebSocket's upsert): b's text replaced in place */
	struct group_data *up = items(GW_GROUP_RULE, "[" R("b", "2") "]");
	struct group_data *v3 = patch(v2, up, NULL, 0, 0, 2000);
	ck_assert_str_eq(order(v3), "c,a,b");
	ck_assert_ptr_eq(v3->by_key, v1->by_key);
	/* the index outlives the version that made it */
	group_data_unref(v1);
	group_data_unref(v2);
	lookups_right(v3, abc, 3);
	ck_assert_str_eq(group_data_find(v3, "a")->json, R("a", "2"));

	/* a moves: replaced at its place by d */
	struct group_data *v4 = edit_one(v3, 1, EDIT_REPLACE, "[" R("d", "1") "]");
	ck_assert_str_eq(order(v4), "c,d,b");
	ck_assert_ptr_ne(v4->by_key, v3->by_key);
	const char *bcd[] = {"b", "c", "d"};
	lookups_right(v4, bcd, 3);
	lookups_right(v3, abc, 3); /* its own untouched */
	/* an insertion and a removal shift positions */
	struct group_data *v5 = edit_one(v4, 0, EDIT_INSERT, "[" R("e", "1") "]");
	ck_assert_str_eq(order(v5), "e,c,d,b");
	ck_assert_ptr_ne(v5->by_key, v4->by_key);
	const char *bcde[] = {"b", "c", "d", "e"};
	lookups_right(v5, bcde, 4);
	struct group_data *v6 = edit_one(v5, 1, EDIT_REMOVE, NULL);
	ck_assert_str_eq(order(v6), "e,d,b");
	ck_assert_ptr_ne(v6->by_key, v5->by_key);
	const char *bde[] = {"b", "d", "e"};
	lookups_right(v6, bde, 3);
	lookups_right(v4, bcd, 3);

	struct group_data *all[] = {first, up, v3, v4, v5, v6};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		group_data_unref(all[i]);
}
END_TEST

START_TEST(identity_is_the_item_sets_whatever_the_path)
{
	struct group_data *a = items(GW_GROUP_RULE, "[" R("x", "1") "," R("y", "1") "]");
	struct group_data *b = items(GW_GROUP_RULE, "[" R("y", "1") "," R("x", "1") "]");
	char ia[33];
	snprintf(ia, sizeof ia, "%s", identity(a));
	ck_assert_str_eq(ia, identity(b));
	/* built step by step: x, then y upserted */
	struct group_data *x = items(GW_GROUP_RULE, "[" R("x", "1") "]");
	struct group_data *y = items(GW_GROUP_RULE, "[" R("y", "1") "]");
	struct group_data *v1 = patch(NULL, x, NULL, 0, 0, 1);
	struct group_data *v2 = patch(v1, y, NULL, 0, 0, 2);
	ck_assert_str_eq(v2->md5, ia);
	/* ... and through a third item added and removed again */
	struct group_data *z = items(GW_GROUP_RULE, "[" R("z", "1") "]");
	struct group_data *v3 = patch(v2, z, NULL, 0, 0, 3);
	ck_assert_str_ne(v3->md5, ia);
	const char *dz[] = {"z"};
	struct group_data *v4 = patch(v3, NULL, dz, 1, 0, 4);
	ck_assert_str_eq(v4->md5, ia);
	/* another set differs, the empty set has its own */
	ck_assert_str_ne(v1->md5, ia);
	ck_assert_str_ne(identity(NULL), ia);
	struct group_data *all[] = {a, b, x, y, v1, v2, z, v3, v4};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		group_data_unref(all[i]);
}
END_TEST

START_TEST(items_refused)
{
	struct group_data *gd = NULL;
	struct gw_err err = {0};
	const char *bad[][2] = {
	    {"{}", "'data' must be an array"},
	    {"[{\"id\":\"a\"},{\"id\":\"a\"}]", "duplicate key 'a'"},
	    {"[{\"name\":\"no id\"}]", "item 0: missing key field"},
	    {"[{\"id\":\"a\",\"enabled\":\"yes\"}]", "enabled"},
	    {"[{\"id\":\"a\"},3]", "item 1: expected an object"},
	    {"[{\"id\":\"a\"}] x", "invalid JSON"},
	    {"[{\"id\":\"a\"", "invalid JSON"},
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
	ck_assert_str_eq(item_key(&gd->items[0]), "s1");
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
	ck_assert_int_eq(abi_item(v2, 1)->rule->sort, 2);
	group_data_unref(first);
	group_data_unref(v1);
	group_data_unref(up);
	group_data_unref(v2);
}
END_TEST

#define P(id, name) "{\"id\":\"" id "\",\"name\":\"" name "\",\"enabled\":true}"

/* A plugin renamed in the admin is an UPDATE of its id under the new name: the held plugin
 * with that id goes (issue 20 item 10); a plugin with another id under the old name would
 * not. */
START_TEST(a_renamed_plugin_replaces_the_held_one_with_its_id)
{
	struct group_data *first =
	    items(GW_GROUP_PLUGIN, "[" P("1", "divide") "," P("2", "waf") "," P("3", "sign") "]");
	struct group_data *v1 = patch_g(GW_GROUP_PLUGIN, NULL, first, NULL, 0, 1, 1);
	struct group_data *renamed = items(GW_GROUP_PLUGIN, "[" P("2", "waf2") "]");
	struct group_data *v2 = patch_g(GW_GROUP_PLUGIN, v1, renamed, NULL, 0, 0, 2);
	ck_assert_str_eq(order(v2), "divide,sign,waf2");
	/* renamed back in the same message as a new plugin takes the name: both stay */
	struct group_data *both = items(GW_GROUP_PLUGIN, "[" P("2", "waf") "," P("9", "waf2") "]");
	struct group_data *v3 = patch_g(GW_GROUP_PLUGIN, v2, both, NULL, 0, 0, 3);
	ck_assert_str_eq(order(v3), "divide,sign,waf2,waf");
	ck_assert_str_eq(abi_item(v3, 2)->plugin->id, "9");
	/* only plugins have an alias: a rule with another rule's name is another rule */
	struct group_data *r1 = items(GW_GROUP_RULE, "[" R("a", "same") "]");
	struct group_data *r2 = items(GW_GROUP_RULE, "[" R("b", "same") "]");
	struct group_data *w1 = patch(NULL, r1, NULL, 0, 0, 1);
	struct group_data *w2 = patch(w1, r2, NULL, 0, 0, 2);
	ck_assert_str_eq(order(w2), "a,b");
	struct group_data *all[] = {first, v1, renamed, v2, both, v3, r1, r2, w1, w2};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		group_data_unref(all[i]);
}
END_TEST

/* ---------------------------------------------------------------- random sequences */

/* Two versions are the same: items in order (key, raw JSON, typed fields), the key index,
 * and the identity (each's md5 is the identity computed from scratch). */
static void same_fields(const struct field *fields, size_t n, const void *x, const void *y)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		const char *a = (const char *)x + f->off, *b = (const char *)y + f->off;
		if (f->kind == K_STR || f->kind == K_STR_OR_NUM) {
			const char *sa = *(const char *const *)a, *sb = *(const char *const *)b;
			ck_assert(!sa == !sb);
			if (sa)
				ck_assert_str_eq(sa, sb);
		} else if (f->kind == K_INT) {
			ck_assert(*(const int64_t *)a == *(const int64_t *)b);
		} else if (f->kind == K_BOOL) {
			ck_assert_int_eq(*(const enum gw_bool *)a, *(const enum gw_bool *)b);
		} else {
			const struct list_shape *ls = fields_list(f->kind);
			size_t na = *(const size_t *)((const char *)x + f->count_off);
			ck_assert_uint_eq(na, *(const size_t *)((const char *)y + f->count_off));
			const unsigned char *la = *(const void *const *)a,
			                    *lb = *(const void *const *)b;
			for (size_t j = 0; j < na; j++)
				same_fields(ls->fields, ls->n, la + j * ls->size,
				            lb + j * ls->size);
		}
	}
}

static void assert_same_version(struct group_data *a, struct group_data *b)
{
	ck_assert_uint_eq(a->n_items, b->n_items);
	const struct group_shape *sh = fields_group(a->group);
	for (size_t i = 0; i < a->n_items; i++) {
		const struct gw_item *x = abi_item(a, i), *y = abi_item(b, i);
		ck_assert_str_eq(x->key, y->key);
		ck_assert_uint_eq(x->json_len, y->json_len);
		ck_assert_str_eq(x->json, y->json);
		ck_assert_int_eq(x->group, y->group);
		ck_assert_uint_eq(x->size, sizeof *x);
		ck_assert(!x->name == !y->name);
		if (x->name)
			ck_assert_str_eq(x->name, y->name);
		if (sh->fields)
			same_fields(sh->fields, sh->n_fields,
			            *(void *const *)((const char *)x + sh->item_ptr_off),
			            *(void *const *)((const char *)y + sh->item_ptr_off));
		ck_assert_uint_eq(group_data_at(a, i), group_data_at(b, i));
		ck_assert_uint_lt(a->item_pool[i], a->n_pools);
	}
	ck_assert_uint_le(a->n_pools, GD_MAX_POOLS);
	char md5[33];
	ck_assert_int_eq(model_identity(b, md5), 0);
	ck_assert_str_eq(a->md5, md5);
	size_t json = 0;
	for (size_t i = 0; i < a->n_items; i++)
		json += a->items[i].json_len;
	ck_assert_uint_eq(a->json_bytes, json);
}

/* The delta `next` carries from `prev` (it was made from it) is the merge of both key
 * indexes, entry by entry and pointer by pointer. */
static void assert_carried_is_the_merge(struct group_data *prev, struct group_data *next)
{
	struct diff carried, merged;
	struct gw_err err;
	ck_assert_ptr_eq(group_data_delta(next, prev), &next->delta);
	ck_assert_int_eq(diff_build(&carried, next->group, prev, next, &err), 0);
	ck_assert_int_eq(carried.carried, 1);
	const struct group_data *pred = next->delta.pred;
	next->delta.pred = NULL; /* the same versions, merged */
	ck_assert_int_eq(diff_build(&merged, next->group, prev, next, &err), 0);
	next->delta.pred = pred;
	ck_assert_int_eq(merged.carried, 0);
	const struct diff *c = &carried, *m = &merged;
	ck_assert_uint_eq(c->n_added, m->n_added);
	ck_assert_uint_eq(c->n_updated, m->n_updated);
	ck_assert_uint_eq(c->n_removed, m->n_removed);
	for (size_t i = 0; i < c->n_added; i++)
		ck_assert_ptr_eq(c->added[i], m->added[i]);
	for (size_t i = 0; i < c->n_removed; i++)
		ck_assert_ptr_eq(c->removed[i], m->removed[i]);
	for (size_t i = 0; i < c->n_updated; i++) {
		ck_assert_ptr_eq(c->updated[i].old_item, m->updated[i].old_item);
		ck_assert_ptr_eq(c->updated[i].new_item, m->updated[i].new_item);
	}
	ck_assert_ptr_eq(c->to, m->to);
	ck_assert_int_eq(c->confirmed_only, m->confirmed_only);
	diff_free(&carried);
	diff_free(&merged);
	/* a version that was not the predecessor gets the merge */
	ck_assert_ptr_null(group_data_delta(next, next));
}

/* The truth: an ordered list of (key, JSON) kept by hand. */
struct truth {
	char *key[512];
	char *json[512];
	size_t n;
};

static long truth_find(const struct truth *t, const char *key)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->key[i], key) == 0)
			return (long)i;
	return -1;
}

static void truth_remove(struct truth *t, size_t i)
{
	free(t->key[i]);
	free(t->json[i]);
	memmove(&t->key[i], &t->key[i + 1], (t->n - i - 1) * sizeof t->key[0]);
	memmove(&t->json[i], &t->json[i + 1], (t->n - i - 1) * sizeof t->json[0]);
	t->n--;
}

static void truth_insert(struct truth *t, size_t i, const char *key, const char *json)
{
	memmove(&t->key[i + 1], &t->key[i], (t->n - i) * sizeof t->key[0]);
	memmove(&t->json[i + 1], &t->json[i], (t->n - i) * sizeof t->json[0]);
	t->key[i] = strdup(key);
	t->json[i] = strdup(json);
	t->n++;
}

static void truth_free(struct truth *t)
{
	while (t->n)
		truth_remove(t, t->n - 1);
}

/* The truth parsed whole, as a fresh version would be. */
static struct group_data *truth_parse(const struct truth *t)
{
	struct strbuf b = {0};
	strbuf_add(&b, "[", 1);
	for (size_t i = 0; i < t->n; i++) {
		if (i)
			strbuf_add(&b, ",", 1);
		strbuf_adds(&b, t->json[i]);
	}
	strbuf_add(&b, "]", 1);
	char *text = strbuf_finish(&b);
	struct group_data *gd = items(GW_GROUP_RULE, text);
	free(text);
	return gd;
}

static void rule_json(char *buf, size_t cap, unsigned key, unsigned version)
{
	snprintf(buf, cap,
	         "{\"id\":\"r%03u\",\"name\":\"rule %u v%u\",\"pluginName\":\"divide\","
	         "\"selectorId\":\"s%u\",\"sort\":%u,\"enabled\":%s,\"matchMode\":%u,"
	         "\"conditionDataList\":[{\"paramType\":\"uri\",\"operator\":\"=\","
	         "\"paramName\":\"/\",\"paramValue\":\"/p%u/%u\"}]}",
	         key, key, version, key % 7, version % 100, version % 2 ? "true" : "false",
	         version % 2, key, version);
}

/* 400 events of 1 to 6 upserts and deletes on a group of up to 120 rules, by key as the
 * WebSocket source makes them; after each, the patched version is the fresh parse of the
 * same list. */
START_TEST(random_patches_equal_a_whole_parse)
{
	srand(1234);
	struct truth t = {0};
	struct group_data *held = NULL;
	char json[512], key[16];
	unsigned version = 0;
	for (int round = 0; round < 400; round++) {
		int n = 1 + rand() % 6;
		struct strbuf b = {0};
		const char *dels[8];
		char delkeys[8][16];
		size_t nd = 0, nu = 0;
		char upkeys[8][16];
		strbuf_add(&b, "[", 1);
		for (int k = 0; k < n; k++) {
			unsigned id = (unsigned)(rand() % 120);
			snprintf(key, sizeof key, "r%03u", id);
			int dup = 0;
			for (size_t j = 0; j < nu; j++)
				dup |= strcmp(upkeys[j], key) == 0;
			if (rand() % 3 == 0) {
				snprintf(delkeys[nd], sizeof delkeys[nd], "%s", key);
				dels[nd] = delkeys[nd];
				nd++;
			} else if (!dup) {
				rule_json(json, sizeof json, id, ++version);
				strbuf_addf(&b, "%s%s", nu ? "," : "", json);
				snprintf(upkeys[nu++], sizeof upkeys[0], "%s", key);
			}
		}
		strbuf_add(&b, "]", 1);
		char *text = strbuf_finish(&b);
		struct group_data *up = items(GW_GROUP_RULE, text);
		/* the truth: deletes of keys not upserted, replacements in place, appends */
		for (size_t d = 0; d < nd; d++) {
			long at = truth_find(&t, dels[d]);
			if (at >= 0 && !group_data_find(up, dels[d]))
				truth_remove(&t, (size_t)at);
		}
		for (size_t u = 0; u < up->n_items; u++) {
			long at = truth_find(&t, item_key(&up->items[u]));
			if (at >= 0) {
				free(t.json[at]);
				t.json[at] = strdup(up->items[u].json);
			} else {
				truth_insert(&t, t.n, item_key(&up->items[u]), up->items[u].json);
			}
		}
		struct group_data *next = patch(held, up, dels, nd, 0, round);
		struct group_data *fresh = truth_parse(&t);
		if (next) {
			assert_same_version(next, fresh);
			if (held)
				assert_carried_is_the_merge(held, next);
			group_data_unref(held);
			held = next;
		} else if (held) {
			assert_same_version(held, fresh);
		} else {
			ck_assert_uint_eq(t.n, 0); /* deletes of nothing */
		}
		group_data_unref(fresh);
		group_data_unref(up);
		free(text);
	}
	/* a full list of the same items makes no version; the identity was kept all along */
	struct group_data *whole = truth_parse(&t);
	ck_assert_ptr_null(patch(held, whole, NULL, 0, 1, 10000));
	group_data_unref(whole);
	group_data_unref(held);
	truth_free(&t);
}
END_TEST

/* Positional edits as the path pools make them (inserts in the middle, replaces that
 * change the key, removals), at random: the edited version is the fresh parse of the list
 * edited by hand, and two items with one key are refused. */
START_TEST(random_positional_edits_equal_a_whole_parse)
{
	srand(99);
	struct truth t = {0};
	struct group_data *held = NULL;
	char json[512];
	unsigned version = 0;
	for (int round = 0; round < 300; round++) {
		/* a few edits at sorted positions of held */
		size_t n_prev = held ? held->n_items : 0;
		int n = 1 + rand() % 5;
		struct edit e[8];
		size_t ne = 0, last = 0;
		int taken = 0;
		struct strbuf b = {0};
		unsigned ids[8];
		size_t nu = 0;
		strbuf_add(&b, "[", 1);
		for (int k = 0; k < n; k++) {
			size_t at = last + (size_t)(rand() % 4);
			if (at > n_prev)
				at = n_prev;
			if (at == last && taken && ++at > n_prev)
				continue; /* nothing may follow a replace or remove at one place */
			if (at > last)
				taken = 0;
			int op = rand() % 3;
			if (at == n_prev)
				op = EDIT_INSERT;
			last = at;
			if (op != EDIT_INSERT)
				taken = 1;
			e[ne] = (struct edit){at, (enum edit_op)op, NULL};
			if (op != EDIT_REMOVE) {
				ids[nu] = (unsigned)(rand() % 150);
				rule_json(json, sizeof json, ids[nu], ++version);
				strbuf_addf(&b, "%s%s", nu ? "," : "", json);
				nu++;
			}
			ne++;
		}
		strbuf_add(&b, "]", 1);
		char *text = strbuf_finish(&b);
		struct group_data *up = NULL;
		struct gw_err err = {0};
		if (model_parse_items(GW_GROUP_RULE, text, strlen(text), "kv", held, &up, &err) !=
		    0) {
			free(text); /* two new items with one key: not an edit */
			continue;
		}
		/* the items in the edits' order; the truth edited the same way */
		struct truth nt = {0};
		size_t pos = 0, j = 0;
		for (size_t k = 0; k <= ne; k++) {
			size_t upto = k < ne ? e[k].at : n_prev;
			for (; pos < upto; pos++)
				truth_insert(&nt, nt.n, t.key[pos], t.json[pos]);
			if (k == ne)
				break;
			if (e[k].op != EDIT_REMOVE) {
				e[k].item = &up->items[j++];
				truth_insert(&nt, nt.n, item_key(e[k].item), e[k].item->json);
			}
			if (e[k].op != EDIT_INSERT)
				pos++;
		}
		int unique = 1;
		for (size_t a = 0; a < nt.n; a++)
			for (size_t c = a + 1; c < nt.n; c++)
				unique &= strcmp(nt.key[a], nt.key[c]) != 0;
		struct group_data *next = NULL;
		int rc = held ? model_edit(held, up, e, ne, &next, &err)
		              : model_edit(NULL, up, e, ne, &next, &err);
		if (!unique) {
			ck_assert_int_eq(rc, -1);
			ck_assert_msg(strstr(err.msg, "duplicate key"), "%s", err.msg);
			truth_free(&nt);
		} else {
			ck_assert_msg(rc == 0, "%s", err.msg);
			truth_free(&t);
			t = nt;
			struct group_data *fresh = truth_parse(&t);
			assert_same_version(next, fresh);
			if (held)
				assert_carried_is_the_merge(held, next);
			group_data_unref(fresh);
			group_data_unref(held);
			held = next;
		}
		group_data_unref(up);
		free(text);
	}
	group_data_unref(held);
	truth_free(&t);
}
END_TEST

/* Thousands of one-item events each leave a pool behind; the version never references
 * more than GD_MAX_POOLS of them, nor keeps replaced items without bound. */
START_TEST(stores_stay_bounded_over_many_patches)
{
	char json[512];
	struct strbuf b = {0};
	strbuf_add(&b, "[", 1);
	for (unsigned i = 0; i < 2000; i++) {
		rule_json(json, sizeof json, i, 0);
		strbuf_addf(&b, "%s%s", i ? "," : "", json);
	}
	strbuf_add(&b, "]", 1);
	char *text = strbuf_finish(&b);
	struct group_data *first = items(GW_GROUP_RULE, text);
	free(text);
	struct group_data *held = patch(NULL, first, NULL, 0, 1, 1);
	group_data_unref(first);
	for (unsigned k = 1; k <= 3000; k++) {
		unsigned id = (k * 7919u) % 2000;
		rule_json(json, sizeof json, id, k);
		char one[600];
		snprintf(one, sizeof one, "[%s]", json);
		struct group_data *up = items(GW_GROUP_RULE, one);
		struct group_data *next = patch(held, up, NULL, 0, 0, k + 1);
		ck_assert_ptr_nonnull(next);
		assert_carried_is_the_merge(held, next);
		ck_assert_uint_le(next->n_pools, GD_MAX_POOLS);
		size_t bytes = 0;
		for (size_t s = 0; s < next->n_pools; s++)
			bytes += gd_pool_bytes(next->pools[s]);
		ck_assert_uint_le(bytes, 4 * next->json_bytes + (1u << 20) + 64 * 1024);
		group_data_unref(up);
		group_data_unref(held);
		held = next;
	}
	char md5[33];
	ck_assert_int_eq(model_identity(held, md5), 0);
	ck_assert_str_eq(held->md5, md5);
	group_data_unref(held);
}
END_TEST

/* A full list (MYSELF, a REFRESH that replaces) carries its delta too: reordered, one item
 * changed, one gone, one new, one byte-identical but parsed again (no update). */
START_TEST(a_full_list_carries_its_delta)
{
	struct group_data *l1 = items(
	    GW_GROUP_RULE, "[" R("a", "1") "," R("b", "1") "," R("c", "1") "," R("d", "1") "]");
	struct group_data *v1 = patch(NULL, l1, NULL, 0, 1, 1);
	struct group_data *l2 = items(
	    GW_GROUP_RULE, "[" R("d", "1") "," R("b", "2") "," R("e", "1") "," R("a", "1") "]");
	struct group_data *v2 = patch(v1, l2, NULL, 0, 1, 2);
	ck_assert_ptr_nonnull(v2);
	assert_carried_is_the_merge(v1, v2);
	const struct gd_delta *d = group_data_delta(v2, v1);
	ck_assert_uint_eq(d->n_added, 1);
	ck_assert_str_eq(item_key(d->added[0]), "e");
	ck_assert_uint_eq(d->n_updated, 1);
	ck_assert_str_eq(item_key(d->updated[0].new_item), "b");
	ck_assert_uint_eq(d->n_removed, 1);
	ck_assert_str_eq(item_key(d->removed[0]), "c");
	ck_assert_ptr_eq(d->removed[0], &v1->items[2]); /* the predecessor's own item */
	group_data_unref(l1);
	group_data_unref(l2);
	group_data_unref(v1);
	group_data_unref(v2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("patch");
	TCase *tc = tcase_create("patch");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, upsert_delete_replace);
	tcase_add_test(tc, identity_is_the_item_sets_whatever_the_path);
	tcase_add_test(tc, a_version_in_key_order_keeps_no_key_index);
	tcase_add_test(tc, a_change_that_moves_no_key_shares_the_key_index);
	tcase_add_test(tc, items_refused);
	tcase_add_test(tc, per_plugin_refresh);
	tcase_add_test(tc, a_renamed_plugin_replaces_the_held_one_with_its_id);
	tcase_add_test(tc, random_patches_equal_a_whole_parse);
	tcase_add_test(tc, random_positional_edits_equal_a_whole_parse);
	tcase_add_test(tc, stores_stay_bounded_over_many_patches);
	tcase_add_test(tc, a_full_list_carries_its_delta);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
