/*
 * The path-store mirror (source/kv/mirror.h) and layout (layout.h): what node events and
 * full reads turn into, checked through the store they reach. No server: the events are
 * the ones ShenYu's admin causes (PROTOCOL-PUSH.md 2.2), fed by hand.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abiview.h"
#include "core/clock.h"
#include "model/edit.h"
#include "source/kv/mirror.h"
#include "store/store.h"

#define ROOT "/ns1/shenyu"

struct fix {
	struct kv_layout layout;
	struct gw_log *log;
	char log_path[64];
	struct store *st;
	struct ingest *in;
	struct kv_mirror *m;
};

static void fix_init(struct fix *f, int64_t settle_ms)
{
	memset(f, 0, sizeof *f);
	static const enum gw_group groups[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE};
	struct gw_err err = {0};
	ck_assert_int_eq(kv_layout_init(&f->layout, ROOT "/", groups, 3, &err), 0);
	snprintf(f->log_path, sizeof f->log_path, "/tmp/check_kv_mirror.%d.log", (int)getpid());
	unlink(f->log_path);
	ck_assert_int_eq(gw_log_open(&f->log, GW_LOG_INFO, GW_LOG_TEXT, f->log_path, &err), 0);
	f->st = store_new();
	f->in = ingest_new(f->st, f->log);
	struct kv_mirror_args a = {
	    &f->layout, f->in, f->log, "zookeeper", "zookeeper://z:2181" ROOT, settle_ms};
	f->m = kv_mirror_new(&a, &err);
	ck_assert_ptr_nonnull(f->m);
}

static void fix_free(struct fix *f)
{
	kv_mirror_free(f->m);
	ingest_free(f->in);
	store_free(f->st);
	gw_log_close(f->log);
	unlink(f->log_path);
	kv_layout_free(&f->layout);
}

/* Everything the log holds so far (static buffer). */
static const char *log_text(struct fix *f)
{
	static char buf[16384];
	FILE *in = fopen(f->log_path, "r");
	size_t n = in ? fread(buf, 1, sizeof buf - 1, in) : 0;
	if (in)
		fclose(in);
	buf[n] = '\0';
	return buf;
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

static void put(struct fix *f, const char *path, const char *value, int64_t now)
{
	ck_assert_int_ge(kv_mirror_put(f->m, path, strlen(path), value, strlen(value), now, now),
	                 0);
}

static void full_put(struct fix *f, const char *path, const char *value)
{
	ck_assert_int_eq(kv_mirror_full_put(f->m, path, strlen(path), value, strlen(value), 1), 0);
}

static const char *plugin(const char *name)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, 256, "{\"id\":\"1\",\"name\":\"%s\",\"enabled\":true,\"sort\":1}", name);
	return b;
}

static const char *selector(const char *id, const char *name)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, 256,
	         "{\"id\":\"%s\",\"pluginName\":\"divide\",\"name\":\"%s\",\"enabled\":true,"
	         "\"type\":1,\"matchMode\":0,\"continued\":true,\"conditionList\":[]}",
	         id, name);
	return b;
}

static void start(struct fix *f)
{
	kv_mirror_full_begin(f->m);
	full_put(f, ROOT "/plugin/divide", plugin("divide"));
	full_put(f, ROOT "/selector/divide", ""); /* a ZooKeeper parent: no data */
	full_put(f, ROOT "/selector/divide/11", selector("11", "a"));
	full_put(f, ROOT "/selector/divide/12", selector("12", "b"));
	ck_assert_int_eq(kv_mirror_full_end(f->m, KV_FULL_START, 0), 3);
}

START_TEST(layout_knows_item_paths_and_nothing_else)
{
	struct fix f;
	fix_init(&f, 100);
	const struct kv_layout *l = &f.layout;
#define G(p) kv_layout_group_of(l, p, strlen(p))
	ck_assert_int_eq(G(ROOT "/plugin/divide"), GW_GROUP_PLUGIN);
	ck_assert_int_eq(G(ROOT "/rule/divide/1-2"), GW_GROUP_RULE);
	ck_assert_int_eq(G(ROOT "/selector/divide"), GW_GROUP_SELECTOR); /* an intermediate */
	ck_assert_int_eq(G(ROOT "/plugin"), -1);                         /* the directory */
	ck_assert_int_eq(G(ROOT "/plugin/"), -1);
	ck_assert_int_eq(G(ROOT "/pluginX/divide"), -1);   /* a sibling sharing the prefix */
	ck_assert_int_eq(G(ROOT "/auth/app1"), -1);        /* not configured */
	ck_assert_int_eq(G("/other/shenyu/plugin/a"), -1); /* another namespace */
	ck_assert_str_eq(f.layout.root, ROOT);
#undef G
	fix_free(&f);
}
END_TEST

START_TEST(layout_refuses_ai_proxy_api_key)
{
	struct kv_layout l;
	struct gw_err err = {0};
	enum gw_group g = GW_GROUP_AI_PROXY_API_KEY;
	ck_assert_int_eq(kv_layout_init(&l, ROOT, &g, 1, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "AI_PROXY_API_KEY"));
}
END_TEST

START_TEST(start_up_read_gives_every_group_a_version_empty_ones_too)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), ""); /* held, with no items */
	struct group_data *gd = store_get(f.st, GW_GROUP_SELECTOR);
	/* the item's JSON is exactly the node's bytes */
	ck_assert_str_eq(gd->items[0].json, selector("11", "a"));
	ck_assert_int_eq((int)strlen(gd->md5), 32);
	group_data_unref(gd);
	fix_free(&f);
}
END_TEST

START_TEST(events_wait_for_the_settle_window)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	ck_assert_int_eq(kv_mirror_deadline(f.m), -1);
	put(&f, ROOT "/selector/divide/13", selector("13", "c"), 1000);
	ck_assert_int_eq(kv_mirror_deadline(f.m), 1100);
	put(&f, ROOT "/selector/divide/14", selector("14", "d"), 1050);
	ck_assert_int_eq(kv_mirror_deadline(f.m), 1150); /* quiet for settle after the last */
	ck_assert_int_eq(kv_mirror_flush(f.m, 1149, 0), 0);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_int_eq(kv_mirror_flush(f.m, 1150, 0), 1);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12,13,14");
	ck_assert_int_eq(kv_mirror_deadline(f.m), -1);
	fix_free(&f);
}
END_TEST

START_TEST(a_store_written_without_pause_is_delivered_by_a_hundred_settles)
{
	struct fix f;
	fix_init(&f, 10);
	start(&f);
	char id[16];
	for (int t = 0; t <= 2000; t += 5) {
		snprintf(id, sizeof id, "%d", 100 + t);
		char path[64];
		snprintf(path, sizeof path, ROOT "/selector/divide/%s", id);
		put(&f, path, selector(id, "x"), 1000 + t);
		ck_assert_int_le(kv_mirror_deadline(f.m), 2000);
	}
	ck_assert_int_eq(kv_mirror_flush(f.m, 2000, 0), 1);
	fix_free(&f);
}
END_TEST

START_TEST(a_long_refresh_with_writes_closer_than_settle_is_one_version)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	uint64_t gen = store_generation(f.st);
	/* 5 s of writes, 50 ms apart: delete the subtree, then 100 items one by one */
	kv_mirror_delete_tree(f.m, ROOT "/selector/divide", strlen(ROOT "/selector/divide"), 1000);
	char id[16], path[64];
	for (int i = 0; i < 100; i++) {
		int64_t now = 1050 + 50 * i;
		ck_assert_int_eq(kv_mirror_flush(f.m, now, 0), 0); /* nothing while it goes on */
		snprintf(id, sizeof id, "%d", 11 + i);
		snprintf(path, sizeof path, ROOT "/selector/divide/%s", id);
		put(&f, path, selector(id, i == 1 ? "b" : "a"), now);
	}
	ck_assert_uint_eq(store_generation(f.st), gen);
	ck_assert_int_eq(kv_mirror_flush(f.m, 1050 + 50 * 99 + 100, 0), 1);
	ck_assert_uint_eq(store_generation(f.st), gen + 1);
	fix_free(&f);
}
END_TEST

START_TEST(refresh_delete_then_recreate_is_one_change_with_the_true_delta)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	struct group_data *before = store_get(f.st, GW_GROUP_SELECTOR);
	uint64_t gen = store_generation(f.st);
	/* REFRESH: the plugin's subtree goes, every item comes back, one of them changed */
	ck_assert_int_eq(kv_mirror_delete_tree(f.m, ROOT "/selector/divide",
	                                       strlen(ROOT "/selector/divide"), 1000),
	                 1);
	put(&f, ROOT "/selector/divide/11", selector("11", "a"), 1010);
	put(&f, ROOT "/selector/divide/12", selector("12", "b2"), 1020);
	ck_assert_int_eq(kv_mirror_flush(f.m, 1200, 0), 1);
	ck_assert_uint_eq(store_generation(f.st), gen + 1);
	struct group_data *after = store_get(f.st, GW_GROUP_SELECTOR);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_ptr_nonnull(strstr(after->items[1].json, "\"b2\""));
	ck_assert_str_ne(after->md5, before->md5);
	ck_assert_int_gt(after->last_modify_time, before->last_modify_time);
	group_data_unref(before);
	group_data_unref(after);
	fix_free(&f);
}
END_TEST

START_TEST(an_unchanged_result_delivers_nothing)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	uint64_t gen = store_generation(f.st);
	/* identical bytes: not even dirty */
	ck_assert_int_eq(kv_mirror_put(f.m, ROOT "/plugin/divide", strlen(ROOT "/plugin/divide"),
	                               plugin("divide"), strlen(plugin("divide")), 1, 1000),
	                 0);
	ck_assert_int_eq(kv_mirror_deadline(f.m), -1);
	/* a refresh that puts everything back as it was: dirty, but no version */
	kv_mirror_delete_tree(f.m, ROOT "/selector/divide", strlen(ROOT "/selector/divide"), 1000);
	put(&f, ROOT "/selector/divide/12", selector("12", "b"), 1001);
	put(&f, ROOT "/selector/divide/11", selector("11", "a"), 1002);
	ck_assert_int_eq(kv_mirror_flush(f.m, 5000, 0), 0);
	ck_assert_uint_eq(store_generation(f.st), gen);
	fix_free(&f);
}
END_TEST

START_TEST(deletes_are_applied)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	ck_assert_int_eq(kv_mirror_delete(f.m, ROOT "/selector/divide/11",
	                                  strlen(ROOT "/selector/divide/11"), 1000),
	                 1);
	/* a plugin delete: its node and its selector and rule subtrees */
	kv_mirror_delete_tree(f.m, ROOT "/plugin/divide", strlen(ROOT "/plugin/divide"), 1001);
	kv_mirror_delete_tree(f.m, ROOT "/selector/divide", strlen(ROOT "/selector/divide"), 1002);
	ck_assert_int_eq(kv_mirror_flush(f.m, 2000, 0), 2);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "");
	fix_free(&f);
}
END_TEST

START_TEST(delete_tree_spares_a_sibling_sharing_the_prefix)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	put(&f, ROOT "/plugin/divide2", plugin("divide2"), 1000);
	kv_mirror_delete_tree(f.m, ROOT "/plugin/divide", strlen(ROOT "/plugin/divide"), 1001);
	kv_mirror_flush(f.m, 2000, 0);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide2");
	fix_free(&f);
}
END_TEST

START_TEST(a_malformed_value_keeps_the_last_good_version_until_fixed)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	struct group_data *good = store_get(f.st, GW_GROUP_SELECTOR);
	put(&f, ROOT "/selector/divide/13", "{\"id\":\"13\",", 1000);
	put(&f, ROOT "/selector/divide/14", selector("14", "d"), 1001);
	ck_assert_int_eq(kv_mirror_flush(f.m, 2000, 0), 0);
	struct group_data *now = store_get(f.st, GW_GROUP_SELECTOR);
	ck_assert_ptr_eq(now, good);
	group_data_unref(now);
	ck_assert_ptr_nonnull(
	    strstr(log_text(&f), "refused SELECTOR: " ROOT "/selector/divide/13"));
	struct kv_mirror_stats s;
	kv_mirror_stats(f.m, &s);
	ck_assert_uint_eq(s.refused, 1);
	/* corrected: the group is built again, with both changes */
	put(&f, ROOT "/selector/divide/13", selector("13", "c"), 3000);
	ck_assert_int_eq(kv_mirror_flush(f.m, 4000, 0), 1);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12,13,14");
	group_data_unref(good);
	fix_free(&f);
}
END_TEST

START_TEST(two_nodes_with_one_key_refuse_the_group)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	put(&f, ROOT "/selector/other/11", selector("11", "dup"), 1000);
	ck_assert_int_eq(kv_mirror_flush(f.m, 2000, 0), 0);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,12");
	ck_assert_ptr_nonnull(strstr(log_text(&f), "refused SELECTOR"));
	fix_free(&f);
}
END_TEST

START_TEST(resync_in_step_repairs_nothing_and_a_difference_is_a_counted_repair)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	uint64_t gen = store_generation(f.st);
	kv_mirror_full_begin(f.m);
	full_put(&f, ROOT "/plugin/divide", plugin("divide"));
	full_put(&f, ROOT "/selector/divide/11", selector("11", "a"));
	full_put(&f, ROOT "/selector/divide/12", selector("12", "b"));
	ck_assert_int_eq(kv_mirror_full_end(f.m, KV_FULL_RESYNC, 1000), 0);
	ck_assert_uint_eq(store_generation(f.st), gen);
	struct kv_mirror_stats s;
	kv_mirror_stats(f.m, &s);
	ck_assert_uint_eq(s.repairs, 0);

	/* the store lost 12 and gained 15 behind the watches' back */
	kv_mirror_full_begin(f.m);
	full_put(&f, ROOT "/plugin/divide", plugin("divide"));
	full_put(&f, ROOT "/selector/divide/11", selector("11", "a"));
	full_put(&f, ROOT "/selector/divide/15", selector("15", "e"));
	ck_assert_int_eq(kv_mirror_full_end(f.m, KV_FULL_RESYNC, 2000), 1);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11,15");
	kv_mirror_stats(f.m, &s);
	ck_assert_uint_eq(s.repairs, 1);
	const char *log = log_text(&f);
	ck_assert_ptr_nonnull(strstr(log, "resync repaired SELECTOR: 2 difference(s)"));
	ck_assert_ptr_nonnull(strstr(log, ROOT "/selector/divide/12"));
	ck_assert_ptr_nonnull(strstr(log, ROOT "/selector/divide/15"));
	fix_free(&f);
}
END_TEST

START_TEST(a_recovery_read_delivers_what_changed_while_away)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	kv_mirror_full_begin(f.m);
	full_put(&f, ROOT "/selector/divide/11", selector("11", "a"));
	ck_assert_int_eq(kv_mirror_full_end(f.m, KV_FULL_RECOVER, 1000), 2);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "11");
	struct kv_mirror_stats s;
	kv_mirror_stats(f.m, &s);
	ck_assert_uint_eq(s.repairs, 0);
	fix_free(&f);
}
END_TEST

START_TEST(a_snapshot_version_is_replaced_even_when_equal)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	/* pretend what is held came from the snapshot */
	struct group_data *gd = store_get(f.st, GW_GROUP_PLUGIN);
	struct group_data *copy = group_data_new(GW_GROUP_PLUGIN);
	memcpy(copy->md5, gd->md5, sizeof gd->md5);
	copy->last_modify_time = gd->last_modify_time;
	copy->provisional = 1;
	group_data_unref(gd);
	store_put(f.st, copy);
	group_data_unref(copy); /* the store holds its own reference */
	kv_mirror_full_begin(f.m);
	full_put(&f, ROOT "/plugin/divide", plugin("divide"));
	full_put(&f, ROOT "/selector/divide/11", selector("11", "a"));
	full_put(&f, ROOT "/selector/divide/12", selector("12", "b"));
	ck_assert_int_eq(kv_mirror_full_end(f.m, KV_FULL_START, 0), 1); /* PLUGIN only */
	gd = store_get(f.st, GW_GROUP_PLUGIN);
	ck_assert_int_eq(gd->provisional, 0);
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide");
	group_data_unref(gd);
	fix_free(&f);
}
END_TEST

START_TEST(paths_outside_the_configured_groups_are_ignored)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	ck_assert_int_eq(
	    kv_mirror_put(f.m, ROOT "/auth/app", strlen(ROOT "/auth/app"), "x", 1, 0, 0), 0);
	ck_assert_int_eq(
	    kv_mirror_put(f.m, ROOT "/plugins/a", strlen(ROOT "/plugins/a"), "x", 1, 0, 0), 0);
	ck_assert_int_eq(kv_mirror_deadline(f.m), -1);
	fix_free(&f);
}
END_TEST

/* ZooKeeper reports a REFRESH's subtree deletion one node at a time, and the transport calls
 * delete_tree for each: that must cost about the node, not the whole mirror, or a REFRESH
 * of 20 000 items in a 100 000-node store takes 2e9 steps. Timed with a generous bound (a
 * scan of the table per call takes seconds; by the node, milliseconds). */
START_TEST(delete_tree_per_node_does_not_scan_the_whole_mirror)
{
	struct fix f;
	fix_init(&f, 100);
	enum { N = 100000, GONE = 20000 };
	char path[128];
	kv_mirror_full_begin(f.m);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof path, ROOT "/selector/p%d/%d", i % 50, i);
		full_put(&f, path, "x");
	}
	kv_mirror_full_end(f.m, KV_FULL_RECOVER, 0);
	int64_t t0 = gw_mono_ms();
	for (int i = 0; i < GONE; i++) {
		snprintf(path, sizeof path, ROOT "/selector/p%d/%d", i % 50, i);
		ck_assert_int_eq(kv_mirror_delete_tree(f.m, path, strlen(path), 1), 1);
	}
	int64_t took = gw_mono_ms() - t0;
	/* a parent whose items are all gone is a no-op; a parent with items removes them */
	ck_assert_int_eq(
	    kv_mirror_delete_tree(f.m, ROOT "/selector/p0/0", strlen(ROOT "/selector/p0/0"), 2), 0);
	ck_assert_int_eq(
	    kv_mirror_delete_tree(f.m, ROOT "/selector/p1", strlen(ROOT "/selector/p1"), 2), 1);
	struct kv_mirror_stats st;
	kv_mirror_stats(f.m, &st);
	ck_assert_uint_eq(st.nodes, N - GONE - (N - GONE) / 50);
	ck_assert_msg(took < 1500, "%d single-node delete_tree calls took %lld ms", GONE,
	              (long long)took);
	kv_mirror_full_abort(f.m);
	fix_free(&f);
}
END_TEST

/* The held items of a group in the version's order, "a,b"; "-" if nothing is held. */
static const char *items_in_order(struct fix *f, enum gw_group g)
{
	static char buf[1024];
	struct group_data *gd = store_get(f->st, g);
	if (!gd)
		return "-";
	buf[0] = '\0';
	for (size_t i = 0; i < gd->n_items; i++) {
		strcat(buf, i ? "," : "");
		strcat(buf, item_key(&gd->items[i]));
	}
	group_data_unref(gd);
	return buf;
}

static uint64_t whole_reads(struct fix *f)
{
	struct kv_mirror_stats s;
	kv_mirror_stats(f->m, &s);
	return s.whole_reads;
}

START_TEST(a_settled_group_is_patched_in_path_order_not_read_whole)
{
	struct fix f;
	fix_init(&f, 100);
	start(&f);
	uint64_t whole = whole_reads(&f);
	/* between 11 and 12 in path order, then one changed, one gone, one at the end */
	put(&f, ROOT "/selector/divide/115", selector("115", "x"), 1000);
	ck_assert_int_eq(kv_mirror_flush(f.m, 2000, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), "11,115,12");
	put(&f, ROOT "/selector/divide/12", selector("12", "b2"), 3000);
	kv_mirror_delete(f.m, ROOT "/selector/divide/11", strlen(ROOT "/selector/divide/11"), 3001);
	put(&f, ROOT "/selector/divide/13", selector("13", "c"), 3002);
	ck_assert_int_eq(kv_mirror_flush(f.m, 4000, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), "115,12,13");
	/* a node written and deleted again between two builds changes nothing */
	put(&f, ROOT "/selector/divide/14", selector("14", "d"), 5000);
	kv_mirror_delete(f.m, ROOT "/selector/divide/14", strlen(ROOT "/selector/divide/14"), 5001);
	uint64_t gen = store_generation(f.st);
	ck_assert_int_eq(kv_mirror_flush(f.m, 6000, 0), 0);
	ck_assert_uint_eq(store_generation(f.st), gen);
	ck_assert_uint_eq(whole_reads(&f), whole); /* every one of them a patch */
	struct group_data *gd = store_get(f.st, GW_GROUP_SELECTOR);
	char md5[33];
	ck_assert_int_eq(model_identity(gd, md5), 0);
	ck_assert_str_eq(gd->md5, md5);
	group_data_unref(gd);
	fix_free(&f);
}
END_TEST

/* The held SELECTOR keys, in the version's order, of ids s000..s099 present in `in`. */
static const char *expected_ids(const int *in)
{
	static char buf[1024];
	buf[0] = '\0';
	for (int i = 0; i < 100; i++)
		if (in[i])
			snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%ss%03d",
			         buf[0] ? "," : "", i);
	return buf;
}

static void put_id(struct fix *f, int *in, int i, const char *name, int64_t now)
{
	char path[96], id[8];
	snprintf(id, sizeof id, "s%03d", i);
	snprintf(path, sizeof path, ROOT "/selector/divide/%s", id);
	put(f, path, selector(id, name), now);
	in[i] = 1;
}

static void del_id(struct fix *f, int *in, int i, int64_t now)
{
	char path[96];
	snprintf(path, sizeof path, ROOT "/selector/divide/s%03d", i);
	kv_mirror_delete(f->m, path, strlen(path), now);
	in[i] = 0;
}

/* A patch edits the mirror's order of the held nodes where it stands (a replaced node keeps
 * its place, an inserted or removed one moves the rest), or anew when many nodes come or go
 * at once: either way the next patch finds each node where the version has its item. Runs
 * of inserts at one place, removals beside them, replacements, then more than the in-place
 * limit, each build checked against the path order. */
START_TEST(the_node_order_follows_inserts_removals_and_replaces)
{
	struct fix f;
	fix_init(&f, 10);
	start(&f);
	kv_mirror_delete_tree(f.m, ROOT "/selector/divide", strlen(ROOT "/selector/divide"), 1);
	int in[100] = {0};
	int64_t now = 100;
	for (int i = 0; i < 100; i += 10)
		put_id(&f, in, i, "a", now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	uint64_t whole = whole_reads(&f);
	/* five inserts into one gap, the nodes on both sides of it removed, one replaced */
	for (int i = 41; i <= 45; i++)
		put_id(&f, in, i, "b", now);
	del_id(&f, in, 40, now);
	del_id(&f, in, 50, now);
	put_id(&f, in, 60, "b", now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	/* inserts first and last, the first node removed, one in the middle replaced */
	put_id(&f, in, 99, "c", now);
	put_id(&f, in, 1, "c", now);
	del_id(&f, in, 0, now);
	put_id(&f, in, 43, "c", now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	/* replacements only, several */
	for (int i = 41; i <= 45; i++)
		put_id(&f, in, i, "d", now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	/* more than the in-place limit at once: 20 in, 4 out */
	for (int i = 70; i < 90; i++)
		if (i % 10)
			put_id(&f, in, i, "e", now);
	for (int i = 2; i < 6; i++)
		put_id(&f, in, i, "e", now);
	for (int i = 41; i <= 44; i++)
		del_id(&f, in, i, now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	/* and small patches after it, at both ends */
	del_id(&f, in, 99, now);
	put_id(&f, in, 98, "f", now);
	del_id(&f, in, 1, now);
	put_id(&f, in, 0, "f", now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	/* every node removed, then one back */
	for (int i = 0; i < 100; i++)
		if (in[i])
			del_id(&f, in, i, now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), "");
	put_id(&f, in, 7, "g", now);
	ck_assert_int_eq(kv_mirror_flush(f.m, now += 100, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_SELECTOR), expected_ids(in));
	ck_assert_uint_eq(whole_reads(&f), whole); /* every one of them a patch */
	fix_free(&f);
}
END_TEST

/* The truth of a random run: path -> value (NULL: absent). */
#define TRUTH_N 60
static const char *truth_path(int i)
{
	static char buf[TRUTH_N][96];
	/* three plugins' subtrees, ids that sort differently from their numbers */
	snprintf(buf[i], sizeof buf[i], ROOT "/selector/p%d/%d", i % 3, (i * 37) % 101);
	return buf[i];
}

static void two_versions_equal(struct group_data *a, struct group_data *b)
{
	ck_assert_uint_eq(a->n_items, b->n_items);
	for (size_t i = 0; i < a->n_items; i++) {
		/* the items as a subscriber reading typed views has them */
		const struct gw_item *x = abi_item(a, i), *y = abi_item(b, i);
		ck_assert_str_eq(x->key, y->key);
		ck_assert_str_eq(x->json, y->json);
		ck_assert_str_eq(x->selector->name, y->selector->name);
		ck_assert_uint_eq(group_data_at(a, i), group_data_at(b, i));
	}
	ck_assert_str_eq(a->md5, b->md5);
}

/* Random puts, deletes and subtree deletes, built at random moments: each version the
 * patches make is the version a fresh mirror reading the same store makes whole. */
START_TEST(patching_from_changed_nodes_equals_a_rebuild)
{
	struct fix f;
	fix_init(&f, 10);
	start(&f);
	kv_mirror_delete_tree(f.m, ROOT "/selector/divide", strlen(ROOT "/selector/divide"), 1);
	ck_assert_int_eq(kv_mirror_flush(f.m, 100, 0), 1);
	uint64_t whole = whole_reads(&f);
	char *truth[TRUTH_N] = {0};
	char val[256], name[32];
	srand(4242);
	int64_t now = 1000;
	for (int step = 0; step < 600; step++) {
		int i = rand() % TRUTH_N, what = rand() % 10;
		now += 1;
		if (what < 6) {
			snprintf(name, sizeof name, "n%d", rand() % 5);
			/* the item's id is unique to its path: (i * 37) % 101 */
			char id[16];
			snprintf(id, sizeof id, "%d", (i * 37) % 101);
			snprintf(val, sizeof val, "%s", selector(id, name));
			put(&f, truth_path(i), val, now);
			free(truth[i]);
			truth[i] = strdup(val);
		} else if (what < 9) {
			kv_mirror_delete(f.m, truth_path(i), strlen(truth_path(i)), now);
			free(truth[i]);
			truth[i] = NULL;
		} else { /* a plugin's subtree */
			char dir[64];
			snprintf(dir, sizeof dir, ROOT "/selector/p%d", i % 3);
			kv_mirror_delete_tree(f.m, dir, strlen(dir), now);
			for (int k = 0; k < TRUTH_N; k++)
				if (k % 3 == i % 3) {
					free(truth[k]);
					truth[k] = NULL;
				}
		}
		if (rand() % 4)
			continue;
		now += 100;
		kv_mirror_flush(f.m, now, 0);
		/* a fresh mirror reads the same store whole */
		struct fix fresh;
		fix_init(&fresh, 10);
		kv_mirror_full_begin(fresh.m);
		for (int k = 0; k < TRUTH_N; k++)
			if (truth[k])
				full_put(&fresh, truth_path(k), truth[k]);
		kv_mirror_full_end(fresh.m, KV_FULL_START, now);
		struct group_data *a = store_get(f.st, GW_GROUP_SELECTOR);
		struct group_data *b = store_get(fresh.st, GW_GROUP_SELECTOR);
		two_versions_equal(a, b);
		group_data_unref(a);
		group_data_unref(b);
		fix_free(&fresh);
	}
	ck_assert_uint_eq(whole_reads(&f), whole);
	for (int k = 0; k < TRUTH_N; k++)
		free(truth[k]);
	fix_free(&f);
}
END_TEST

static const char *plugin_id(const char *id, const char *name)
{
	static char buf[4][256];
	static int k;
	char *b = buf[k++ % 4];
	snprintf(b, 256, "{\"id\":\"%s\",\"name\":\"%s\",\"enabled\":true}", id, name);
	return b;
}

static void put_rev(struct fix *f, const char *path, const char *value, int64_t rev, int64_t now)
{
	ck_assert_int_ge(kv_mirror_put(f->m, path, strlen(path), value, strlen(value), rev, now),
	                 0);
}

/* ShenYu's admin writes a renamed plugin under its new name and leaves the old node, with
 * the same id: the newest node is the plugin, the old one a ghost (issue 20 item 10), as a
 * fresh read of the store decides too; delete the newest and the old one is back. */
START_TEST(a_renamed_plugin_leaves_no_ghost)
{
	struct fix f;
	fix_init(&f, 100);
	kv_mirror_full_begin(f.m);
	ck_assert_int_eq(kv_mirror_full_put(f.m, ROOT "/plugin/divide",
	                                    strlen(ROOT "/plugin/divide"), plugin_id("1", "divide"),
	                                    strlen(plugin_id("1", "divide")), 10),
	                 0);
	ck_assert_int_eq(kv_mirror_full_put(f.m, ROOT "/plugin/waf", strlen(ROOT "/plugin/waf"),
	                                    plugin_id("2", "waf"), strlen(plugin_id("2", "waf")),
	                                    11),
	                 0);
	kv_mirror_full_end(f.m, KV_FULL_START, 0);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_PLUGIN), "divide,waf");
	put_rev(&f, ROOT "/plugin/firewall", plugin_id("2", "firewall"), 20, 1000);
	ck_assert_int_eq(kv_mirror_flush(f.m, 2000, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_PLUGIN), "divide,firewall");
	/* the ghost changes (its revision too): still hidden, nothing new to deliver */
	put_rev(&f, ROOT "/plugin/waf", plugin_id("2", "waf"), 15, 2100);
	ck_assert_int_eq(kv_mirror_flush(f.m, 3000, 0), 0);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_PLUGIN), "divide,firewall");
	/* a fresh read of the same store decides the same; with the revisions the other way
	 * round, the other node is the plugin */
	for (int later = 0; later < 2; later++) {
		struct fix fresh;
		fix_init(&fresh, 100);
		kv_mirror_full_begin(fresh.m);
		const char *p[] = {ROOT "/plugin/divide", ROOT "/plugin/firewall",
		                   ROOT "/plugin/waf"};
		const char *v[] = {plugin_id("1", "divide"), plugin_id("2", "firewall"),
		                   plugin_id("2", "waf")};
		int64_t rev[] = {10, later ? 5 : 20, 15};
		for (int i = 0; i < 3; i++)
			ck_assert_int_eq(kv_mirror_full_put(fresh.m, p[i], strlen(p[i]), v[i],
			                                    strlen(v[i]), rev[i]),
			                 0);
		kv_mirror_full_end(fresh.m, KV_FULL_START, 0);
		ck_assert_str_eq(items_in_order(&fresh, GW_GROUP_PLUGIN),
		                 later ? "divide,waf" : "divide,firewall");
		fix_free(&fresh);
	}
	/* the plugin deleted in the admin (its new name): the store still holds the old node,
	 * which is then the plugin again, as a fresh read would say */
	kv_mirror_delete(f.m, ROOT "/plugin/firewall", strlen(ROOT "/plugin/firewall"), 4000);
	ck_assert_int_eq(kv_mirror_flush(f.m, 5000, 0), 1);
	ck_assert_str_eq(items_in_order(&f, GW_GROUP_PLUGIN), "divide,waf");
	fix_free(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_mirror");
	TCase *tc = tcase_create("mirror");
	tcase_add_test(tc, layout_knows_item_paths_and_nothing_else);
	tcase_add_test(tc, layout_refuses_ai_proxy_api_key);
	tcase_add_test(tc, start_up_read_gives_every_group_a_version_empty_ones_too);
	tcase_add_test(tc, events_wait_for_the_settle_window);
	tcase_add_test(tc, a_store_written_without_pause_is_delivered_by_a_hundred_settles);
	tcase_add_test(tc, a_long_refresh_with_writes_closer_than_settle_is_one_version);
	tcase_add_test(tc, refresh_delete_then_recreate_is_one_change_with_the_true_delta);
	tcase_add_test(tc, an_unchanged_result_delivers_nothing);
	tcase_add_test(tc, deletes_are_applied);
	tcase_add_test(tc, delete_tree_spares_a_sibling_sharing_the_prefix);
	tcase_add_test(tc, a_malformed_value_keeps_the_last_good_version_until_fixed);
	tcase_add_test(tc, two_nodes_with_one_key_refuse_the_group);
	tcase_add_test(tc, resync_in_step_repairs_nothing_and_a_difference_is_a_counted_repair);
	tcase_add_test(tc, a_recovery_read_delivers_what_changed_while_away);
	tcase_add_test(tc, a_snapshot_version_is_replaced_even_when_equal);
	tcase_add_test(tc, paths_outside_the_configured_groups_are_ignored);
	tcase_add_test(tc, delete_tree_per_node_does_not_scan_the_whole_mirror);
	tcase_add_test(tc, a_settled_group_is_patched_in_path_order_not_read_whole);
	tcase_add_test(tc, the_node_order_follows_inserts_removals_and_replaces);
	tcase_add_test(tc, patching_from_changed_nodes_equals_a_rebuild);
	tcase_add_test(tc, a_renamed_plugin_leaves_no_ghost);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
