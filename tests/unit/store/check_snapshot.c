/*
 * Unit tests of the snapshot: a write/read round trip is byte-exact and provisional,
 * corrupt and missing files are told apart, the writer thread follows the store and
 * survives an unwritable directory.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "model/model.h"
#include "store/snapshot.h"

static char dir[256];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/gwsync-snap-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct group_data *rules(const char *md5, long lmt, const char *items)
{
	char doc[2048];
	snprintf(doc, sizeof doc, "{\"md5\":\"%s\",\"lastModifyTime\":%ld,\"data\":[%s]}", md5, lmt,
	         items);
	struct group_data *gd;
	struct gw_err err = {0};
	ck_assert_msg(model_parse_group(GW_GROUP_RULE, doc, strlen(doc), "http://a", &gd, &err) ==
	                  0,
	              "%s", err.msg);
	return gd;
}

START_TEST(round_trip_is_exact_and_provisional)
{
	const char *items =
	    "{\"id\":\"r1\",\"name\":\"caf\\u00e9 規則\",\"x\":[1, 2.50]} ,{\"id\":\"r2\"}";
	struct group_data *gd = rules("abc", 42, items), *back = NULL;
	struct gw_err err = {0};
	ck_assert_msg(snapshot_write(dir, gd, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(snapshot_read(dir, GW_GROUP_RULE, &back, &err), 0);
	ck_assert_int_eq(back->provisional, 1);
	ck_assert_str_eq(back->md5, "abc");
	ck_assert_int_eq(back->last_modify_time, 42);
	ck_assert_str_eq(back->server, "snapshot");
	ck_assert_uint_eq(back->n_items, 2);
	ck_assert_str_eq(back->items[0].json, gd->items[0].json);
	char name[64];
	ck_assert_str_eq(gd_item_text(&back->items[0], "name", name, sizeof name), "café 規則");
	group_data_unref(gd);
	group_data_unref(back);
	/* no stray temporary files */
	char cmd[300];
	snprintf(cmd, sizeof cmd, "test $(ls -A '%s' | wc -l) -eq 1", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(missing_and_corrupt)
{
	struct group_data *gd = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(snapshot_read(dir, GW_GROUP_PLUGIN, &gd, &err), 1);
	char path[512];
	snprintf(path, sizeof path, "%s/PLUGIN.json", dir);
	FILE *f = fopen(path, "w");
	fputs("{\"group\":\"PLUGIN\",\"md5\":\"x\",\"lastModifyTime\":1,\"data\":[{\"id\":", f);
	fclose(f);
	ck_assert_int_eq(snapshot_read(dir, GW_GROUP_PLUGIN, &gd, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "PLUGIN.json"));
	ck_assert_ptr_null(gd);

	struct store *st = store_new();
	struct gw_log *log;
	gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err);
	const enum gw_group groups[] = {GW_GROUP_PLUGIN, GW_GROUP_RULE};
	struct group_data *r = rules("m", 5, "{\"id\":\"a\"}");
	ck_assert_int_eq(snapshot_write(dir, r, &err), 0);
	ck_assert_uint_eq(snapshot_load(dir, groups, 2, st, log), 1); /* corrupt PLUGIN skipped */
	struct group_data *got = store_get(st, GW_GROUP_RULE);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(got->provisional, 1);
	ck_assert_ptr_null(store_get(st, GW_GROUP_PLUGIN));
	group_data_unref(got);
	group_data_unref(r);
	store_free(st);
	gw_log_close(log);
}
END_TEST

static int wait_file(const char *path, const char *needle)
{
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(path, "r");
		if (f) {
			char buf[4096] = {0};
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[n] = '\0';
			if (strstr(buf, needle))
				return 1;
		}
		usleep(10000);
	}
	return 0;
}

START_TEST(writer_follows_the_store_and_skips_provisional)
{
	struct store *st = store_new();
	struct gw_log *log;
	struct gw_err err = {0};
	gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err);
	struct snapshot_writer *w;
	ck_assert_int_eq(snapshot_writer_start(&w, dir, st, log, &err), 0);
	struct group_data *p = rules("prov", 1, "{\"id\":\"p\"}");
	p->provisional = 1;
	store_put(st, p);
	struct group_data *v = rules("v2", 2, "{\"id\":\"new\"}");
	ck_assert_int_eq(store_swap(st, v, ingest_accept_polled, NULL), INGEST_ACCEPTED);
	char path[512];
	snprintf(path, sizeof path, "%s/RULE.json", dir);
	ck_assert(wait_file(path, "\"md5\": \"v2\""));
	snapshot_writer_free(w);
	group_data_unref(p);
	group_data_unref(v);
	store_free(st);
	gw_log_close(log);
}
END_TEST

START_TEST(writer_start_sweeps_temporaries_left_by_a_crash)
{
	char tmp[512], other[512];
	snprintf(tmp, sizeof tmp, "%s/.RULE.json.tmp.AbC123", dir);
	snprintf(other, sizeof other, "%s/.notes.tmp.keep", dir);
	FILE *f = fopen(tmp, "w");
	fputs("{\"group\":\"RU", f);
	fclose(f);
	f = fopen(other, "w");
	fclose(f);
	struct store *st = store_new();
	struct gw_log *log;
	struct gw_err err = {0};
	gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err);
	struct snapshot_writer *w;
	ck_assert_int_eq(snapshot_writer_start(&w, dir, st, log, &err), 0);
	ck_assert_int_ne(access(tmp, F_OK), 0);   /* ours: gone */
	ck_assert_int_eq(access(other, F_OK), 0); /* not ours: kept */
	snapshot_writer_free(w);
	store_free(st);
	gw_log_close(log);
}
END_TEST

START_TEST(unwritable_dir_is_an_error_not_a_crash)
{
	struct group_data *gd = rules("a", 1, "");
	struct gw_err err = {0};
	ck_assert_int_eq(snapshot_write("/dev/null/sub", gd, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "snapshot of RULE"));
	group_data_unref(gd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("snapshot");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, round_trip_is_exact_and_provisional);
	tcase_add_test(tc, missing_and_corrupt);
	tcase_add_test(tc, writer_follows_the_store_and_skips_provisional);
	tcase_add_test(tc, writer_start_sweeps_temporaries_left_by_a_crash);
	tcase_add_test(tc, unwritable_dir_is_an_error_not_a_crash);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
