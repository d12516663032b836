/*
 * ShenYu's node layout (source/node/node.h): the keys the admin writes to Nacos, Apollo and
 * Polaris, in the order it writes them (PROTOCOL-PUSH.md 4.1), fed by hand, checked through
 * the store they reach and through the keys the map asks a transport to read.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abiview.h"
#include "source/node/node.h"
#include "store/store.h"

#define NS "ns1."

struct fix {
	struct gw_log *log;
	char log_path[64];
	struct store *st;
	struct ingest *in;
	struct node_map *m;
	int64_t now;
};

static const enum gw_group all_groups[] = {
    GW_GROUP_PLUGIN,
    GW_GROUP_SELECTOR,
    GW_GROUP_RULE,
    GW_GROUP_APP_AUTH,
    GW_GROUP_META_DATA,
    GW_GROUP_PROXY_SELECTOR,
    GW_GROUP_DISCOVER_UPSTREAM,
};

static void fix_init_as(struct fix *f, enum node_layout layout, const char *prefix, int complete)
{
	memset(f, 0, sizeof *f);
	struct gw_err err = {0};
	snprintf(f->log_path, sizeof f->log_path, "/tmp/check_node.%d.log", (int)getpid());
	unlink(f->log_path);
	ck_assert_int_eq(gw_log_open(&f->log, GW_LOG_INFO, GW_LOG_TEXT, f->log_path, &err), 0);
	f->st = store_new();
	f->in = ingest_new(f->st, f->log);
	struct node_args a = {layout, prefix, NULL,    complete,           all_groups, 7,
	                      f->in,  f->log, "nacos", "nacos://h:8848/t", 100};
	f->m = node_new(&a, &err);
	ck_assert_ptr_nonnull(f->m);
	f->now = 1000;
}

static void fix_init(struct fix *f)
{
	fix_init_as(f, NODE_LAYOUT_NODES, NS, 0);
}

static void fix_free(struct fix *f)
{
	node_free(f->m);
	ingest_free(f->in);
	store_free(f->st);
	gw_log_close(f->log);
	unlink(f->log_path);
}

/* The held keys of a group in key order, "a,b"; "-" if nothing is held. */
static const char *held(struct fix *f, enum gw_group g)
{
	static char buf[1024];
	struct group_data *gd = store_get(f->st, g);
	if (!gd)
		return "-";
	buf[0] = '\0';
	for (size_t i = 0; i < gd->n_items; i++) {
		strcat(buf, i ? "," : "");
		strcat(buf, item_key(&gd->items[group_data_at(gd, i)]));
	}
	group_data_unref(gd);
	return buf;
}

static void put(struct fix *f, const char *key, const char *value)
{
	ck_assert_int_ge(
	    node_put(f->m, key, strlen(key), value, value ? strlen(value) : 0, NULL, f->now), 0);
}

/* Events settle: flush everything due after them. */
static void settle(struct fix *f)
{
	f->now += 1000;
	node_flush(f->m, f->now, 0);
}

static void full_put(struct fix *f, const char *key, const char *value)
{
	ck_assert_int_eq(
	    node_full_put(f->m, key, strlen(key), value, value ? strlen(value) : 0, "t"), 0);
}

static char *plugin(const char *name)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, 256, "{\"id\":\"id-%s\",\"name\":\"%s\",\"enabled\":true,\"sort\":1}", name,
	         name);
	return b;
}

static char *selector(const char *id)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, 256,
	         "{\"id\":\"%s\",\"pluginName\":\"divide\",\"name\":\"s%s\",\"enabled\":true,"
	         "\"type\":1,\"matchMode\":0,\"continued\":true,\"conditionList\":[]}",
	         id, id);
	return b;
}

static char *rule(const char *sel, const char *id)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, 256,
	         "{\"id\":\"%s\",\"pluginName\":\"divide\",\"selectorId\":\"%s\",\"name\":\"r%s\","
	         "\"enabled\":true,\"matchMode\":0,\"conditionDataList\":[]}",
	         id, sel, id);
	return b;
}

static char *app(const char *key)
{
	static char buf[8][256];
	static int k;
	char *b = buf[k++ % 8];
	snprintf(b, 256, "{\"appKey\":\"%s\",\"appSecret\":\"x\",\"enabled\":true,\"open\":true}",
	         key);
	return b;
}

/* A full read as a per-key transport does it: read every unread wanted key from `store`
 * (a NULL-terminated key, value list) until none is unread. */
struct kv {
	const char *k, *v;
};
static const struct kv *reading;
static struct fix *reading_fix;
static int rounds_read;

static void read_one(void *ctx, const char *key, size_t klen, const char *tag, int present,
                     int read)
{
	(void)ctx, (void)tag, (void)present, (void)read;
	const char *v = NULL;
	for (const struct kv *p = reading; p->k; p++)
		if (strlen(p->k) == klen && memcmp(p->k, key, klen) == 0)
			v = p->v;
	/* the map may not change while it is walked: queue, then put */
	char **q = ctx;
	size_t i = 0;
	while (q[i])
		i++;
	q[i] = malloc(klen + 1 + (v ? strlen(v) : 0) + 1);
	memcpy(q[i], key, klen);
	q[i][klen] = '\0';
	strcpy(q[i] + klen + 1, v ? v : "");
}

static int read_unread(struct fix *f, const struct kv *store, int full)
{
	reading = store;
	reading_fix = f;
	int total = 0;
	for (;;) {
		char *q[4096] = {0};
		size_t n = node_unread(f->m, read_one, q);
		if (!n)
			break;
		rounds_read++;
		for (size_t i = 0; q[i]; i++) {
			size_t kl = strlen(q[i]);
			const char *v = q[i] + kl + 1;
			if (full)
				ck_assert_int_eq(
				    node_full_put(f->m, q[i], kl, *v ? v : NULL, strlen(v), "t"),
				    0);
			else
				put(f, q[i], *v ? v : NULL);
			free(q[i]);
			total++;
		}
	}
	return total;
}

static const struct kv store1[] = {
    {NS "plugin.list", "[\"divide\"]"},
    {NS "plugin.divide", NULL},
    {NS "selector.divide.list", "[\"11\",\"12\"]"},
    {NS "selector.divide.11", NULL},
    {NS "selector.divide.12", NULL},
    {NS "rule.divide.11.list", "[\"111\"]"},
    {NS "rule.divide.11.111", NULL},
    {NS "auth.list", "[\"app1\"]"},
    {NS "auth.app1", NULL},
    {NS "auth.ghost", NULL}, /* REFRESH left it: no list names it */
    {NULL, NULL},
};

static struct kv *store1_filled(void)
{
	static struct kv s[16];
	memcpy(s, store1, sizeof store1);
	s[1].v = plugin("divide");
	s[3].v = selector("11");
	s[4].v = selector("12");
	s[6].v = rule("11", "111");
	s[8].v = app("app1");
	s[9].v = app("ghost");
	return s;
}

static void start(struct fix *f)
{
	ck_assert_int_eq(node_full_begin(f->m), 0);
	read_unread(f, store1_filled(), 1);
	ck_assert_int_ge(node_full_end(f->m, KV_FULL_START, f->now), 7);
}

START_TEST(a_full_read_walks_the_lists_and_the_list_decides_membership)
{
	struct fix f;
	fix_init(&f);
	rounds_read = 0;
	start(&f);
	/* roots, then what they name, then what those name: one round per level */
	ck_assert_int_eq(rounds_read, 4);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111");
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1"); /* the ghost key is not read */
	ck_assert_str_eq(held(&f, GW_GROUP_META_DATA), "");
	struct node_stats s;
	node_stats(f.m, &s);
	/* plugin, auth, meta lists; plugin.divide, selector, proxy, discovery lists of divide;
	 * 2 selectors, 2 rule lists, 1 rule; auth.app1 */
	ck_assert_uint_eq(s.wanted, 3 + 4 + 2 + 2 + 1 + 1);
	fix_free(&f);
}
END_TEST

START_TEST(an_item_key_no_list_names_is_held_aside_until_one_does)
{
	struct fix f;
	fix_init_as(&f, NODE_LAYOUT_NODES, NS, 1);
	start(&f);
	/* the admin writes the item key, then the list key */
	put(&f, NS "auth.app2", app("app2"));
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1");
	struct node_stats s;
	node_stats(f.m, &s);
	ck_assert_uint_eq(s.aside, 1);
	put(&f, NS "auth.list", "[\"app1\",\"app2\"]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1,app2");
	node_stats(f.m, &s);
	ck_assert_uint_eq(s.aside, 0);
	fix_free(&f);
}
END_TEST

START_TEST(a_list_only_change_removes_and_restores_members_whose_keys_survive)
{
	struct fix f;
	fix_init_as(&f, NODE_LAYOUT_NODES, NS, 1);
	start(&f);
	put(&f, NS "selector.divide.list", "[\"11\"]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111");
	put(&f, NS "selector.divide.list", "[\"12\",\"11\"]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	/* a selector leaving its list takes its rule list's rules along */
	put(&f, NS "selector.divide.list", "[\"12\"]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "12");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "");
	/* and a plugin leaving plugin.list everything below it */
	put(&f, NS "plugin.list", "[]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "");
	fix_free(&f);
}
END_TEST

START_TEST(refresh_deleting_by_bare_name_still_removes_the_item)
{
	/* ShenYu's REFRESH of APP_AUTH without app1: publishes the items, deletes "app1" (the
	 * bare name, not the key), then overwrites the list: the key ns1.auth.app1 survives */
	struct fix f;
	fix_init(&f);
	start(&f);
	put(&f, NS "auth.app3", app("app3"));
	put(&f, "app1", NULL);
	put(&f, NS "auth.list", "[\"app3\"]");
	/* a per-key transport reads what the list now names */
	read_unread(&f, (const struct kv[]){{NS "auth.app3", app("app3")}, {NULL, NULL}}, 0);
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app3");
	/* the surviving key changes: nobody watches it and nothing changes */
	put(&f, NS "auth.app1", app("app1"));
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app3");
	fix_free(&f);
}
END_TEST

static size_t count_fn_n;
static char count_fn_keys[4096];
static void count_fn(void *ctx, const char *key, size_t klen, const char *tag, int present,
                     int read)
{
	(void)ctx, (void)tag, (void)present, (void)read;
	count_fn_n++;
	strncat(count_fn_keys, key, klen);
	strcat(count_fn_keys, " ");
}

START_TEST(the_wanted_set_follows_the_lists_and_forgets_what_left_them)
{
	struct fix f;
	fix_init(&f);
	start(&f);
	count_fn_n = 0;
	ck_assert_uint_eq(node_unread(f.m, count_fn, NULL), 0);
	uint64_t gen = node_wanted_gen(f.m);
	/* a new rule in a rule list: the rule's key is wanted and unread */
	put(&f, NS "rule.divide.11.list", "[\"111\",\"112\"]");
	ck_assert_uint_ne(node_wanted_gen(f.m), gen);
	count_fn_keys[0] = '\0';
	ck_assert_uint_eq(node_unread(f.m, count_fn, NULL), 1);
	ck_assert_str_eq(count_fn_keys, NS "rule.divide.11.112 ");
	put(&f, NS "rule.divide.11.112", rule("11", "112"));
	ck_assert_uint_eq(node_unread(f.m, count_fn, NULL), 0);
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111,112");
	/* a selector gone: its key and its rule list are not wanted any more */
	struct node_stats before, after;
	node_stats(f.m, &before);
	put(&f, NS "selector.divide.list", "[\"12\"]");
	node_stats(f.m, &after);
	ck_assert_uint_eq(after.wanted, before.wanted - 4); /* selector 11, its list, 2 rules */
	/* back again: read again (not watched while away, so what was read is stale) */
	put(&f, NS "selector.divide.list", "[\"11\",\"12\"]");
	count_fn_keys[0] = '\0';
	ck_assert_uint_eq(node_unread(f.m, count_fn, NULL), 2);
	ck_assert_ptr_nonnull(strstr(count_fn_keys, NS "selector.divide.11 "));
	ck_assert_ptr_nonnull(strstr(count_fn_keys, NS "rule.divide.11.list "));
	/* wanted keys hand back their tags: absent ones "" */
	count_fn_n = 0;
	ck_assert_uint_eq(node_wanted(f.m, count_fn, NULL), count_fn_n);
	fix_free(&f);
}
END_TEST

START_TEST(a_resync_finds_what_changed_unseen_and_counts_it)
{
	struct fix f;
	fix_init(&f);
	start(&f);
	struct kv *s = store1_filled();
	s[2].v = "[\"12\"]"; /* selector 11 left while the watch was away */
	ck_assert_int_eq(node_full_begin(f.m), 0);
	read_unread(&f, s, 1);
	ck_assert_int_eq(node_full_end(f.m, KV_FULL_RESYNC, f.now), 2); /* SELECTOR, RULE */
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "12");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "");
	struct node_stats st;
	node_stats(f.m, &st);
	ck_assert_uint_eq(st.mirror.repairs, 2);
	fix_free(&f);
}
END_TEST

START_TEST(a_bad_list_keeps_its_last_good_members)
{
	struct fix f;
	fix_init(&f);
	start(&f);
	put(&f, NS "selector.divide.list", "{\"not\":\"a list\"}");
	put(&f, NS "auth.list", "[1,2]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1");
	struct node_stats st;
	node_stats(f.m, &st);
	ck_assert_uint_eq(st.bad_list, 2);
	/* blank is a delete (ShenYu's gateway: blank content means deleted) */
	put(&f, NS "auth.list", "  ");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "");
	fix_free(&f);
}
END_TEST

START_TEST(the_prefix_is_the_configured_one)
{
	struct fix f;
	fix_init_as(&f, NODE_LAYOUT_NODES, "", 1);
	count_fn_keys[0] = '\0';
	node_wanted(f.m, count_fn, NULL);
	ck_assert_ptr_nonnull(strstr(count_fn_keys, "plugin.list "));
	ck_assert_ptr_null(strstr(count_fn_keys, NS));
	node_full_begin(f.m);
	full_put(&f, "plugin.list", "[\"divide\"]");
	full_put(&f, "plugin.divide", plugin("divide"));
	full_put(&f, NS "plugin.list", "[\"waf\"]"); /* another namespace's: not ours */
	full_put(&f, NS "plugin.waf", plugin("waf"));
	node_full_end(f.m, KV_FULL_START, f.now);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide");
	fix_free(&f);
}
END_TEST

START_TEST(whole_documents_explode_into_items_and_deletes_apply)
{
	struct fix f;
	fix_init_as(&f, NODE_LAYOUT_WHOLE, NULL, 0);
	char doc[1024];
	count_fn_keys[0] = '\0';
	ck_assert_uint_eq(node_wanted(f.m, count_fn, NULL), 7);
	ck_assert_ptr_nonnull(strstr(count_fn_keys, "shenyu.selector.json "));
	node_full_begin(f.m);
	snprintf(doc, sizeof doc, "{\"divide\":%s,\"waf\":%s}", plugin("divide"), plugin("waf"));
	full_put(&f, "shenyu.plugin.json", doc);
	snprintf(doc, sizeof doc, "{\"divide\":[%s,%s]}", selector("11"), selector("12"));
	full_put(&f, "shenyu.selector.json", doc);
	snprintf(doc, sizeof doc, "{\"11\":[%s,%s]}", rule("11", "111"), rule("11", "112"));
	full_put(&f, "shenyu.rule.json", doc);
	node_full_end(f.m, KV_FULL_START, f.now);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide,waf");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111,112");
	/* the admin's new document lacks selector 12 and rule 111: both are gone */
	snprintf(doc, sizeof doc, "{\"divide\":[%s]}", selector("11"));
	put(&f, "shenyu.selector.json", doc);
	snprintf(doc, sizeof doc, "{\"11\":[%s]}", rule("11", "112"));
	put(&f, "shenyu.rule.json", doc);
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "112");
	/* a document that is not one keeps the last good items */
	put(&f, "shenyu.plugin.json", "[1,2]");
	put(&f, "shenyu.selector.json", "{\"divide\":[1]}");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide,waf");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11");
	/* and a document deleted deletes its items */
	put(&f, "shenyu.plugin.json", NULL);
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "");
	fix_free(&f);
}
END_TEST

START_TEST(a_complete_feed_keeps_keys_no_list_names)
{
	/* Apollo gives every key at each read: the first read already has the ghost */
	struct fix f;
	fix_init_as(&f, NODE_LAYOUT_NODES, NS, 1);
	node_full_begin(f.m);
	struct kv *s = store1_filled();
	for (struct kv *p = s; p->k; p++)
		full_put(&f, p->k, p->v);
	node_full_end(f.m, KV_FULL_START, f.now);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1");
	struct node_stats st;
	node_stats(f.m, &st);
	ck_assert_uint_eq(st.aside, 1);
	/* the list names the ghost: it is live at once, without a read */
	put(&f, NS "auth.list", "[\"app1\",\"ghost\"]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1,ghost");
	/* a full read without a key deletes it */
	node_full_begin(f.m);
	for (struct kv *p = s; p->k; p++)
		if (strcmp(p->k, NS "auth.ghost") != 0)
			full_put(&f, p->k,
			         strcmp(p->k, NS "auth.list") ? p->v : "[\"app1\",\"ghost\"]");
	node_full_end(f.m, KV_FULL_RECOVER, f.now);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "app1");
	fix_free(&f);
}
END_TEST

START_TEST(a_complete_feed_may_give_a_list_before_the_list_naming_it)
{
	/* Apollo's key-by-key diff comes in no particular order: a selector's rule list and
	 * rule first, the selector list naming the selector last */
	struct fix f;
	fix_init_as(&f, NODE_LAYOUT_NODES, NS, 1);
	start(&f);
	put(&f, NS "rule.divide.13.list", "[\"131\"]");
	put(&f, NS "rule.divide.13.131", rule("13", "131"));
	put(&f, NS "selector.divide.13", selector("13"));
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111");
	put(&f, NS "selector.divide.list", "[\"11\",\"12\",\"13\"]");
	settle(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12,13");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111,131");
	fix_free(&f);
}
END_TEST

START_TEST(half_a_first_read_offers_nothing)
{
	struct fix f;
	fix_init(&f);
	node_full_begin(f.m);
	full_put(&f, NS "plugin.list", "[\"divide\"]");
	full_put(&f, NS "plugin.divide", plugin("divide"));
	ck_assert_int_eq(node_full_abort(f.m, f.now), 0);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "-");
	/* the next full read delivers everything, what the aborted one read included */
	start(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide");
	/* after a delivered read, an aborted one keeps what it read */
	node_full_begin(f.m);
	full_put(&f, NS "auth.list", "[]");
	ck_assert_int_ge(node_full_abort(f.m, f.now), 1);
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "111");
	fix_free(&f);
}
END_TEST

START_TEST(a_one_item_change_is_one_event)
{
	struct fix f;
	fix_init(&f);
	start(&f);
	struct node_stats a, b;
	node_stats(f.m, &a);
	put(&f, NS "rule.divide.11.111", rule("11", "111x"));
	put(&f, NS "rule.divide.11.111", rule("11", "111")); /* back: nothing to build */
	put(&f, NS "selector.divide.12", selector("12"));    /* the same bytes: no event */
	settle(&f);
	node_stats(f.m, &b);
	ck_assert_uint_eq(b.mirror.events - a.mirror.events, 2);
	fix_free(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("node");
	TCase *tc = tcase_create("node");
	tcase_add_test(tc, a_full_read_walks_the_lists_and_the_list_decides_membership);
	tcase_add_test(tc, an_item_key_no_list_names_is_held_aside_until_one_does);
	tcase_add_test(tc, a_list_only_change_removes_and_restores_members_whose_keys_survive);
	tcase_add_test(tc, refresh_deleting_by_bare_name_still_removes_the_item);
	tcase_add_test(tc, the_wanted_set_follows_the_lists_and_forgets_what_left_them);
	tcase_add_test(tc, a_resync_finds_what_changed_unseen_and_counts_it);
	tcase_add_test(tc, a_bad_list_keeps_its_last_good_members);
	tcase_add_test(tc, the_prefix_is_the_configured_one);
	tcase_add_test(tc, whole_documents_explode_into_items_and_deletes_apply);
	tcase_add_test(tc, a_complete_feed_keeps_keys_no_list_names);
	tcase_add_test(tc, a_complete_feed_may_give_a_list_before_the_list_naming_it);
	tcase_add_test(tc, half_a_first_read_offers_nothing);
	tcase_add_test(tc, a_one_item_change_is_one_event);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
