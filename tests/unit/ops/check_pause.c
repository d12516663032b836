/*
 * Unit tests of the pause switch: the state is the file STATE_DIR/paused, so it survives a
 * "restart" (a new switch on the same directory); a dispatcher attached to a paused switch
 * never delivers a first version and, on resume, delivers the newest one; a state_dir that
 * cannot be written still pauses at once but says the state was not recorded.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "deliver/dispatch.h"
#include "ops/pause.h"
#include "store/store.h"
#include "subtest.h"

static char *dir;
static char file[4200];
static struct gw_log *lg;

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(file, sizeof file, "%s/paused", dir);
	lg = test_log(NULL);
}

static void teardown(void)
{
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

static int exists(const char *path)
{
	struct stat sb;
	return lstat(path, &sb) == 0;
}

static struct pause_switch *open_switch(const char *state_dir)
{
	struct pause_switch *ps = NULL;
	struct gw_err err = {0};
	ck_assert_msg(pause_open(&ps, state_dir, lg, &err) == 0, "%s", err.msg);
	return ps;
}

START_TEST(state_survives_a_restart)
{
	struct pause_switch *ps = open_switch(dir);
	ck_assert_int_eq(pause_get(ps), 0);
	ck_assert_str_eq(pause_path(ps), file);
	int changed = -1, persisted = -1;
	struct gw_err err = {0};
	ck_assert_int_eq(pause_set(ps, 1, "a test", &changed, &persisted, &err), 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_int_eq(persisted, 1);
	ck_assert_int_eq(pause_get(ps), 1);
	ck_assert(exists(file));
	char *text = slurp(file, NULL);
	ck_assert_ptr_nonnull(strstr(text, "by a test"));
	free(text);
	/* pausing again changes nothing */
	ck_assert_int_eq(pause_set(ps, 1, "a test", &changed, &persisted, &err), 0);
	ck_assert_int_eq(changed, 0);
	pause_close(ps);

	/* "restart" */
	ps = open_switch(dir);
	ck_assert_int_eq(pause_get(ps), 1);
	int paused = 0;
	ck_assert_int_eq(pause_load(dir, &paused, &err), 0);
	ck_assert_int_eq(paused, 1);
	ck_assert_int_eq(pause_set(ps, 0, "a test", &changed, &persisted, &err), 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_int_eq(persisted, 1);
	ck_assert(!exists(file));
	pause_close(ps);

	ps = open_switch(dir);
	ck_assert_int_eq(pause_get(ps), 0);
	/* resuming when not paused is fine and leaves no file */
	ck_assert_int_eq(pause_set(ps, 0, "a test", &changed, &persisted, &err), 0);
	ck_assert_int_eq(changed, 0);
	ck_assert(!exists(file));
	pause_close(ps);
	/* no temporary files left behind */
	char cmd[4400];
	snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(operator_can_create_the_file_and_state_dir_may_be_missing)
{
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	struct pause_switch *ps = open_switch(dir);
	ck_assert_int_eq(pause_get(ps), 1);
	pause_close(ps);

	/* a state_dir that does not exist yet: not paused; pausing creates it */
	char sub[4300];
	snprintf(sub, sizeof sub, "%s/not/yet", dir);
	ps = open_switch(sub);
	ck_assert_int_eq(pause_get(ps), 0);
	int changed, persisted;
	struct gw_err err = {0};
	ck_assert_msg(pause_set(ps, 1, "a test", &changed, &persisted, &err) == 0, "%s", err.msg);
	char subfile[4400];
	snprintf(subfile, sizeof subfile, "%s/paused", sub);
	ck_assert(exists(subfile));
	pause_close(ps);
}
END_TEST

START_TEST(unwritable_state_dir_pauses_but_says_so)
{
	/* a state_dir below a regular file cannot be created, even by root */
	char blocker[4300], bad[4400];
	snprintf(blocker, sizeof blocker, "%s/blocker", dir);
	FILE *f = fopen(blocker, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(bad, sizeof bad, "%s/state", blocker);
	struct pause_switch *ps = open_switch(bad);
	int changed = 0, persisted = 1;
	struct gw_err err = {0};
	ck_assert_int_eq(pause_set(ps, 1, "a test", &changed, &persisted, &err), -1);
	ck_assert_int_eq(persisted, 0);
	ck_assert_int_eq(changed, 1);
	ck_assert_int_eq(pause_get(ps), 1); /* in effect anyway */
	ck_assert_ptr_nonnull(strstr(err.msg, blocker));
	pause_close(ps);
}
END_TEST

/* Wait until the dispatcher has delivered `md5` of RULE to subscriber 0, or not. */
static int delivered(struct dispatcher *d, const char *md5, int64_t wait_ms)
{
	int64_t until = gw_mono_ms() + wait_ms;
	for (;;) {
		struct dispatch_status ds;
		struct gw_err err;
		ck_assert_int_eq(dispatcher_status(d, &ds, &err), 0);
		int ok = ds.subscribers[0].groups[GW_GROUP_RULE].delivered &&
		         strcmp(ds.subscribers[0].groups[GW_GROUP_RULE].md5, md5) == 0;
		dispatch_status_free(&ds);
		if (ok)
			return 1;
		if (gw_mono_ms() > until)
			return 0;
		sleep_ms(10);
	}
}

START_TEST(attached_dispatcher_follows_the_switch)
{
	/* a paused state_dir, a dispatcher with one recording subscriber */
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	char out[4300];
	snprintf(out, sizeof out, "%s/rec.txt", dir);
	struct tcfg t;
	tcfg_init(&t);
	char yaml[4400];
	snprintf(yaml, sizeof yaml, "out: %s\n", out);
	tcfg_add(&t, "rec", "recorder", yaml);
	struct subscribers *subs = NULL;
	struct store *st = store_new();
	struct dispatcher *d = NULL;
	struct gw_err err = {0};
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	struct pause_switch *ps = open_switch(dir);
	ck_assert_msg(dispatcher_start(&d, subs, st, &t.cfg, lg, &err) == 0, "%s", err.msg);
	pause_attach(ps, d);

	const char *kv[] = {"r1", "{\"id\":\"r1\"}", NULL};
	struct group_data *gd = gd_make(GW_GROUP_RULE, "v1", 1, kv);
	store_swap(st, gd, ingest_accept_polled, NULL);
	group_data_unref(gd);
	ck_assert_int_eq(delivered(d, "v1", 300), 0); /* paused from the start */
	gd = gd_make(GW_GROUP_RULE, "v2", 2, kv);
	store_swap(st, gd, ingest_accept_polled, NULL);
	group_data_unref(gd);

	int changed, persisted;
	ck_assert_int_eq(pause_set(ps, 0, "a test", &changed, &persisted, &err), 0);
	ck_assert_int_eq(delivered(d, "v2", 5000), 1);
	/* one change, straight to the newest version: v1 was never delivered */
	ck_assert_int_eq(count_lines(out, "apply RULE"), 1);
	ck_assert_int_eq(count_lines(out, "apply RULE md5=v2"), 1);

	ck_assert_int_eq(pause_set(ps, 1, "a test", &changed, &persisted, &err), 0);
	gd = gd_make(GW_GROUP_RULE, "v3", 3, kv);
	store_swap(st, gd, ingest_accept_polled, NULL);
	group_data_unref(gd);
	ck_assert_int_eq(delivered(d, "v3", 300), 0);
	struct dispatch_status ds;
	ck_assert_int_eq(dispatcher_status(d, &ds, &err), 0);
	ck_assert_int_eq(ds.paused, 1);
	dispatch_status_free(&ds);

	dispatcher_free(d);
	pause_close(ps);
	subscribers_free(subs);
	store_free(st);
	tcfg_free(&t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pause");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, state_survives_a_restart);
	tcase_add_test(tc, operator_can_create_the_file_and_state_dir_may_be_missing);
	tcase_add_test(tc, unwritable_state_dir_pauses_but_says_so);
	tcase_add_test(tc, attached_dispatcher_follows_the_switch);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
