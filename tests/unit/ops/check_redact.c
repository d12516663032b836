/*
 * Unit tests of what GET /config/<GROUP> shows of an item (ops/redact.h): secret fields
 * redacted wherever they are (any letter case, nested, in arrays, inside the JSON a string
 * field holds, spelled with \u escapes), items without secrets copied byte for byte; and of
 * `gwsyncd --status`'s text (ops/status_text.h) on a hand-made answer: every group, each
 * subscriber in step or behind and why, pause, the last changes, control characters from
 * outside escaped; and of what both it and the status page read of /history
 * (ops/history_list.h).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"
#include "ops/history_list.h"
#include "ops/redact.h"
#include "ops/status_text.h"

/* The item as /config shows it (caller frees). */
static char *shown(const char *json, size_t *redacted)
{
	struct strbuf b = {0};
	*redacted = 0;
	ck_assert_int_eq(redact_item(&b, json, strlen(json), redacted), 0);
	char *out = strbuf_finish(&b);
	ck_assert_ptr_nonnull(out);
	return out;
}

START_TEST(items_without_secrets_are_copied_byte_for_byte)
{
	size_t n;
	const char *plain = "{\"id\":\"1\",  \"handle\":\"{\\\"timeout\\\":3000}\", \"n\":1.50}";
	char *out = shown(plain, &n);
	ck_assert_str_eq(out, plain); /* parsed (it has escapes) but nothing to hide: as it was */
	ck_assert_uint_eq(n, 0);
	free(out);
	const char *simple = "{\"appKey\":\"K\",\"enabled\":true}";
	out = shown(simple, &n);
	ck_assert_str_eq(out, simple);
	free(out);
}
END_TEST

START_TEST(secret_fields_are_redacted_wherever_they_are)
{
	size_t n;
	char *out = shown("{\"appKey\":\"K\",\"appSecret\":\"S3CRET\",\"enabled\":true}", &n);
	ck_assert_str_eq(out, "{\"appKey\":\"K\",\"appSecret\":\"<redacted>\",\"enabled\":true}");
	ck_assert_uint_eq(n, 1);
	free(out);
	/* another case, nested, in a list */
	out = shown("{\"a\":{\"PASSWORD\":\"pw1\"},\"l\":[{\"apikey\":\"k2\"},{\"x\":1}]}", &n);
	ck_assert_ptr_null(strstr(out, "pw1"));
	ck_assert_ptr_null(strstr(out, "k2"));
	ck_assert_uint_eq(n, 2);
	free(out);
	/* inside a plugin's config, a JSON document in a string */
	out = shown("{\"name\":\"ai-proxy\",\"config\":\"{\\\"provider\\\":\\\"OpenAI\\\","
	            "\\\"apiKey\\\":\\\"sk-live-123\\\"}\"}",
	            &n);
	ck_assert_ptr_null(strstr(out, "sk-live-123"));
	ck_assert_ptr_nonnull(strstr(out, "OpenAI"));
	ck_assert_ptr_nonnull(strstr(out, "<redacted>"));
	ck_assert_uint_eq(n, 1);
	free(out);
	/* a name spelled with escapes is still that name */
	out = shown("{\"app\\u0053ecret\":\"hidden\"}", &n);
	ck_assert_ptr_null(strstr(out, "hidden"));
	ck_assert_uint_eq(n, 1);
	free(out);
	/* AI proxy API keys: both keys */
	out = shown("{\"selectorId\":\"s\",\"proxyApiKey\":\"sk-p\",\"realApiKey\":\"sk-r\"}", &n);
	ck_assert_ptr_null(strstr(out, "sk-p"));
	ck_assert_ptr_null(strstr(out, "sk-r"));
	ck_assert_uint_eq(n, 2);
	free(out);
	/* the list names them */
	int found = 0;
	for (const char *const *f = redact_fields; *f; f++)
		found += !strcmp(*f, "appSecret") || !strcmp(*f, "proxyApiKey");
	ck_assert_int_eq(found, 2);
}
END_TEST

static char *render(const char *answer)
{
	json_t *doc = json_loads(answer, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc = status_text_render(doc, 1700000100000LL, f);
	fclose(f);
	json_decref(doc);
	ck_assert_int_eq(rc, 0);
	return text;
}

#define GROUP_OK(md5)                                                                              \
	"{\"md5\":\"" md5 "\",\"lastModifyTime\":1000,\"items\":2,\"source\":\"http://a:9095\","   \
	"\"fromSnapshot\":false,\"ageSeconds\":65.5}"

START_TEST(status_text_says_what_is_behind_and_why)
{
	const char *answer =
	    "{\"status\":{\"version\":\"9.9.9\",\"uptimeSeconds\":3700,\"healthy\":true,"
	    "\"health\":\"ok\",\"paused\":false,"
	    "\"source\":{\"name\":\"admin\",\"type\":\"http\",\"connections\":[{\"url\":\"http://"
	    "a:9095\",\"state\":\"polling\",\"secondsSinceSuccess\":2.5,\"consecutiveFailures\":0},"
	    "{\"url\":\"http://b:9095\",\"state\":\"backing_off\",\"secondsSinceSuccess\":null,"
	    "\"consecutiveFailures\":3,\"lastError\":\"refused\\u001b[2J\"}]},"
	    "\"groups\":{\"PLUGIN\":" GROUP_OK(
	        "0123456789abcdef") ",\"RULE\":null},"
	                            "\"subscribers\":[{\"name\":\"rec\",\"plugin\":\"recorder\","
	                            "\"inStep\":true,\"groups\":{}},"
	                            "{\"name\":\"files\",\"plugin\":\"file\",\"inStep\":false,"
	                            "\"groups\":{\"PLUGIN\":"
	                            "{\"inStep\":false,\"md5\":\"x\",\"consecutiveFailures\":2,"
	                            "\"lastError\":\"disk "
	                            "full\\nwarn  forged\"}}}]},"
	                            "\"history\":{\"groups\":{\"PLUGIN\":[{\"md5\":"
	                            "\"0123456789abcdef\",\"acceptedAt\":"
	                            "1700000040000,\"source\":\"http://"
	                            "a:9095\",\"added\":{\"count\":7,\"first\":[\"a\","
	                            "\"b\"]},\"updated\":{\"count\":0,\"first\":[]},\"removed\":{"
	                            "\"count\":1,\"first\":"
	                            "[\"z\"]},\"subscribers\":{\"rec\":{\"state\":\"applied\","
	                            "\"at\":1700000041000,"
	                            "\"refusals\":0},\"files\":{\"state\":\"refused\",\"at\":"
	                            "1700000042000,\"refusals\":2,"
	                            "\"reason\":\"disk full\"}}}]}}}";
	char *out = render(answer);
	ck_assert_msg(strstr(out, "gwsyncd 9.9.9, up 1h01m: healthy (ok)\n"), "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "delivery: running\n"));
	ck_assert_ptr_nonnull(strstr(out, "  http://a:9095  polling, last success 2s ago\n"));
	ck_assert_ptr_nonnull(strstr(out, "  http://b:9095  backing_off, no success yet, 3 "
	                                  "failure(s) in a row: refused\\x1b[2J\n"));
	ck_assert_ptr_nonnull(strstr(out, "  PLUGIN             01234567  lastModifyTime 1000  2 "
	                                  "items  age 1m05s  from http://a:9095\n"));
	ck_assert_ptr_nonnull(strstr(out, "  RULE               nothing held yet\n"));
	ck_assert_ptr_nonnull(strstr(out, "  rec (recorder): in step\n"));
	ck_assert_msg(strstr(out, "  files (file): behind\n    PLUGIN: refused 2 in a row: disk "
	                          "full\\nwarn  forged\n"),
	              "%s", out);
	ck_assert_msg(strstr(out,
	                     "last changes:\n  2023-11-14 22:14:00Z (1m00s ago)  PLUGIN        "
	                     "     01234567  +7 ~0 -1 +a +b (+5 more) -z  from http://a:9095\n"
	                     "      rec: applied 2023-11-14 22:14:01Z\n"
	                     "      files: refused 2023-11-14 22:14:02Z: disk full\n"),
	              "%s", out);
	ck_assert_ptr_null(strchr(out, '\x1b'));
	free(out);

	out = render(
	    "{\"status\":{\"version\":\"1\",\"healthy\":false,\"health\":\"no data\","
	    "\"paused\":true,\"groups\":{},\"subscribers\":[{\"name\":\"f\",\"inStep\":"
	    "false,\"groups\":{\"RULE\":{\"inStep\":false}}}]},\"history\":{\"groups\":{}}}");
	ck_assert_ptr_nonnull(strstr(out, "UNHEALTHY (no data)"));
	ck_assert_ptr_nonnull(strstr(out, "delivery: PAUSED"));
	ck_assert_ptr_nonnull(strstr(out, "    RULE: paused\n"));
	ck_assert_ptr_nonnull(strstr(out, "last changes: none recorded\n"));
	free(out);

	json_t *odd = json_loads("{\"error\":\"x\"}", 0, NULL);
	FILE *f = fopen("/dev/null", "w");
	ck_assert_int_eq(status_text_render(odd, 0, f), -1);
	fclose(f);
	json_decref(odd);
}
END_TEST

/* What both renderers read of /history (ops/history_list.h): every group's entries in one
 * list, newest first whatever group they are in, and an entry's kinds of change with the
 * keys it names and how many more it counted. */
START_TEST(history_is_read_as_one_newest_first_list_with_its_kinds_of_change)
{
	json_t *hist = json_loads(
	    "{\"groups\":{\"RULE\":[{\"acceptedAt\":30,\"added\":{\"count\":3,\"first\":[\"a\"]},"
	    "\"updated\":{\"count\":0,\"first\":[]},\"removed\":{\"count\":1,\"first\":[\"z\"]}},"
	    "{\"acceptedAt\":10,\"added\":null}],"
	    "\"PLUGIN\":[{\"acceptedAt\":20}],\"SELECTOR\":[]}}",
	    0, NULL);
	ck_assert_ptr_nonnull(hist);
	struct history_change *all;
	size_t n;
	ck_assert_int_eq(history_list(hist, &all, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(all[0].at, 30);
	ck_assert_str_eq(all[0].group, "RULE");
	ck_assert_int_eq(all[1].at, 20);
	ck_assert_str_eq(all[1].group, "PLUGIN");
	ck_assert_int_eq(all[2].at, 10);
	struct history_kind k[HISTORY_KINDS];
	ck_assert_int_eq(history_kinds(all[0].e, k), 1);
	ck_assert_str_eq(k[HISTORY_ADDED].sign, "+");
	ck_assert_int_eq(k[HISTORY_ADDED].count, 3);
	ck_assert_uint_eq(json_array_size(k[HISTORY_ADDED].first), 1);
	ck_assert_int_eq(k[HISTORY_ADDED].more, 2);
	ck_assert_int_eq(k[HISTORY_UPDATED].count, 0);
	ck_assert_int_eq(k[HISTORY_UPDATED].more, 0);
	ck_assert_str_eq(k[HISTORY_REMOVED].sign, "-");
	ck_assert_int_eq(k[HISTORY_REMOVED].more, 0);
	/* an entry whose changes were not counted */
	ck_assert_int_eq(history_kinds(all[2].e, k), 0);
	ck_assert_int_eq(k[HISTORY_ADDED].count, 0);
	ck_assert_ptr_null(k[HISTORY_ADDED].first);
	free(all);
	/* nothing recorded: an empty list, still to be freed */
	json_t *none = json_loads("{\"groups\":{}}", 0, NULL);
	ck_assert_int_eq(history_list(none, &all, &n), 0);
	ck_assert_uint_eq(n, 0);
	free(all);
	json_decref(none);
	json_decref(hist);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("redact");
	TCase *tc = tcase_create("redact");
	tcase_add_test(tc, items_without_secrets_are_copied_byte_for_byte);
	tcase_add_test(tc, secret_fields_are_redacted_wherever_they_are);
	tcase_add_test(tc, status_text_says_what_is_behind_and_why);
	tcase_add_test(tc, history_is_read_as_one_newest_first_list_with_its_kinds_of_change);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
