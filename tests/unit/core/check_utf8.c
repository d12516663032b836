/*
 * utf8_scrub: valid text untouched, every invalid byte (cut sequences, overlongs,
 * surrogates, GBK) replaced, and the result always accepted by jansson.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

START_TEST(valid_text_is_untouched)
{
	char s[] = "plain, café, 限流-規則, 😀";
	ck_assert_uint_eq(utf8_scrub(s), 0);
	ck_assert_str_eq(s, "plain, café, 限流-規則, 😀");
}
END_TEST

START_TEST(invalid_bytes_become_question_marks)
{
	struct {
		const char *in, *out;
	} cases[] = {
	    {"cut \xe6\x9c", "cut ??"},           /* a 3-byte character cut after 2 */
	    {"\xc0\xaf", "??"},                   /* overlong '/' */
	    {"\xed\xa0\x80", "???"},              /* a UTF-16 surrogate */
	    {"\xf4\x90\x80\x80", "????"},         /* above U+10FFFF */
	    {"gbk \xb7\xfe\xce\xf1", "gbk ????"}, /* GBK text */
	    {"ok\xffok", "ok?ok"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = strdup(cases[i].in);
		utf8_scrub(s);
		ck_assert_str_eq(s, cases[i].out);
		json_t *j = json_string(s);
		ck_assert_ptr_nonnull(j);
		json_decref(j);
		free(s);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("utf8");
	TCase *tc = tcase_create("scrub");
	tcase_add_test(tc, valid_text_is_untouched);
	tcase_add_test(tc, invalid_bytes_become_question_marks);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
