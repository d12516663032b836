/*
 * The `lmdb` subscriber, loaded like in production (dlopen through the loader) and driven
 * the way the dispatcher drives it, checked from the reader's side of the contract
 * (docs/lmdb-cache.md) with liblmdb opened read-only, as a gateway would: the layout byte
 * for byte, one generation per change, deltas, the whole-group replace of a first change,
 * the stale flag, modes, map growth under a reader that holds the old map, a failed
 * commit that leaves the environment untouched, and option errors.
 */
#include <check.h>
#include <errno.h>
#include <gwsync/cache.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/diff.h"
#include "store/store.h"
#include "deliver/subscribers.h"
#include "subtest.h"

static char *dir;
static char envdir[4200];
static struct gw_log *lg;
static struct tcfg t;
static struct subscribers *subs;
static struct group_data *held[GW_GROUP_COUNT]; /* what the plugin last accepted */

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(envdir, sizeof envdir, "%s/cache/env", dir);
	lg = test_log(NULL);
	tcfg_init(&t);
	subs = NULL;
	memset(held, 0, sizeof held);
}

static void forget_held(void)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		group_data_unref(held[g]);
		held[g] = NULL;
	}
}

static void teardown(void)
{
	subscribers_free(subs);
	forget_held();
	tcfg_free(&t);
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

static void load(const char *extra)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "path: %s\n%s", envdir, extra);
	tcfg_add(&t, "cache", "lmdb", yaml);
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
}

/* A restart of the agent: a new plugin instance with nothing delivered. */
static void reload_plugin(const char *extra)
{
	subscribers_free(subs);
	subs = NULL;
	forget_held();
	tcfg_free(&t);
	tcfg_init(&t);
	load(extra);
}

static const char *load_fails(const char *yaml)
{
	static struct gw_err err;
	tcfg_free(&t); /* one subscriber per try */
	tcfg_init(&t);
	tcfg_add(&t, "cache", "lmdb", yaml);
	ck_assert_int_eq(subscribers_load(&t.cfg, lg, &subs, &err), -1);
	return err.msg;
}

static int deliver(struct group_data *gd, char *why, size_t cap)
{
	struct diff d;
	ck_assert_int_eq(diff_build(&d, gd->group, held[gd->group], gd, NULL), 0);
	int rc = subscriber_apply(&subs->v[0], &d.change, why, cap);
	diff_free(&d);
	if (rc == 0) {
		group_data_unref(held[gd->group]);
		held[gd->group] = gd;
	} else {
		group_data_unref(gd);
	}
	return rc;
}

static void deliver_ok(struct group_data *gd)
{
	char why[600] = "";
	ck_assert_msg(deliver(gd, why, sizeof why) == 0, "apply failed: %s", why);
}

/* ------------------------------------------------------------ the reader's side */

struct reader {
	MDB_env *env;
	MDB_txn *txn;
};

static void reader_open(struct reader *r)
{
	ck_assert_int_eq(mdb_env_create(&r->env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(r->env, GW_CACHE_MAX_DBS), 0);
	int rc = mdb_env_open(r->env, envdir, MDB_RDONLY, 0);
	ck_assert_msg(rc == 0, "reader open: %s", mdb_strerror(rc));
	r->txn = NULL;
}

/* Begins a read transaction, handling a map the writer grew as the contract says. */
static void reader_begin(struct reader *r)
{
	int rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, &r->txn);
	if (rc == MDB_MAP_RESIZED) {
		ck_assert_int_eq(mdb_env_set_mapsize(r->env, 0), 0);
		rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, &r->txn);
	}
	ck_assert_msg(rc == 0, "reader begin: %s", mdb_strerror(rc));
}

static void reader_end(struct reader *r)
{
	mdb_txn_abort(r->txn);
	r->txn = NULL;
}

static void reader_close(struct reader *r)
{
	if (r->txn)
		reader_end(r);
	mdb_env_close(r->env);
}

/* Value of `key` in database `db` as a fresh string, or NULL if absent. */
static char *rget(struct reader *r, const char *db, const char *key)
{
	MDB_dbi dbi;
	if (mdb_dbi_open(r->txn, db, 0, &dbi) != 0)
		return NULL;
	MDB_val k = {strlen(key), (void *)key}, v;
	if (mdb_get(r->txn, dbi, &k, &v) != 0)
		return NULL;
	char *s = malloc(v.mv_size + 1);
	memcpy(s, v.mv_data, v.mv_size);
	s[v.mv_size] = '\0';
	return s;
}

/* Keys of `db` joined with ',' in key order ("" when empty, NULL when absent). */
static char *rkeys(struct reader *r, const char *db)
{
	MDB_dbi dbi;
	if (mdb_dbi_open(r->txn, db, 0, &dbi) != 0)
		return NULL;
	MDB_cursor *c;
	ck_assert_int_eq(mdb_cursor_open(r->txn, dbi, &c), 0);
	size_t cap = 1 << 20, len = 0;
	char *out = calloc(1, cap);
	MDB_val k, v;
	for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		ck_assert(len + k.mv_size + 2 < cap);
		if (len)
			out[len++] = ',';
		memcpy(out + len, k.mv_data, k.mv_size);
		len += k.mv_size;
	}
	mdb_cursor_close(c);
	return out;
}

/* One whole read: the value of db/key, in its own transaction. */
static char *read1(const char *db, const char *key)
{
	struct reader r;
	reader_open(&r);
	reader_begin(&r);
	char *s = rget(&r, db, key);
	reader_close(&r);
	return s;
}

static char *keys1(const char *db)
{
	struct reader r;
	reader_open(&r);
	reader_begin(&r);
	char *s = rkeys(&r, db);
	reader_close(&r);
	return s;
}

static void assert_value(const char *db, const char *key, const char *want)
{
	char *got = read1(db, key);
	ck_assert_msg(got != NULL, "%s/%s absent", db, key);
	ck_assert_str_eq(got, want);
	free(got);
}

static void assert_keys(const char *db, const char *want)
{
	char *got = keys1(db);
	ck_assert_msg(got != NULL, "database %s absent", db);
	ck_assert_str_eq(got, want);
	free(got);
}

static long generation(void)
{
	char *g = read1(GW_CACHE_META_DB, GW_CACHE_KEY_GENERATION);
	ck_assert_ptr_nonnull(g);
	long n = strtol(g, NULL, 10);
	free(g);
	return n;
}

static mode_t mode_of(const char *name)
{
	char path[4400];
	snprintf(path, sizeof path, "%s%s%s", envdir, *name ? "/" : "", name);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	return sb.st_mode & 07777;
}

/* ------------------------------------------------------------ tests */

START_TEST(writes_the_documented_layout_byte_exact)
{
	load("");
	const char *r1 =
	    "{\"id\":\"r1\",\"name\":\"名前 – café ☕ 😀\",\"handle\":\"{\\\"a\\\":1}\"}";
	const char *r0 = "{ \"id\" : \"r0\", \"name\":\"\\u00e9\\n\" ,\"x\":[1, 2.50, null] }";
	deliver_ok(gd_make(GW_GROUP_RULE, "0123abcd", 1700000000123,
	                   (const char *[]){"r1", r1, "r0", r0, NULL}));
	assert_value("RULE", "r1", r1);
	assert_value("RULE", "r0", r0);
	assert_keys("RULE", "r0,r1");
	assert_value(GW_CACHE_META_DB, "RULE",
	             "{\"md5\":\"0123abcd\",\"lastModifyTime\":1700000000123,\"count\":2,"
	             "\"stale\":false}");
	assert_value(GW_CACHE_META_DB, GW_CACHE_KEY_FORMAT, "1");
	assert_value(GW_CACHE_META_DB, GW_CACHE_KEY_GENERATION, "1");
	/* a group never delivered has no database and no meta entry */
	ck_assert_ptr_null(keys1("SELECTOR"));
	ck_assert_ptr_null(read1(GW_CACHE_META_DB, "SELECTOR"));
	/* another group: its own database, the generation moves on */
	deliver_ok(
	    gd_make(GW_GROUP_PLUGIN, "p1", 5, (const char *[]){"1", "{\"id\":\"1\"}", NULL}));
	assert_keys("PLUGIN", "1");
	ck_assert_int_eq(generation(), 2);
}
END_TEST

START_TEST(each_change_is_one_commit_with_the_exact_delta)
{
	load("");
	deliver_ok(gd_make(GW_GROUP_SELECTOR, "v1", 10,
	                   (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c",
	                                    "{\"id\":\"c\"}", NULL}));
	ck_assert_int_eq(generation(), 1);
	/* b updated, c removed, d added */
	deliver_ok(gd_make(GW_GROUP_SELECTOR, "v2", 11,
	                   (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\",\"v\":2}",
	                                    "d", "{\"id\":\"d\"}", NULL}));
	ck_assert_int_eq(generation(), 2);
	assert_keys("SELECTOR", "a,b,d");
	assert_value("SELECTOR", "b", "{\"id\":\"b\",\"v\":2}");
	assert_value(GW_CACHE_META_DB, "SELECTOR",
	             "{\"md5\":\"v2\",\"lastModifyTime\":11,\"count\":3,\"stale\":false}");
	/* every item removed: an empty database, count 0, still a commit */
	deliver_ok(gd_make(GW_GROUP_SELECTOR, "v3", 12, NULL));
	assert_keys("SELECTOR", "");
	assert_value(GW_CACHE_META_DB, "SELECTOR",
	             "{\"md5\":\"v3\",\"lastModifyTime\":12,\"count\":0,\"stale\":false}");
	ck_assert_int_eq(generation(), 3);
}
END_TEST

START_TEST(first_change_after_a_restart_replaces_what_an_older_run_left)
{
	load("");
	deliver_ok(gd_make(
	    GW_GROUP_RULE, "old", 1,
	    (const char *[]){"gone", "{\"id\":\"gone\"}", "kept", "{\"id\":\"kept\"}", NULL}));
	ck_assert_int_eq(generation(), 1);
	/* the agent restarts; meanwhile the admin deleted "gone" and added "new" */
	reload_plugin("");
	deliver_ok(gd_make(GW_GROUP_RULE, "new", 2,
	                   (const char *[]){"kept", "{\"id\":\"kept\",\"v\":2}", "new",
	                                    "{\"id\":\"new\"}", NULL}));
	assert_keys("RULE", "kept,new");
	assert_value("RULE", "kept", "{\"id\":\"kept\",\"v\":2}");
	ck_assert_int_eq(generation(), 2); /* the counter survives restarts: readers compare it */
}
END_TEST

START_TEST(a_drifted_database_is_rewritten_whole)
{
	load("");
	deliver_ok(gd_make(GW_GROUP_RULE, "v1", 1,
	                   (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", NULL}));
	/* someone else deletes "a" behind the agent's back */
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	ck_assert_int_eq(mdb_env_create(&env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(env, GW_CACHE_MAX_DBS), 0);
	ck_assert_int_eq(mdb_env_open(env, envdir, 0, 0640), 0);
	ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, "RULE", 0, &dbi), 0);
	MDB_val k = {1, "a"};
	ck_assert_int_eq(mdb_del(txn, dbi, &k, NULL), 0);
	ck_assert_int_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	/* the next delta (c added) would leave 2 items where the version has 3 */
	deliver_ok(gd_make(GW_GROUP_RULE, "v2", 2,
	                   (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c",
	                                    "{\"id\":\"c\"}", NULL}));
	assert_keys("RULE", "a,b,c");
	assert_value(GW_CACHE_META_DB, "RULE",
	             "{\"md5\":\"v2\",\"lastModifyTime\":2,\"count\":3,\"stale\":false}");
}
END_TEST

START_TEST(stale_snapshot_data_is_marked_then_confirmed)
{
	load("");
	struct group_data *gd =
	    gd_make(GW_GROUP_PLUGIN, "m1", 7, (const char *[]){"1", "{\"id\":\"1\"}", NULL});
	gd->provisional = 1; /* loaded from the snapshot */
	deliver_ok(gd);
	assert_value(GW_CACHE_META_DB, "PLUGIN",
	             "{\"md5\":\"m1\",\"lastModifyTime\":7,\"count\":1,\"stale\":true}");
	/* the admin confirms the same data: an empty delta still clears the flag */
	deliver_ok(
	    gd_make(GW_GROUP_PLUGIN, "m1", 7, (const char *[]){"1", "{\"id\":\"1\"}", NULL}));
	assert_value(GW_CACHE_META_DB, "PLUGIN",
	             "{\"md5\":\"m1\",\"lastModifyTime\":7,\"count\":1,\"stale\":false}");
	ck_assert_int_eq(generation(), 2);
}
END_TEST

START_TEST(modes_let_the_gateway_group_read_and_no_one_else)
{
	umask(077); /* the configured modes win over the umask */
	load("");
	deliver_ok(
	    gd_make(GW_GROUP_APP_AUTH, "m", 1,
	            (const char *[]){"k", "{\"appKey\":\"k\",\"appSecret\":\"s3cr3t\"}", NULL}));
	ck_assert_int_eq(mode_of("data.mdb"), 0640);
	ck_assert_int_eq(mode_of("lock.mdb"), 0660); /* readers register in it */
	ck_assert_int_eq(mode_of(""), 0750);
}
END_TEST

START_TEST(world_readable_mode_needs_the_operator_to_say_so)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "path: %s\nmode: \"0644\"\n", envdir);
	const char *msg = load_fails(yaml);
	ck_assert_msg(strstr(msg, "allow_world_readable") && strstr(msg, "0644"), "%s", msg);
	tcfg_free(&t);
	tcfg_init(&t);
	load("mode: \"0644\"\nallow_world_readable: true\n");
	deliver_ok(gd_make(GW_GROUP_PLUGIN, "m", 1, NULL));
	ck_assert_int_eq(mode_of("data.mdb"), 0644);
	ck_assert_int_eq(mode_of("lock.mdb"), 0666);
	ck_assert_int_eq(mode_of(""), 0755);
}
END_TEST

START_TEST(init_creates_nothing_so_check_changes_nothing)
{
	load("");
	struct stat sb;
	char parent[4300];
	snprintf(parent, sizeof parent, "%s/cache", dir);
	ck_assert_int_eq(stat(parent, &sb), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

/* Items of about 2 KiB each: 200 of them overflow a 64 KiB map several times over. */
static struct group_data *big_version(int v, int n)
{
	const char **kv = calloc(2 * (size_t)n + 1, sizeof *kv);
	char(*keys)[16] = calloc((size_t)n, 16);
	char(*vals)[2100] = calloc((size_t)n, 2100);
	for (int i = 0; i < n; i++) {
		snprintf(keys[i], 16, "k%05d", i);
		snprintf(vals[i], 2100, "{\"id\":\"k%05d\",\"v\":%d,\"pad\":\"%02000d\"}", i, v, 0);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = vals[i];
	}
	char md5[32];
	snprintf(md5, sizeof md5, "big%d", v);
	struct group_data *gd = gd_make(GW_GROUP_RULE, md5, v, kv);
	free(kv);
	free(keys);
	free(vals);
	return gd;
}

START_TEST(a_full_map_grows_and_a_reader_of_the_old_map_follows)
{
	load("map_size: 64KiB\n");
	deliver_ok(gd_make(GW_GROUP_PLUGIN, "p", 1, (const char *[]){"1", "{\"id\":\"1\"}", NULL}));
	/* a reader opened on the small map, as an nginx worker would be */
	struct reader r;
	reader_open(&r);
	deliver_ok(big_version(1, 200));
	reader_begin(&r); /* MDB_MAP_RESIZED handled as the contract says */
	char *keys = rkeys(&r, "RULE");
	ck_assert_ptr_nonnull(keys);
	ck_assert_int_eq((int)strlen(keys), 200 * 6 + 199);
	free(keys);
	char *v = rget(&r, "RULE", "k00199");
	ck_assert_ptr_nonnull(v);
	ck_assert(strncmp(v, "{\"id\":\"k00199\",\"v\":1,", 21) == 0);
	free(v);
	reader_close(&r);
}
END_TEST

START_TEST(a_failed_commit_leaves_the_environment_as_it_was)
{
	load("");
	deliver_ok(big_version(1, 20));
	long gen = generation();
	/* the file may not grow past its size now: the next bigger commit fails with EFBIG */
	char path[4400];
	snprintf(path, sizeof path, "%s/data.mdb", envdir);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)sb.st_size;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	char why[600] = "";
	ck_assert_int_ne(deliver(big_version(2, 400), why, sizeof why), 0);
	ck_assert_msg(strstr(why, "RULE"), "the reason names the group: %s", why);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	/* nothing of the failed change is visible */
	ck_assert_int_eq(generation(), gen);
	char *v = read1("RULE", "k00000");
	ck_assert(strncmp(v, "{\"id\":\"k00000\",\"v\":1,", 21) == 0);
	free(v);
	ck_assert_ptr_null(read1("RULE", "k00300"));
	/* and the retry the dispatcher makes later succeeds as a delta from the held version */
	deliver_ok(big_version(2, 400));
	ck_assert_int_eq(generation(), gen + 1);
	v = read1("RULE", "k00399");
	ck_assert_ptr_nonnull(v);
	free(v);
}
END_TEST

START_TEST(a_key_lmdb_cannot_hold_is_refused_naming_it)
{
	load("");
	char key[600];
	memset(key, 'x', sizeof key - 1);
	key[sizeof key - 1] = '\0';
	char json[700];
	snprintf(json, sizeof json, "{\"id\":\"%s\"}", key);
	char why[600] = "";
	ck_assert_int_ne(
	    deliver(gd_make(GW_GROUP_META_DATA, "m", 1, (const char *[]){key, json, NULL}), why,
	            sizeof why),
	    0);
	ck_assert_msg(strstr(why, "META_DATA") && strstr(why, "xxxxxxxx"), "%s", why);
}
END_TEST

START_TEST(bad_options_stop_start_up)
{
	ck_assert(strstr(load_fails(""), "missing required key 'path'"));
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "path: %s\nmap_size: 64MB\n", envdir);
	ck_assert(strstr(load_fails(yaml), "map_size"));
	snprintf(yaml, sizeof yaml, "path: %s\nmap_size: 1KiB\n", envdir);
	ck_assert(strstr(load_fails(yaml), "at least 64KiB"));
	snprintf(yaml, sizeof yaml, "path: %s\nmode: \"0750\"\n", envdir);
	ck_assert(strstr(load_fails(yaml), "execute"));
	snprintf(yaml, sizeof yaml, "path: %s\nmode: \"0440\"\n", envdir);
	ck_assert(strstr(load_fails(yaml), "owner read and write"));
	snprintf(yaml, sizeof yaml, "path: %s\nmax_readers: 0\n", envdir);
	ck_assert(strstr(load_fails(yaml), "max_readers"));
	/* a file where the directory should be */
	char file[4300];
	snprintf(file, sizeof file, "%s/plain", dir);
	FILE *f = fopen(file, "w");
	fclose(f);
	snprintf(yaml, sizeof yaml, "path: %s\n", file);
	ck_assert(strstr(load_fails(yaml), "not a directory"));
	snprintf(yaml, sizeof yaml, "path: %s/below\n", file);
	ck_assert(strstr(load_fails(yaml), "not a directory"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lmdb plugin");
	TCase *tc = tcase_create("lmdb");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, writes_the_documented_layout_byte_exact);
	tcase_add_test(tc, each_change_is_one_commit_with_the_exact_delta);
	tcase_add_test(tc, first_change_after_a_restart_replaces_what_an_older_run_left);
	tcase_add_test(tc, a_drifted_database_is_rewritten_whole);
	tcase_add_test(tc, stale_snapshot_data_is_marked_then_confirmed);
	tcase_add_test(tc, modes_let_the_gateway_group_read_and_no_one_else);
	tcase_add_test(tc, world_readable_mode_needs_the_operator_to_say_so);
	tcase_add_test(tc, init_creates_nothing_so_check_changes_nothing);
	tcase_add_test(tc, a_full_map_grows_and_a_reader_of_the_old_map_follows);
	tcase_add_test(tc, a_failed_commit_leaves_the_environment_as_it_was);
	tcase_add_test(tc, a_key_lmdb_cannot_hold_is_refused_naming_it);
	tcase_add_test(tc, bad_options_stop_start_up);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
