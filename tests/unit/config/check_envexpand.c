/*
 * Unit tests for agent/config/envexpand.c: ${VAR}, ${VAR:-default}, $$, a lone '$', and every
 * refusal, with a lookup table instead of the process environment so the cases are
 * independent of where the tests run (one test also goes through getenv()).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "config/envexpand.h"

static const char *table_lookup(const char *name, void *ctx)
{
	(void)ctx;
	static const char *const vars[][2] = {
	    {"HOME", "/home/gw"}, {"EMPTY", ""},         {"PW", "s3cr$t{}"},
	    {"A_1", "one"},       {"NESTED", "${HOME}"},
	};
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		if (strcmp(vars[i][0], name) == 0)
			return vars[i][1];
	return NULL;
}

static void expands_to(const char *in, const char *want)
{
	struct gw_err err = {0};
	char *out = NULL;
	ck_assert_msg(env_expand(in, &out, table_lookup, NULL, &err) == 0, "'%s': %s", in, err.msg);
	ck_assert_str_eq(out, want);
	free(out);
}

static void refused(const char *in, const char *msg_part)
{
	struct gw_err err = {0};
	char *out = (char *)"untouched";
	ck_assert_msg(env_expand(in, &out, table_lookup, NULL, &err) == -1, "'%s' accepted", in);
	ck_assert_str_eq(out, "untouched");
	ck_assert_msg(strstr(err.msg, msg_part), "'%s': message '%s' lacks '%s'", in, err.msg,
	              msg_part);
}

START_TEST(plain_text)
{
	expands_to("", "");
	expands_to("no variables here", "no variables here");
	expands_to("pa$word", "pa$word"); /* a lone '$' stays */
	expands_to("$", "$");
	expands_to("cost: 5$", "cost: 5$");
	expands_to("$HOME", "$HOME"); /* only the braced form expands */
	ck_assert_int_eq(env_has_refs("pa$word"), 0);
	ck_assert_int_eq(env_has_refs("a${B}"), 1);
	ck_assert_int_eq(env_has_refs("a$$"), 1);
}
END_TEST

START_TEST(variables)
{
	expands_to("${HOME}", "/home/gw");
	expands_to("${HOME}/bin:${A_1}", "/home/gw/bin:one");
	expands_to("x${EMPTY}y", "xy");  /* set but empty is empty, not an error */
	expands_to("${PW}", "s3cr$t{}"); /* values are not re-scanned */
	expands_to("${NESTED}", "${HOME}");
	expands_to("$${HOME}", "${HOME}"); /* $$ is a literal $ */
	expands_to("$$$$", "$$");
	expands_to("$$${HOME}", "$/home/gw");
}
END_TEST

START_TEST(defaults)
{
	expands_to("${UNSET:-123456}", "123456");
	expands_to("${HOME:-/root}", "/home/gw");
	expands_to("${EMPTY:-fallback}", "fallback"); /* like the shell: empty uses the default */
	expands_to("${UNSET:-}", "");
	expands_to("${UNSET:-a b:c$d}", "a b:c$d");
	expands_to("<${UNSET:-x}${A_1:-y}>", "<xone>");
}
END_TEST

START_TEST(refusals)
{
	refused("${UNSET}", "environment variable 'UNSET' is not set");
	refused("a ${HOME} ${MISSING_TOO}", "'MISSING_TOO' is not set");
	refused("${HOME", "unterminated '${HOME'");
	refused("${", "must be followed by a variable name");
	refused("${}", "must be followed by a variable name");
	refused("${1ABC}", "must be followed by a variable name");
	refused("${A-B}", "expected ${A} or ${A:-default}");
	refused("${A:=x}", "expected ${A} or ${A:-default}");
	refused("${UNSET:-abc", "unterminated '${UNSET:-'");
	refused("${UNSET:-${HOME}}", "cannot contain '${'");
	char longname[400];
	memset(longname, 'A', sizeof longname);
	memcpy(longname, "${", 2);
	longname[sizeof longname - 2] = '}';
	longname[sizeof longname - 1] = '\0';
	refused(longname, "longer than");
}
END_TEST

/* Messages name the variable but never echo a default, which may be a secret. */
START_TEST(no_secret_in_messages)
{
	struct gw_err err = {0};
	char *out;
	ck_assert_int_eq(env_expand("${X:-hunter2", &out, table_lookup, NULL, &err), -1);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	ck_assert_int_eq(env_expand("hunter2${UNSET}", &out, table_lookup, NULL, &err), -1);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
}
END_TEST

START_TEST(process_environment)
{
	struct gw_err err = {0};
	char *out = NULL;
	ck_assert_int_eq(setenv("GWSYNC_TEST_ENVEXPAND", "from-env", 1), 0);
	unsetenv("GWSYNC_TEST_ENVEXPAND_UNSET");
	ck_assert_int_eq(env_expand("v=${GWSYNC_TEST_ENVEXPAND}", &out, NULL, NULL, &err), 0);
	ck_assert_str_eq(out, "v=from-env");
	free(out);
	ck_assert_int_eq(env_expand("${GWSYNC_TEST_ENVEXPAND_UNSET}", &out, NULL, NULL, &err), -1);
	ck_assert_str_eq(err.msg, "environment variable 'GWSYNC_TEST_ENVEXPAND_UNSET' is not set");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("envexpand");
	TCase *tc = tcase_create("envexpand");
	tcase_add_test(tc, plain_text);
	tcase_add_test(tc, variables);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, no_secret_in_messages);
	tcase_add_test(tc, process_environment);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
