/*
 * Unit tests for agent/core/log.c: one event is one line in both formats, whatever the text
 * holds. Text from outside (an admin's error message, item names, paths) must not forge a
 * line: in the text format control characters, DEL, C1 controls, U+2028/2029 and bytes that
 * are not UTF-8 are escaped in every field; the JSON format escapes as JSON does. Secrets
 * are masked before escaping.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"

static char dir[256], path[300];

static void setup(void)
{
	snprintf(dir, sizeof dir, "%s/gwsync-check-log-XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/gwsync.log", dir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

static struct gw_log *open_log(enum gw_log_format format)
{
	struct gw_log *log = NULL;
	struct gw_err err = {0};
	unlink(path);
	ck_assert_int_eq(gw_log_open(&log, GW_LOG_DEBUG, format, path, &err), 0);
	return log;
}

/* The file's lines; *n set. The buffer is static (one test at a time). */
static char **lines(size_t *n)
{
	static char text[65536];
	static char *out[64];
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	size_t len = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[len] = '\0';
	*n = 0;
	for (char *p = text, *nl; *p && *n < 64; p = nl + 1) {
		nl = strchr(p, '\n');
		ck_assert_msg(nl != NULL, "a line without its newline: %s", p);
		*nl = '\0';
		out[(*n)++] = p;
	}
	return out;
}

/* What follows "LEVEL " in a text line (the time stamp and level are not checked here). */
static const char *after_level(const char *line)
{
	const char *p = strchr(line, ' ');
	ck_assert_ptr_nonnull(p);
	while (*p == ' ')
		p++;
	p = strchr(p, ' ');
	ck_assert_ptr_nonnull(p);
	while (*p == ' ')
		p++;
	return p;
}

START_TEST(a_newline_cannot_forge_a_text_line)
{
	struct gw_log *log = open_log(GW_LOG_TEXT);
	LOG_W(log, "poller", "server %s: code 500: %s", "http://a:9095",
	      "busy\n2026-01-01T00:00:00.000Z info  store: accepted PLUGIN version FORGED\r\n");
	gw_log_close(log);
	size_t n;
	char **l = lines(&n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(after_level(l[0]),
	                 "poller: server http://a:9095: code 500: busy\\n2026-01-01T00:00:00.000Z "
	                 "info  store: accepted PLUGIN version FORGED\\r\\n");
}
END_TEST

START_TEST(controls_and_bad_utf8_are_escaped_in_every_field)
{
	struct gw_log *log = open_log(GW_LOG_TEXT);
	/* ESC, BEL, tab, DEL, a C1 control (U+009B, CSI), U+2028, a lone continuation byte, a
	 * cut sequence; ordinary UTF-8 and backslashes stay as they are */
	LOG_I(log, "comp\nonent",
	      "a\x1b[2Jb\x07\tc\x7f d\xc2\x9b e\xe2\x80\xa8 f\x80 g\xe6\xb3 "
	      "h caf\xc3\xa9 \xe6\xb3\xa8\xe6\x96\x87 \\n");
	gw_log_close(log);
	size_t n;
	char **l = lines(&n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(
	    after_level(l[0]),
	    "comp\\nonent: a\\x1b[2Jb\\x07\\tc\\x7f d\\u009b e\\u2028 f\\x80 g\\xe6\\xb3 "
	    "h caf\xc3\xa9 \xe6\xb3\xa8\xe6\x96\x87 \\n");
}
END_TEST

START_TEST(a_long_line_is_cut_whole_and_stays_one_line)
{
	struct gw_log *log = open_log(GW_LOG_TEXT);
	static char big[4000];
	memset(big, '\n', sizeof big - 1); /* every byte becomes two: more than the line */
	big[sizeof big - 1] = '\0';
	LOG_E(log, "x", "%s", big);
	LOG_E(log, "x", "after");
	gw_log_close(log);
	size_t n;
	char **l = lines(&n);
	ck_assert_uint_eq(n, 2);
	size_t len = strlen(l[0]);
	ck_assert_uint_gt(len, 7000);
	ck_assert_int_eq(l[0][len - 1], 'n'); /* ends with a whole "\n", not a lone backslash */
	ck_assert_int_eq(l[0][len - 2], '\\');
	ck_assert_str_eq(after_level(l[1]), "x: after");
}
END_TEST

START_TEST(json_lines_stay_one_valid_document_each)
{
	struct gw_log *log = open_log(GW_LOG_JSON);
	LOG_W(log, "poll\ner", "busy\n{\"level\":\"info\",\"msg\":\"FORGED\"}\r\n\x1b\x7f\xff end");
	gw_log_close(log);
	size_t n;
	char **l = lines(&n);
	ck_assert_uint_eq(n, 1);
	json_error_t jerr;
	json_t *doc = json_loads(l[0], 0, &jerr);
	ck_assert_msg(doc != NULL, "not JSON: %s (%s)", l[0], jerr.text);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "component")), "poll\ner");
	ck_assert_str_eq(json_string_value(json_object_get(doc, "msg")),
	                 "busy\n{\"level\":\"info\",\"msg\":\"FORGED\"}\r\n\x1b\x7f? end");
	json_decref(doc);
}
END_TEST

START_TEST(secrets_are_masked_before_escaping)
{
	struct gw_log *log = open_log(GW_LOG_TEXT);
	gw_log_secret_pin(log, "s3cr\net");
	LOG_I(log, "x", "token s3cr\net here");
	gw_log_close(log);
	size_t n;
	char **l = lines(&n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(after_level(l[0]), "x: token ******* here");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("log");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_newline_cannot_forge_a_text_line);
	tcase_add_test(tc, controls_and_bad_utf8_are_escaped_in_every_field);
	tcase_add_test(tc, a_long_line_is_cut_whole_and_stays_one_line);
	tcase_add_test(tc, json_lines_stay_one_valid_document_each);
	tcase_add_test(tc, secrets_are_masked_before_escaping);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
