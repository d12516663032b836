/*
 * The `lmdb` subscriber, the very .so that ships (dlopen), driven through the plugin test
 * kit (gwsync/testing.h) the way the dispatcher drives it (the delta from what it last
 * accepted, built from versions of the admin's JSON), checked from the reader's side of the
 * contract (docs/lmdb-cache.md) with liblmdb opened read-only, as a gateway would: the layout byte
 * for byte, one generation per change, deltas, the whole-group replace of a first change,
 * the stale flag, modes, map growth under a reader that holds the old map, a failed
 * commit that leaves the environment untouched, a full disk named as such, and option
 * errors. The change log (what each commit touched) is checked entry by entry, and
 * through a reference incremental reader (cache_reader.c) driven by random changes and
 * compared with a full read after every step. Long keys are stored under their derived
 * key and flow like any other.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <gwsync/cache.h>
#include <gwsync/testing.h>
#include <jansson.h>
#include <lmdb.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache_reader.h"
#include "plugtest.h"
#include "testfiles.h"

static char envdir[4200];

static void setup(void)
{
	plugtest_setup();
	snprintf(envdir, sizeof envdir, "%s/cache/env", dir);
}

static void load(const char *extra)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "path: %s\n%s", envdir, extra);
	ck_assert_msg(plugtest_start(yaml) == 0, "%s", err);
}

/* A restart of the agent: a new plugin instance with nothing delivered. */
static void reload_plugin(const char *extra)
{
	plugtest_stop();
	load(extra);
}

/* A version and its group. */
struct tv {
	enum gw_group g;
	struct gwt_version *v;
};

/* A version of the admin's JSON from (key, raw JSON) pairs ending with NULL, in that
 * (admin) order: the kit derives each key from the JSON as the agent does, and it must be
 * the key given. */
static struct tv mk(enum gw_group g, const char *md5, int64_t lmt, const char *const *kv)
{
	size_t n = 0, len = 2;
	while (kv && kv[2 * n])
		len += strlen(kv[2 * n + 1]) + 1, n++;
	char *items = malloc(len + 1);
	size_t at = 0;
	items[at++] = '[';
	for (size_t i = 0; i < n; i++)
		at += (size_t)sprintf(items + at, "%s%s", i ? "," : "", kv[2 * i + 1]);
	items[at++] = ']';
	items[at] = '\0';
	struct tv t = {g, gwt_version_new(g, md5, lmt, items, err, sizeof err)};
	free(items);
	ck_assert_msg(t.v != NULL, "%s", err);
	struct gwt_change *c = gwt_change_between(NULL, t.v, err, sizeof err);
	ck_assert_uint_eq(gwt_change(c)->n_items, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(gwt_change(c)->items[i]->key, kv[2 * i]);
	gwt_change_free(c);
	return t;
}

/* Deliver `t` (consumed) as the dispatcher would: the delta from the version the plugin
 * last accepted, apply() (the plugin has no tick()). Returns apply's result, the reason in
 * gwt_host_error(h). */
static int deliver(struct tv t)
{
	return gwt_instance_deliver(in, t.v, NULL, err, sizeof err);
}

static void deliver_ok(struct tv t)
{
	ck_assert_msg(deliver(t) == 0, "apply failed: %s", gwt_host_error(h));
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
	deliver_ok(mk(GW_GROUP_RULE, "0123abcd", 1700000000123,
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
	deliver_ok(mk(GW_GROUP_PLUGIN, "p1", 5,
	              (const char *[]){"1", "{\"id\":\"1\",\"name\":\"1\"}", NULL}));
	assert_keys("PLUGIN", "1");
	ck_assert_int_eq(generation(), 2);
}
END_TEST

START_TEST(each_change_is_one_commit_with_the_exact_delta)
{
	load("");
	deliver_ok(mk(GW_GROUP_SELECTOR, "v1", 10,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c",
	                               "{\"id\":\"c\"}", NULL}));
	ck_assert_int_eq(generation(), 1);
	/* b updated, c removed, d added */
	deliver_ok(mk(GW_GROUP_SELECTOR, "v2", 11,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\",\"v\":2}", "d",
	                               "{\"id\":\"d\"}", NULL}));
	ck_assert_int_eq(generation(), 2);
	assert_keys("SELECTOR", "a,b,d");
	assert_value("SELECTOR", "b", "{\"id\":\"b\",\"v\":2}");
	assert_value(GW_CACHE_META_DB, "SELECTOR",
	             "{\"md5\":\"v2\",\"lastModifyTime\":11,\"count\":3,\"stale\":false}");
	/* every item removed: an empty database, count 0, still a commit */
	deliver_ok(mk(GW_GROUP_SELECTOR, "v3", 12, NULL));
	assert_keys("SELECTOR", "");
	assert_value(GW_CACHE_META_DB, "SELECTOR",
	             "{\"md5\":\"v3\",\"lastModifyTime\":12,\"count\":0,\"stale\":false}");
	ck_assert_int_eq(generation(), 3);
}
END_TEST

START_TEST(first_change_after_a_restart_replaces_what_an_older_run_left)
{
	load("");
	deliver_ok(
	    mk(GW_GROUP_RULE, "old", 1,
	       (const char *[]){"gone", "{\"id\":\"gone\"}", "kept", "{\"id\":\"kept\"}", NULL}));
	ck_assert_int_eq(generation(), 1);
	/* the agent restarts; meanwhile the admin deleted "gone" and added "new" */
	reload_plugin("");
	deliver_ok(mk(GW_GROUP_RULE, "new", 2,
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
	deliver_ok(mk(GW_GROUP_RULE, "v1", 1,
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
	deliver_ok(mk(GW_GROUP_RULE, "v2", 2,
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
	struct tv gd = mk(GW_GROUP_PLUGIN, "m1", 7,
	                  (const char *[]){"1", "{\"id\":\"1\",\"name\":\"1\"}", NULL});
	gwt_version_set_stale(gd.v, 1); /* loaded from the snapshot */
	deliver_ok(gd);
	assert_value(GW_CACHE_META_DB, "PLUGIN",
	             "{\"md5\":\"m1\",\"lastModifyTime\":7,\"count\":1,\"stale\":true}");
	/* the admin confirms the same data: an empty delta still clears the flag */
	deliver_ok(mk(GW_GROUP_PLUGIN, "m1", 7,
	              (const char *[]){"1", "{\"id\":\"1\",\"name\":\"1\"}", NULL}));
	assert_value(GW_CACHE_META_DB, "PLUGIN",
	             "{\"md5\":\"m1\",\"lastModifyTime\":7,\"count\":1,\"stale\":false}");
	ck_assert_int_eq(generation(), 2);
}
END_TEST

START_TEST(modes_let_the_gateway_group_read_and_no_one_else)
{
	umask(077); /* the configured modes win over the umask */
	load("");
	deliver_ok(mk(GW_GROUP_APP_AUTH, "m", 1,
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
	const char *msg = plugtest_start_fails(yaml);
	ck_assert_msg(strstr(msg, "allow_world_readable") && strstr(msg, "0644"), "%s", msg);
	load("mode: \"0644\"\nallow_world_readable: true\n");
	deliver_ok(mk(GW_GROUP_PLUGIN, "m", 1, NULL));
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
static struct tv big_version(int v, int n)
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
	struct tv gd = mk(GW_GROUP_RULE, md5, v, kv);
	free(kv);
	free(keys);
	free(vals);
	return gd;
}

START_TEST(a_full_map_grows_and_a_reader_of_the_old_map_follows)
{
	load("map_size: 64KiB\n");
	deliver_ok(mk(GW_GROUP_PLUGIN, "p", 1,
	              (const char *[]){"1", "{\"id\":\"1\",\"name\":\"1\"}", NULL}));
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
	ck_assert_int_ne(deliver(big_version(2, 400)), 0);
	ck_assert_msg(strstr(gwt_host_error(h), "RULE"), "the reason names the group: %s",
	              gwt_host_error(h));
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

/* ------------------------------------------------------------ the change log */

/* A hand edit of the environment (what an operator, a restore or an older writer might do
 * behind the agent's back): db/key set to val, or deleted when val is NULL. */
static void hand_edit(const char *db, const char *key, const char *val)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	ck_assert_int_eq(mdb_env_create(&env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(env, GW_CACHE_MAX_DBS), 0);
	ck_assert_int_eq(mdb_env_open(env, envdir, 0, 0640), 0);
	ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
	ck_assert_int_eq(mdb_dbi_open(txn, db, 0, &dbi), 0);
	MDB_val k = {strlen(key), (void *)key};
	if (val) {
		MDB_val v = {strlen(val), (void *)val};
		ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
	} else {
		ck_assert_int_eq(mdb_del(txn, dbi, &k, NULL), 0);
	}
	ck_assert_int_eq(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void gen_key(char out[24], long gen)
{
	snprintf(out, 24, "%020ld", gen);
}

static void assert_entry(long gen, const char *want)
{
	char key[24];
	gen_key(key, gen);
	char *got = read1(GW_CACHE_CHANGES_DB, key);
	ck_assert_msg(got != NULL, "no change-log entry for generation %ld", gen);
	ck_assert_str_eq(got, want);
	free(got);
}

/* changes_from is `from` and the log holds exactly the generations first..last. */
static void assert_log(long from, long first, long last)
{
	char *f = read1(GW_CACHE_META_DB, GW_CACHE_KEY_CHANGES_FROM);
	ck_assert_msg(f != NULL, "no changes_from");
	ck_assert_int_eq(strtol(f, NULL, 10), from);
	free(f);
	char want[8192] = "";
	size_t len = 0;
	for (long g = first; g <= last; g++)
		len +=
		    (size_t)snprintf(want + len, sizeof want - len, "%s%020ld", len ? "," : "", g);
	assert_keys(GW_CACHE_CHANGES_DB, want);
}

static void assert_no_log(void)
{
	char *f = read1(GW_CACHE_META_DB, GW_CACHE_KEY_CHANGES_FROM);
	ck_assert_msg(f == NULL, "changes_from is %s with the log off", f);
}

START_TEST(the_change_log_names_what_each_commit_put_and_deleted)
{
	load("");
	deliver_ok(mk(GW_GROUP_SELECTOR, "v1", 10,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c",
	                               "{\"id\":\"c\"}", NULL}));
	/* the first change after a start writes the group whole */
	assert_entry(1, "{\"group\":\"SELECTOR\",\"replace\":true}");
	assert_log(1, 1, 1);
	/* b updated, c removed, d added */
	deliver_ok(mk(GW_GROUP_SELECTOR, "v2", 11,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\",\"v\":2}", "d",
	                               "{\"id\":\"d\"}", NULL}));
	assert_entry(2, "{\"group\":\"SELECTOR\",\"put\":[\"d\",\"b\"],\"del\":[\"c\"]}");
	/* a delete alone */
	deliver_ok(
	    mk(GW_GROUP_SELECTOR, "v3", 12,
	       (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\",\"v\":2}", NULL}));
	assert_entry(3, "{\"group\":\"SELECTOR\",\"put\":[],\"del\":[\"d\"]}");
	/* a new version with the same items: only the meta entry changed */
	deliver_ok(
	    mk(GW_GROUP_SELECTOR, "v4", 13,
	       (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\",\"v\":2}", NULL}));
	assert_entry(4, "{\"group\":\"SELECTOR\",\"put\":[],\"del\":[]}");
	/* snapshot data confirmed by an admin: stale turns false, nothing else */
	struct tv gd = mk(GW_GROUP_PLUGIN, "m1", 7,
	                  (const char *[]){"1", "{\"id\":\"1\",\"name\":\"1\"}", NULL});
	gwt_version_set_stale(gd.v, 1);
	deliver_ok(gd);
	deliver_ok(mk(GW_GROUP_PLUGIN, "m1", 7,
	              (const char *[]){"1", "{\"id\":\"1\",\"name\":\"1\"}", NULL}));
	assert_entry(5, "{\"group\":\"PLUGIN\",\"replace\":true}");
	assert_entry(6, "{\"group\":\"PLUGIN\",\"put\":[],\"del\":[]}");
	assert_log(1, 1, 6);
	ck_assert_int_eq(generation(), 6);
}
END_TEST

START_TEST(a_restart_or_a_repair_logs_the_group_as_replaced)
{
	load("");
	deliver_ok(mk(GW_GROUP_RULE, "v1", 1,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", NULL}));
	deliver_ok(mk(GW_GROUP_RULE, "v2", 2,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c",
	                               "{\"id\":\"c\"}", NULL}));
	assert_entry(2, "{\"group\":\"RULE\",\"put\":[\"c\"],\"del\":[]}");
	/* a restart: the first change writes the group whole, and the log goes on */
	reload_plugin("");
	deliver_ok(mk(GW_GROUP_RULE, "v3", 3,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c",
	                               "{\"id\":\"c\"}", "d", "{\"id\":\"d\"}", NULL}));
	assert_entry(3, "{\"group\":\"RULE\",\"replace\":true}");
	assert_log(1, 1, 3);
	/* the database drifts behind the agent's back; the next delta finds the count wrong
	 * and rewrites the group whole: the log must not claim a delta then */
	hand_edit("RULE", "a", NULL);
	deliver_ok(
	    mk(GW_GROUP_RULE, "v4", 4,
	       (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", "c", "{\"id\":\"c\"}",
	                        "d", "{\"id\":\"d\"}", "e", "{\"id\":\"e\"}", NULL}));
	assert_keys("RULE", "a,b,c,d,e");
	assert_entry(4, "{\"group\":\"RULE\",\"replace\":true}");
	assert_log(1, 1, 4);
}
END_TEST

static struct tv plugin_rev(int rev)
{
	char md5[16], json[64];
	snprintf(md5, sizeof md5, "p%d", rev);
	snprintf(json, sizeof json, "{\"name\":\"p\",\"rev\":%d}", rev);
	return mk(GW_GROUP_PLUGIN, md5, rev, (const char *[]){"p", json, NULL});
}

START_TEST(the_log_keeps_exactly_the_last_change_log_generations)
{
	load("change_log: 3\n");
	for (int v = 1; v <= 10; v++)
		deliver_ok(plugin_rev(v));
	assert_log(8, 8, 10);
	assert_entry(10, "{\"group\":\"PLUGIN\",\"put\":[\"p\"],\"del\":[]}");
	/* a longer window: the log grows back to it commit by commit, nothing is invented */
	reload_plugin("change_log: 5\n");
	deliver_ok(plugin_rev(11));
	assert_log(8, 8, 11);
	deliver_ok(plugin_rev(12));
	assert_log(8, 8, 12);
	deliver_ok(plugin_rev(13));
	assert_log(9, 9, 13);
	/* a shorter one: the next commit deletes what fell out */
	reload_plugin("change_log: 1\n");
	deliver_ok(plugin_rev(14));
	assert_log(14, 14, 14);
	deliver_ok(plugin_rev(15));
	assert_log(15, 15, 15);
	assert_entry(15, "{\"group\":\"PLUGIN\",\"put\":[\"p\"],\"del\":[]}");
}
END_TEST

START_TEST(change_log_0_removes_the_log_and_an_upgrade_starts_it_at_the_current_commit)
{
	/* a writer without a log: no changes database, no changes_from */
	load("change_log: 0\n");
	deliver_ok(plugin_rev(1));
	deliver_ok(plugin_rev(2));
	ck_assert_ptr_null(keys1(GW_CACHE_CHANGES_DB));
	assert_no_log();
	/* the upgrade: the first entry is the current commit's */
	reload_plugin("");
	deliver_ok(plugin_rev(3));
	assert_log(3, 3, 3);
	assert_entry(3, "{\"group\":\"PLUGIN\",\"replace\":true}");
	deliver_ok(plugin_rev(4));
	assert_log(3, 3, 4);
	/* turned off: emptied and changes_from deleted, so no reader trusts a log with holes */
	reload_plugin("change_log: 0\n");
	deliver_ok(plugin_rev(5));
	assert_keys(GW_CACHE_CHANGES_DB, "");
	assert_no_log();
	deliver_ok(plugin_rev(6));
	assert_no_log();
	/* and on again: from the current commit, not from the old entries */
	reload_plugin("");
	deliver_ok(plugin_rev(7));
	assert_log(7, 7, 7);
}
END_TEST

START_TEST(a_log_that_does_not_reach_the_previous_commit_starts_again)
{
	load("");
	for (int v = 1; v <= 3; v++)
		deliver_ok(plugin_rev(v));
	assert_log(1, 1, 3);
	/* an older agent (no log) committed meanwhile: the generation moved, the log did not */
	hand_edit(GW_CACHE_META_DB, GW_CACHE_KEY_GENERATION, "7");
	deliver_ok(plugin_rev(4));
	ck_assert_int_eq(generation(), 8);
	assert_log(8, 8, 8);
	deliver_ok(plugin_rev(5));
	deliver_ok(plugin_rev(6));
	assert_log(8, 8, 10);
	/* a hole inside the window */
	char key[24];
	gen_key(key, 9);
	hand_edit(GW_CACHE_CHANGES_DB, key, NULL);
	deliver_ok(plugin_rev(7));
	assert_log(11, 11, 11);
	/* a generation counter that went back (a restored meta) */
	hand_edit(GW_CACHE_META_DB, GW_CACHE_KEY_GENERATION, "2");
	deliver_ok(plugin_rev(8));
	assert_log(3, 3, 3);
}
END_TEST

/* {"id":KEY} with KEY as a JSON string (jansson's escapes); free() it. */
static char *item_id(const char *key)
{
	json_t *s = json_string(key);
	ck_assert_ptr_nonnull(s);
	char *text = json_dumps(s, JSON_ENCODE_ANY);
	json_decref(s);
	char *item = malloc(strlen(text) + 16);
	sprintf(item, "{\"id\":%s}", text);
	free(text);
	return item;
}

START_TEST(keys_in_the_log_are_json_strings)
{
	load("");
	deliver_ok(mk(GW_GROUP_RULE, "v1", 1, (const char *[]){"a", "{\"id\":\"a\"}", NULL}));
	const char *keys[] = {"back\\slash", "ctl\t\n\x01\x1f", "del\x7f", "q\"uote", "utf8 é☕😀"};
	char *items[5];
	for (int i = 0; i < 5; i++)
		items[i] = item_id(keys[i]);
	deliver_ok(
	    mk(GW_GROUP_RULE, "v2", 2,
	       (const char *[]){"a", "{\"id\":\"a\"}", keys[0], items[0], keys[1], items[1],
	                        keys[2], items[2], keys[3], items[3], keys[4], items[4], NULL}));
	assert_entry(2, "{\"group\":\"RULE\",\"put\":[\"back\\\\slash\","
	                "\"ctl\\u0009\\u000a\\u0001\\u001f\",\"del\x7f\",\"q\\\"uote\","
	                "\"utf8 é☕😀\"],\"del\":[]}");
	/* a strict JSON parser reads back exactly the keys the group's database holds */
	char gk[24];
	gen_key(gk, 2);
	char *entry = read1(GW_CACHE_CHANGES_DB, gk);
	json_error_t jerr;
	json_t *e = json_loads(entry, JSON_REJECT_DUPLICATES, &jerr);
	ck_assert_msg(e != NULL, "entry is not JSON: %s", jerr.text);
	json_t *put = json_object_get(e, "put");
	ck_assert_int_eq(json_array_size(put), 5);
	for (size_t i = 0; i < 5; i++) {
		ck_assert_str_eq(json_string_value(json_array_get(put, i)), keys[i]);
		char *v = read1("RULE", keys[i]);
		ck_assert_ptr_nonnull(v);
		free(v);
	}
	json_decref(e);
	free(entry);
	/* and deleted the same way */
	deliver_ok(mk(GW_GROUP_RULE, "v3", 3,
	              (const char *[]){"a", "{\"id\":\"a\"}", keys[0], items[0], keys[1], items[1],
	                               keys[2], items[2], keys[4], items[4], NULL}));
	assert_entry(3, "{\"group\":\"RULE\",\"put\":[],\"del\":[\"q\\\"uote\"]}");
	for (int i = 0; i < 5; i++)
		free(items[i]);
}
END_TEST

/* ------------------------------------------------------------ long keys */

#define DIGEST_600_S "#sha256:1a30f3c9486b338d22941cb48c7804badf6d571cfed28924847953d903b7635d"
#define DIGEST_AI    "#sha256:9cda2ed97fd169ab9197ca12a570bc2cfa681ed8326c4bbf6ee847d9a1dcd410"
#define DIGEST_SHORT "#sha256:34ac20e2d4bb1d7dd8d9cd377e796d1f1620ebab6357a54182fe73cb0d2d96cf"
#define DIGEST_512_X "#sha256:64164443bb63e338ef1cfdb12a57117cd1212270cc935a798f6e8a665cdf4659"

/* Issue 20 item 5: a key over LMDB's 511 bytes failed every commit of its group with
 * MDB_BAD_VALSIZE, for ever, and later changes of the group never reached the gateway. The
 * digests are SHA-256 computed outside (Python's hashlib) over the keys' bytes. */
START_TEST(a_key_longer_than_lmdb_holds_is_stored_under_its_digest_and_its_group_flows)
{
	load("");
	char sel[601], j1[700], j2[700];
	memset(sel, 's', 600);
	sel[600] = '\0';
	snprintf(j1, sizeof j1, "{\"id\":\"%s\",\"v\":1}", sel);
	snprintf(j2, sizeof j2, "{\"id\":\"%s\",\"v\":2}", sel);
	int rc = deliver(
	    mk(GW_GROUP_SELECTOR, "v1", 1, (const char *[]){"a", "{\"id\":\"a\"}", sel, j1, NULL}));
	ck_assert_msg(rc == 0, "a 600-character selector id blocks its group: %s",
	              gwt_host_error(h));
	assert_keys("SELECTOR", DIGEST_600_S ",a");
	assert_value("SELECTOR", DIGEST_600_S, j1);
	/* later changes of the group flow: the long one updated, another added... */
	deliver_ok(
	    mk(GW_GROUP_SELECTOR, "v2", 2,
	       (const char *[]){"a", "{\"id\":\"a\"}", sel, j2, "b", "{\"id\":\"b\"}", NULL}));
	assert_value("SELECTOR", DIGEST_600_S, j2);
	assert_entry(2, "{\"group\":\"SELECTOR\",\"put\":[\"b\",\"" DIGEST_600_S "\"],\"del\":[]}");
	/* ...and deleted */
	deliver_ok(mk(GW_GROUP_SELECTOR, "v3", 3,
	              (const char *[]){"a", "{\"id\":\"a\"}", "b", "{\"id\":\"b\"}", NULL}));
	assert_keys("SELECTOR", "a,b");
	assert_entry(3, "{\"group\":\"SELECTOR\",\"put\":[],\"del\":[\"" DIGEST_600_S "\"]}");

	/* AI_PROXY_API_KEY's key is selectorId::proxyApiKey: a long API key makes it long */
	char ak[700], aj[800];
	snprintf(ak, sizeof ak, "sel-1::%0600d", 0);
	memset(ak + 7, 'k', 600);
	snprintf(aj, sizeof aj, "{\"selectorId\":\"sel-1\",\"proxyApiKey\":\"%s\"}", ak + 7);
	rc = deliver(mk(GW_GROUP_AI_PROXY_API_KEY, "k1", 1, (const char *[]){ak, aj, NULL}));
	ck_assert_msg(rc == 0, "a long proxyApiKey blocks AI_PROXY_API_KEY: %s", gwt_host_error(h));
	assert_keys("AI_PROXY_API_KEY", DIGEST_AI);
	assert_value("AI_PROXY_API_KEY", DIGEST_AI, aj);
	deliver_ok(
	    mk(GW_GROUP_AI_PROXY_API_KEY, "k2", 2,
	       (const char *[]){ak, aj, "sel-1::short",
	                        "{\"selectorId\":\"sel-1\",\"proxyApiKey\":\"short\"}", NULL}));
	assert_keys("AI_PROXY_API_KEY", DIGEST_AI ",sel-1::short");

	/* the boundary: 511 bytes stay as they are, 512 are derived, and so is a short key
	 * that begins with the prefix (so a derived key never equals a real one) */
	char k511[512], k512[513];
	memset(k511, 'x', 511);
	k511[511] = '\0';
	memset(k512, 'x', 512);
	k512[512] = '\0';
	char *j511 = item_id(k511), *j512 = item_id(k512), *jshort = item_id("#sha256:short");
	deliver_ok(mk(GW_GROUP_META_DATA, "m", 1,
	              (const char *[]){k511, j511, k512, j512, "#sha256:short", jshort, NULL}));
	char want[1200];
	snprintf(want, sizeof want, "%s,%s,%s", DIGEST_SHORT, DIGEST_512_X, k511);
	assert_keys("META_DATA", want);
	assert_value("META_DATA", k511, j511);
	assert_value("META_DATA", DIGEST_512_X, j512);
	assert_value("META_DATA", DIGEST_SHORT, jshort);
	free(j511);
	free(j512);
	free(jshort);
}
END_TEST

/* ------------------------------------------------------------ the reference reader */

#define RND_GROUPS 3
#define RND_POOL   10
#define RND_STEPS  400
#define RND_LOG    8

static const char *const rnd_names[RND_GROUPS] = {"SELECTOR", "RULE", "AI_PROXY_API_KEY"};
static const enum gw_group rnd_ids[RND_GROUPS] = {GW_GROUP_SELECTOR, GW_GROUP_RULE,
                                                  GW_GROUP_AI_PROXY_API_KEY};

struct rnd {
	uint64_t s;
	char keys[RND_POOL][700];
	int rev[RND_GROUPS][RND_POOL]; /* 0: absent */
	int version;
	int fresh[RND_GROUPS]; /* the next change of the group is its first since a start */
};

static unsigned rnd_next(struct rnd *r, unsigned n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (unsigned)(r->s % n);
}

static void rnd_init(struct rnd *r, uint64_t seed)
{
	memset(r, 0, sizeof *r);
	r->s = seed;
	const char *plain[] = {"k0", "k1", "k2", "k3", "k4", "q\"\\\n", "#sha256:x", "é☕"};
	for (int i = 0; i < 8; i++)
		snprintf(r->keys[i], sizeof r->keys[i], "%s", plain[i]);
	memset(r->keys[8], 'L', 600);
	snprintf(r->keys[9], sizeof r->keys[9], "sel::%0599d", 9);
	for (int g = 0; g < RND_GROUPS; g++)
		r->fresh[g] = 1;
}

/* Key k of the pool as an item of group g is keyed: itself, or for AI_PROXY_API_KEY (keyed
 * selectorId::proxyApiKey) "s::" and itself, the proxyApiKey of selector "s". */
static const char *rnd_key(const struct rnd *r, int g, int k, char *buf, size_t cap)
{
	if (rnd_ids[g] != GW_GROUP_AI_PROXY_API_KEY)
		return r->keys[k];
	snprintf(buf, cap, "s::%s", r->keys[k]);
	return buf;
}

static struct tv rnd_version(struct rnd *r, int g)
{
	const char *kv[2 * RND_POOL + 1];
	char vals[RND_POOL][1500], keys[RND_POOL][720], md5[32];
	int n = 0;
	for (int k = 0; k < RND_POOL; k++) {
		if (!r->rev[g][k])
			continue;
		json_t *key = json_string(r->keys[k]);
		char *text = json_dumps(key, JSON_ENCODE_ANY);
		json_decref(key);
		if (rnd_ids[g] == GW_GROUP_AI_PROXY_API_KEY)
			snprintf(vals[n], sizeof vals[n],
			         "{\"selectorId\":\"s\",\"proxyApiKey\":%s,\"k\":%d,\"rev\":%d}",
			         text, k, r->rev[g][k]);
		else
			snprintf(vals[n], sizeof vals[n], "{\"id\":%s,\"k\":%d,\"rev\":%d}", text,
			         k, r->rev[g][k]);
		free(text);
		kv[2 * n] = rnd_key(r, g, k, keys[n], sizeof keys[n]);
		kv[2 * n + 1] = vals[n];
		n++;
	}
	kv[2 * n] = NULL;
	snprintf(md5, sizeof md5, "v%d", ++r->version);
	return mk(rnd_ids[g], md5, r->version, kv);
}

/* 1..3 keys of group g added, updated or removed; returns how many. */
static int rnd_touch(struct rnd *r, int g)
{
	int n = 1 + (int)rnd_next(r, 3);
	for (int i = 0; i < n; i++) {
		int k = (int)rnd_next(r, RND_POOL);
		r->rev[g][k] = r->rev[g][k] && rnd_next(r, 3) == 0 ? 0 : r->rev[g][k] + 1;
	}
	return n;
}

static void rnd_deliver(struct rnd *r, int g)
{
	deliver_ok(rnd_version(r, g));
	r->fresh[g] = 0;
}

/* The reader after a poll holds what a full read of the same groups holds now. */
static void assert_matches_full_read(MDB_env *env, struct cache_reader *rd, int step)
{
	const char *names[RND_GROUPS];
	for (size_t i = 0; i < rd->n_groups; i++)
		names[i] = rd->groups[i].name;
	struct cache_reader full;
	cache_reader_init(&full, env, names, rd->n_groups);
	ck_assert_int_eq(cache_reader_poll(&full), 0);
	ck_assert_int_eq(full.how, CR_FULL);
	ck_assert_msg(full.gen == rd->gen, "step %d: full read at %llu, reader at %llu", step,
	              full.gen, rd->gen);
	char diff[400];
	ck_assert_msg(cache_reader_same(rd, &full, diff, sizeof diff),
	              "step %d: the incremental reader differs from a full read: %s", step, diff);
	cache_reader_free(&full);
}

START_TEST(an_incremental_reader_always_holds_what_a_full_read_holds)
{
	load("change_log: 8\n");
	struct rnd r;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	rnd_init(&r, seed);
	for (int g = 0; g < RND_GROUPS; g++) {
		rnd_touch(&r, g);
		rnd_deliver(&r, g);
	}
	MDB_env *env;
	ck_assert_int_eq(mdb_env_create(&env), 0);
	ck_assert_int_eq(mdb_env_set_maxdbs(env, GW_CACHE_MAX_DBS), 0);
	/* MDB_NOTLS: the helpers here open and close other handles of the environment, and
	 * closing one clears every reader slot of this process; without a slot held between
	 * transactions, that cannot pull one from under these readers */
	ck_assert_int_eq(mdb_env_open(env, envdir, MDB_RDONLY | MDB_NOTLS, 0), 0);
	/* every: polls after every commit; rules: reads RULE only (entries of other groups
	 * are not its business); lagging: polls now and then, often further behind than the
	 * log reaches */
	struct cache_reader every, rules, lagging;
	cache_reader_init(&every, env, rnd_names, RND_GROUPS);
	cache_reader_init(&rules, env, (const char *const[]){"RULE"}, 1);
	cache_reader_init(&lagging, env, rnd_names, RND_GROUPS);
	ck_assert_int_eq(cache_reader_poll(&every), 0);
	ck_assert_int_eq(cache_reader_poll(&rules), 0);
	ck_assert_int_eq(cache_reader_poll(&lagging), 0);
	int lag_incremental = 0, lag_behind = 0, lag_gap = 0, replaced = 0;
	for (int step = 0; step < RND_STEPS; step++) {
		unsigned kind = rnd_next(&r, 100);
		int g = (int)rnd_next(&r, RND_GROUPS), touched = 0, drift = 0;
		if (kind < 4) {
			reload_plugin("change_log: 8\n"); /* a restart */
			for (int i = 0; i < RND_GROUPS; i++)
				r.fresh[i] = 1;
			continue;
		}
		if (kind < 8) {
			/* a gap: an entry the lagging reader needs goes missing */
			char *f = read1(GW_CACHE_META_DB, GW_CACHE_KEY_CHANGES_FROM);
			unsigned long long from = strtoull(f, NULL, 10),
			                   now = (unsigned long long)generation();
			free(f);
			if (lagging.gen + 1 < from || lagging.gen + 2 > now)
				continue;
			char key[24];
			gen_key(key, (long)lagging.gen + 2);
			hand_edit(GW_CACHE_CHANGES_DB, key, NULL);
			ck_assert_int_eq(cache_reader_poll(&lagging), 0);
			ck_assert_msg(lagging.how == CR_FULL &&
			                  strncmp(lagging.why_full, "gap at", 6) == 0,
			              "step %d: a gap not seen (%d, %s)", step, lagging.how,
			              lagging.why_full);
			assert_matches_full_read(env, &lagging, step);
			lag_gap++;
			continue;
		}
		if (kind < 14) {
			/* drift: a key deleted behind the agent's back, then a change of the group
			 */
			int k = (int)rnd_next(&r, 5);
			if (r.rev[g][k]) {
				char key[720];
				hand_edit(rnd_names[g], rnd_key(&r, g, k, key, sizeof key), NULL);
				drift = 1;
			}
		}
		if (kind >= 14 && kind < 22)
			touched = 0; /* a new version with the same items: the meta entry only */
		else
			touched = rnd_touch(&r, g);
		int whole = r.fresh[g] || drift;
		rnd_deliver(&r, g);

		ck_assert_int_eq(cache_reader_poll(&every), 0);
		ck_assert_msg(every.how == CR_INCREMENTAL, "step %d: %d (%s)", step, every.how,
		              every.why_full);
		if (!whole) {
			/* the cost of what changed: the touched keys, no group read whole */
			ck_assert_int_eq(every.groups_reread, 0);
			ck_assert_int_le(every.items_read, touched);
		} else if (every.groups_reread) {
			replaced++;
		}
		assert_matches_full_read(env, &every, step);
		ck_assert_int_eq(cache_reader_poll(&rules), 0);
		ck_assert_int_ne(rules.how, CR_FULL);
		assert_matches_full_read(env, &rules, step);
		if (rnd_next(&r, 12) == 0) {
			ck_assert_int_eq(cache_reader_poll(&lagging), 0);
			if (lagging.how == CR_INCREMENTAL)
				lag_incremental++;
			else if (strncmp(lagging.why_full, "behind the log", 14) == 0)
				lag_behind++;
			else
				ck_abort_msg("step %d: lagging reader read whole: %s", step,
				             lagging.why_full);
			assert_matches_full_read(env, &lagging, step);
		}
	}
	/* every path was taken, so the comparisons above proved something */
	ck_assert_int_gt(lag_incremental, 0);
	ck_assert_int_gt(lag_behind, 0);
	ck_assert_int_gt(lag_gap, 0);
	ck_assert_int_gt(replaced, 0);
	cache_reader_free(&every);
	cache_reader_free(&rules);
	cache_reader_free(&lagging);
	mdb_env_close(env);
}
END_TEST

/* ------------------------------------------------------------ a full disk */

/* A small tmpfs at `mnt`, seen by this test process only (a private mount namespace, so
 * nothing outlives the test). NULL, or gwt_host_error(h) it cannot be had here. */
static const char *private_tmpfs(const char *mnt, const char *opts)
{
	const char *fork_mode = getenv("CK_FORK");
	if (fork_mode && strcmp(fork_mode, "no") == 0)
		return "CK_FORK=no: a mount namespace would outlive the test";
	if (geteuid() == 0) {
		if (unshare(CLONE_NEWNS) != 0)
			return "unshare(CLONE_NEWNS) refused";
	} else {
		/* an unprivileged user namespace, where we may mount a tmpfs */
		uid_t uid = geteuid();
		gid_t gid = getegid();
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
			return "unprivileged user namespaces are not available";
		char map[64];
		FILE *f = fopen("/proc/self/setgroups", "w");
		if (f) {
			fputs("deny", f);
			fclose(f);
		}
		snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
		if (!(f = fopen("/proc/self/uid_map", "w")) || fputs(map, f) < 0 || fclose(f))
			return "cannot write uid_map";
		snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
		if (!(f = fopen("/proc/self/gid_map", "w")) || fputs(map, f) < 0 || fclose(f))
			return "cannot write gid_map";
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return "cannot make the mounts private";
	if (mount("tmpfs", mnt, "tmpfs", 0, opts) != 0)
		return "cannot mount a tmpfs";
	return NULL;
}

/* Fills the filesystem of `dir` but `leave` bytes; the file it used is `path`. */
static void fill(const char *path, off_t leave)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	char block[4096];
	memset(block, 'f', sizeof block);
	off_t size = 0;
	ssize_t n;
	while ((n = write(fd, block, sizeof block)) > 0)
		size += n;
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_int_eq(ftruncate(fd, size > leave ? size - leave : 0), 0);
	close(fd);
}

/* Issue 20 item 7: LMDB turns the short write of a full disk into EIO, and the agent said
 * "Input/output error". */
START_TEST(a_full_disk_is_reported_as_no_space_left_and_the_retry_succeeds)
{
	char mnt[4300], filler[4400];
	snprintf(mnt, sizeof mnt, "%s/small", dir);
	snprintf(filler, sizeof filler, "%s/filler", mnt);
	ck_assert_int_eq(mkdir(mnt, 0700), 0);
	const char *skip = private_tmpfs(mnt, "size=2m");
	if (skip) {
		fprintf(stderr, "a_full_disk_is_reported_as_no_space_left: skipped: %s\n", skip);
		return;
	}
	snprintf(envdir, sizeof envdir, "%s/env", mnt);
	load("");
	deliver_ok(big_version(1, 20));
	long gen = generation();
	/* room for a few pages: the commit's first writes fit, then one stops short */
	fill(filler, 3 * 4096);
	ck_assert_int_ne(deliver(big_version(2, 200)), 0);
	ck_assert_msg(strstr(gwt_host_error(h), "RULE") &&
	                  strstr(gwt_host_error(h), "No space left on device"),
	              "the reason names the group and the full disk: %s", gwt_host_error(h));
	ck_assert_int_eq(generation(), gen);
	/* space again: the dispatcher's retry goes through */
	ck_assert_int_eq(unlink(filler), 0);
	deliver_ok(big_version(2, 200));
	ck_assert_int_eq(generation(), gen + 1);
	plugtest_stop(); /* the environment closed before its filesystem goes */
	ck_assert_int_eq(umount2(mnt, MNT_DETACH), 0);
}
END_TEST

/* A group newer than the plugin's header (a newer agent's) is cached like any other, in a
 * database of its name, one commit and one change-log entry per change. */
START_TEST(a_group_it_does_not_know_gets_a_database_of_its_name)
{
	load("");
	int g = gwt_host_add_group(h, "FUTURE_GROUP");
	struct gwt_version *v1 = gwt_version_new_unknown(
	    g, "FUTURE_GROUP", "f1", 1, "[{\"id\":\"x\"},{\"id\":\"y\"}]", err, sizeof err);
	struct gwt_version *v2 = gwt_version_new_unknown(
	    g, "FUTURE_GROUP", "f2", 2, "[{\"id\":\"x\",\"v\":2}]", err, sizeof err);
	ck_assert_msg(v1 && v2, "%s", err);
	struct gwt_change *c = gwt_change_between(NULL, v1, err, sizeof err);
	ck_assert_int_eq(gwt_apply(h, plugin, state, gwt_change(c), NULL), 0);
	gwt_change_free(c);
	assert_keys("FUTURE_GROUP", "x,y");
	assert_entry(1, "{\"group\":\"FUTURE_GROUP\",\"replace\":true}");
	c = gwt_change_between(v1, v2, err, sizeof err);
	ck_assert_int_eq(gwt_apply(h, plugin, state, gwt_change(c), NULL), 0);
	gwt_change_free(c);
	assert_keys("FUTURE_GROUP", "x");
	assert_value("FUTURE_GROUP", "x", "{\"id\":\"x\",\"v\":2}");
	assert_value(GW_CACHE_META_DB, "FUTURE_GROUP",
	             "{\"md5\":\"f2\",\"lastModifyTime\":2,\"count\":1,\"stale\":false}");
	assert_entry(2, "{\"group\":\"FUTURE_GROUP\",\"put\":[\"x\"],\"del\":[\"y\"]}");
	ck_assert_int_eq(generation(), 2);
	gwt_version_free(v1);
	gwt_version_free(v2);
}
END_TEST

START_TEST(bad_options_stop_start_up)
{
	ck_assert(strstr(plugtest_start_fails(""), "missing required key 'path'"));
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "path: %s\nmap_size: 64MB\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "map_size"));
	snprintf(yaml, sizeof yaml, "path: %s\nmap_size: 1KiB\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "at least 64KiB"));
	snprintf(yaml, sizeof yaml, "path: %s\nmode: \"0750\"\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "execute"));
	snprintf(yaml, sizeof yaml, "path: %s\nmode: \"0440\"\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "owner read and write"));
	snprintf(yaml, sizeof yaml, "path: %s\nmax_readers: 0\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "max_readers"));
	snprintf(yaml, sizeof yaml, "path: %s\nchange_log: -1\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "change_log: between 0"));
	snprintf(yaml, sizeof yaml, "path: %s\nchange_log: many\n", envdir);
	ck_assert(strstr(plugtest_start_fails(yaml), "change_log"));
	/* a file where the directory should be */
	char file[4300];
	snprintf(file, sizeof file, "%s/plain", dir);
	FILE *f = fopen(file, "w");
	fclose(f);
	snprintf(yaml, sizeof yaml, "path: %s\n", file);
	ck_assert(strstr(plugtest_start_fails(yaml), "not a directory"));
	snprintf(yaml, sizeof yaml, "path: %s/below\n", file);
	ck_assert(strstr(plugtest_start_fails(yaml), "not a directory"));
	/* path is required and has no default: an empty one is not told to fall back on one */
	ck_assert_msg(strstr(plugtest_start_fails("path: \"\"\n"),
	                     "config.path: must not be empty (the key is "
	                     "required and has no default: name a path)"),
	              "%s", err);
}
END_TEST

int main(void)
{
	TCase *tc = plugtest_tcase("lmdb", setup);
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
	tcase_add_test(tc, the_change_log_names_what_each_commit_put_and_deleted);
	tcase_add_test(tc, a_restart_or_a_repair_logs_the_group_as_replaced);
	tcase_add_test(tc, the_log_keeps_exactly_the_last_change_log_generations);
	tcase_add_test(tc,
	               change_log_0_removes_the_log_and_an_upgrade_starts_it_at_the_current_commit);
	tcase_add_test(tc, a_log_that_does_not_reach_the_previous_commit_starts_again);
	tcase_add_test(tc, keys_in_the_log_are_json_strings);
	tcase_add_test(tc,
	               a_key_longer_than_lmdb_holds_is_stored_under_its_digest_and_its_group_flows);
	tcase_add_test(tc, an_incremental_reader_always_holds_what_a_full_read_holds);
	tcase_add_test(tc, a_full_disk_is_reported_as_no_space_left_and_the_retry_succeeds);
	tcase_add_test(tc, a_group_it_does_not_know_gets_a_database_of_its_name);
	tcase_add_test(tc, bad_options_stop_start_up);
	return plugtest_run("plugins/lmdb/.libs/lmdb.so", "cache", "lmdb plugin", tc);
}
