/*
 * Unit tests for agent/core/readfile.c: a regular file is read whole within its cap;
 * anything else (a FIFO, a directory, a device) is refused with "PATH: not a regular file"
 * at once, never opened in a way that blocks (a FIFO without a writer would block a plain
 * open() for ever: the test would then hang until check's timeout).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/readfile.h"

static char dir[256];

static void setup(void)
{
	snprintf(dir, sizeof dir, "%s/gwsync-check-readfile-XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char p[512];
	const char *names[] = {"plain", "fifo", "big"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static const char *path_of(const char *name)
{
	static char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

START_TEST(reads_a_regular_file_whole)
{
	FILE *f = fopen(path_of("plain"), "w");
	ck_assert_ptr_nonnull(f);
	fputs("secret\n", f);
	fclose(f);
	char *buf;
	size_t len;
	struct gw_err err = {0};
	ck_assert_int_eq(readfile(path_of("plain"), 64, &buf, &len, &err), 0);
	ck_assert_uint_eq(len, 7);
	ck_assert_str_eq(buf, "secret\n");
	free(buf);
	ck_assert_int_eq(readfile_check(path_of("plain"), &err), 0);
	/* exactly at the cap is fine, one byte over is not */
	ck_assert_int_eq(readfile(path_of("plain"), 7, &buf, &len, &err), 0);
	free(buf);
	ck_assert_int_eq(readfile(path_of("plain"), 6, &buf, &len, &err), -1);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_ptr_null(buf);
	ck_assert_ptr_nonnull(strstr(err.msg, "is larger than 6 bytes"));
}
END_TEST

START_TEST(an_empty_file_is_an_empty_string)
{
	FILE *f = fopen(path_of("plain"), "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	char *buf;
	size_t len = 99;
	struct gw_err err = {0};
	ck_assert_int_eq(readfile(path_of("plain"), 64, &buf, &len, &err), 0);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(buf, "");
	free(buf);
}
END_TEST

START_TEST(a_large_file_within_the_cap)
{
	FILE *f = fopen(path_of("big"), "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 100000; i++)
		fputs("0123456789", f);
	fclose(f);
	char *buf;
	size_t len;
	struct gw_err err = {0};
	ck_assert_int_eq(readfile(path_of("big"), 4 << 20, &buf, &len, &err), 0);
	ck_assert_uint_eq(len, 1000000);
	ck_assert_int_eq(memcmp(buf + 999990, "0123456789", 10), 0);
	free(buf);
	ck_assert_int_eq(readfile(path_of("big"), 1 << 20, &buf, &len, &err), 0);
	free(buf);
	ck_assert_int_eq(readfile(path_of("big"), 999999, &buf, &len, &err), -1);
	ck_assert_int_eq(errno, EFBIG);
}
END_TEST

START_TEST(a_fifo_is_refused_without_blocking)
{
	ck_assert_int_eq(mkfifo(path_of("fifo"), 0600), 0);
	char *buf;
	size_t len;
	struct gw_err err = {0};
	char want[600];
	snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", path_of("fifo"));
	ck_assert_int_eq(readfile(path_of("fifo"), 64, &buf, &len, &err), -1);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(readfile_check(path_of("fifo"), &err), -1);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_lt(readfile_open(path_of("fifo"), NULL, &err), 0);
}
END_TEST

START_TEST(directories_and_devices_are_refused)
{
	char *buf;
	size_t len;
	struct gw_err err = {0};
	char want[600];
	ck_assert_int_eq(readfile(dir, 64, &buf, &len, &err), -1);
	snprintf(want, sizeof want, "%s: not a regular file (a directory)", dir);
	ck_assert_str_eq(err.msg, want);
	ck_assert_int_eq(readfile("/dev/zero", 64, &buf, &len, &err), -1);
	ck_assert_str_eq(err.msg, "/dev/zero: not a regular file (a character device)");
	ck_assert_int_eq(readfile_check("/dev/null", &err), -1);
	ck_assert_str_eq(err.msg, "/dev/null: not a regular file (a character device)");
}
END_TEST

START_TEST(a_missing_file_says_so)
{
	char *buf;
	size_t len;
	struct gw_err err = {0};
	ck_assert_int_eq(readfile(path_of("absent"), 64, &buf, &len, &err), -1);
	ck_assert_int_eq(errno, ENOENT);
	char want[600];
	snprintf(want, sizeof want, "cannot read '%s': No such file or directory",
	         path_of("absent"));
	ck_assert_str_eq(err.msg, want);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("readfile");
	TCase *tc = tcase_create("readfile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reads_a_regular_file_whole);
	tcase_add_test(tc, an_empty_file_is_an_empty_string);
	tcase_add_test(tc, a_large_file_within_the_cap);
	tcase_add_test(tc, a_fifo_is_refused_without_blocking);
	tcase_add_test(tc, directories_and_devices_are_refused);
	tcase_add_test(tc, a_missing_file_says_so);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
