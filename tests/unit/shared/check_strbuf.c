/*
 * Unit tests of shared/strbuf.c: appends of every kind, an empty result that is still a
 * string, reserve keeping the text, and a reset that starts again.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"

START_TEST(appends_and_finish)
{
	struct strbuf b = {0};
	ck_assert_int_eq(strbuf_adds(&b, "a"), 0);
	ck_assert_int_eq(strbuf_add(&b, "bcd", 2), 0);
	ck_assert_int_eq(strbuf_addf(&b, "-%d-%s", 42, "x"), 0);
	ck_assert_int_eq(strbuf_add_escaped(&b, "a b/"), 0);
	ck_assert_str_eq(b.p, "abc-42-xa%20b%2F");
	char *s = strbuf_finish(&b);
	ck_assert_str_eq(s, "abc-42-xa%20b%2F");
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.len, 0);
	free(s);
}
END_TEST

START_TEST(empty_is_a_string)
{
	struct strbuf b = {0};
	char *s = strbuf_finish(&b);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

START_TEST(long_text_and_reserve)
{
	struct strbuf b = {0};
	ck_assert_int_eq(strbuf_reserve(&b, 10), 0);
	ck_assert_uint_ge(b.cap, 10);
	for (int i = 0; i < 10000; i++)
		strbuf_add(&b, "0123456789", 10);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_int_eq(strbuf_reserve(&b, 200000), 0);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_int_eq(memcmp(b.p + 99990, "0123456789", 10), 0);
	ck_assert_int_eq(b.p[b.len], '\0');
	strbuf_reset(&b);
	ck_assert_ptr_null(b.p);
	strbuf_adds(&b, "again");
	ck_assert_str_eq(b.p, "again");
	strbuf_reset(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("strbuf");
	TCase *tc = tcase_create("strbuf");
	tcase_add_test(tc, appends_and_finish);
	tcase_add_test(tc, empty_is_a_string);
	tcase_add_test(tc, long_text_and_reserve);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
