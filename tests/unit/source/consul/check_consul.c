/*
 * The Consul source's pure parts: the KV answer's scanner and headers (reply.c), the
 * blocking-query index rules with the loop's pacing (index.c), and the table of keys held
 * that an answer is compared with (keys.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "source/consul/config.h"
#include "source/consul/index.h"
#include "source/consul/keys.h"
#include "source/consul/reply.h"
#include "source/source.h"

/* ---------------------------------------------------------------- the answer */

/* Parse a copy of text (the parser writes into it); the copy is returned in *keep. */
static int parse(const char *text, struct consul_reply *r, char **keep, struct gw_err *err)
{
	size_t n = strlen(text);
	*keep = malloc(n + 1);
	memcpy(*keep, text, n + 1);
	return consul_parse_list(*keep, n, r, err);
}

static int key_is(const struct consul_entry *e, const char *want)
{
	return e->key_len == strlen(want) && memcmp(e->key, want, e->key_len) == 0;
}

START_TEST(a_list_gives_keys_indexes_and_value_spans)
{
	struct consul_reply r;
	struct gw_err err;
	char *body;
	const char *text =
	    "[{\"LockIndex\":0,\"Key\":\"ns/shenyu/plugin/divide\",\"Flags\":0,"
	    "\"Value\":\"eyJuYW1lIjoiZGl2aWRlIn0=\",\"CreateIndex\":12,\"ModifyIndex\":15},\n"
	    " {\"Key\":\"ns/shenyu/rule/\",\"Value\":null,\"ModifyIndex\":9223372036854775807,"
	    "\"Session\":\"abc\"}]";
	ck_assert_int_eq(parse(text, &r, &body, &err), 0);
	ck_assert_uint_eq(r.n, 2);
	ck_assert(key_is(&r.entries[0], "ns/shenyu/plugin/divide"));
	ck_assert_uint_eq(r.entries[0].modify_index, 15);
	ck_assert_uint_eq(r.entries[0].value_len, 24);
	ck_assert(memcmp(r.entries[0].value, "eyJuYW1lIjoiZGl2aWRlIn0=", 24) == 0);
	ck_assert(key_is(&r.entries[1], "ns/shenyu/rule/"));
	ck_assert_ptr_null(r.entries[1].value);
	ck_assert_uint_eq(r.entries[1].modify_index, INT64_MAX);
	consul_reply_free(&r);
	free(body);
}
END_TEST

START_TEST(escaped_keys_are_decoded_in_place_and_unknown_members_skipped)
{
	struct consul_reply r;
	struct gw_err err;
	char *body;
	const char *text = "[{\"Extra\":{\"a\":[1,-2.5e3,true,false,null,\"x\\\"y\"]},"
	                   "\"Key\":\"ns/shenyu/metaData/a\\u0026b\\/c\\u00e9\","
	                   "\"ModifyIndex\":7,\"Value\":\"QQ\\u003d\\u003d\"}]";
	ck_assert_int_eq(parse(text, &r, &body, &err), 0);
	ck_assert_uint_eq(r.n, 1);
	ck_assert(key_is(&r.entries[0], "ns/shenyu/metaData/a&b/c\xc3\xa9"));
	/* a value is found, not decoded, until it is read */
	ck_assert_uint_eq(r.entries[0].value_len, 14);
	ck_assert_int_eq(consul_value_text(&r.entries[0]), 0);
	ck_assert_uint_eq(r.entries[0].value_len, 4);
	ck_assert(memcmp(r.entries[0].value, "QQ==", 4) == 0);
	consul_reply_free(&r);
	free(body);
}
END_TEST

START_TEST(a_value_is_checked_when_read_and_an_escaped_quote_does_not_end_it)
{
	struct consul_reply r;
	struct gw_err err;
	char *body;
	const char *text = "[{\"Key\":\"a\",\"ModifyIndex\":1,\"Value\":\"Q\xff\"},"
	                   "{\"Key\":\"b\",\"ModifyIndex\":2,\"Value\":\"x\\\"y\\\\\"},"
	                   "{\"Key\":\"c\",\"ModifyIndex\":3,\"Value\":\"\\u12\"}]";
	ck_assert_int_eq(parse(text, &r, &body, &err), 0);
	ck_assert_uint_eq(r.n, 3);
	/* invalid UTF-8 in a value: refused when it is read, not before */
	ck_assert_int_eq(consul_value_text(&r.entries[0]), -1);
	/* x\"y\\ : the escaped quote did not end the value */
	ck_assert_int_eq(consul_value_text(&r.entries[1]), 0);
	ck_assert_uint_eq(r.entries[1].value_len, 4);
	ck_assert(memcmp(r.entries[1].value, "x\"y\\", 4) == 0);
	ck_assert(key_is(&r.entries[2], "c"));
	/* a broken escape: refused when read */
	ck_assert_int_eq(consul_value_text(&r.entries[2]), -1);
	consul_reply_free(&r);
	free(body);
}
END_TEST

START_TEST(an_empty_array_is_no_entries)
{
	struct consul_reply r;
	struct gw_err err;
	char *body;
	ck_assert_int_eq(parse(" [ ] \n", &r, &body, &err), 0);
	ck_assert_uint_eq(r.n, 0);
	consul_reply_free(&r);
	free(body);
}
END_TEST

/* Each is refused with a message holding `why`. */
static const struct {
	const char *text, *why;
} bad[] = {
    {"", "not a JSON array"},
    {"<html>502</html>", "not a JSON array"},
    {"{\"Key\":\"a\"}", "not a JSON array"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1}", "expected ',' or ']'"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1}] x", "bytes after"},
    {"[{\"ModifyIndex\":1}]", "no Key"},
    {"[{\"Key\":\"a\"}]", "no ModifyIndex"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":-1}]", "ModifyIndex"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1.5}]", "ModifyIndex"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":9223372036854775808}]", "ModifyIndex"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":\"1\"}]", "ModifyIndex"},
    {"[{\"Key\":1,\"ModifyIndex\":1}]", "Key is not"},
    {"[{\"Key\":\"a\\u0000b\",\"ModifyIndex\":1}]", "Key"},
    {"[{\"Key\":\"\xff\xfe\",\"ModifyIndex\":1}]", "Key is not"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1,\"Value\":5}]", "Value is neither"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1,\"Value\":\"abc}]", "Value is not a valid"},
    /* an escaped quote, then the value's own at the very end (found by the fuzzer) */
    {"[{\"Key\":\"a\",\"ModifyIndex\":1,\"Value\":\"\\\\\\\"\"", "expected ','"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1,\"Value\":nul}]", "Value is neither"},
    {"[{}]", "an empty object"},
    {"[1]", "not an object"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1,\"X\":[1,]}]", "not valid JSON"},
    {"[{\"Key\":\"a\",\"ModifyIndex\":1,\"X\":tru}]", "not valid JSON"},
    {"[{\"Key\" \"a\",\"ModifyIndex\":1}]", "expected ':'"},
};

START_TEST(malformed_answers_are_refused_naming_why)
{
	struct consul_reply r;
	struct gw_err err;
	char *body;
	ck_assert_int_eq(parse(bad[_i].text, &r, &body, &err), -1);
	ck_assert_msg(strstr(err.msg, bad[_i].why), "%s: %s", bad[_i].text, err.msg);
	ck_assert_ptr_null(r.entries);
	free(body);
}
END_TEST

START_TEST(nesting_is_bounded_not_recursed_without_end)
{
	size_t depth = 200000;
	char *text = malloc(depth * 2 + 64);
	size_t n = (size_t)sprintf(text, "[{\"Key\":\"a\",\"ModifyIndex\":1,\"X\":");
	memset(text + n, '[', depth);
	memset(text + n + depth, ']', depth);
	strcpy(text + n + 2 * depth, "}]");
	struct consul_reply r;
	struct gw_err err;
	ck_assert_int_eq(consul_parse_list(text, strlen(text), &r, &err), -1);
	ck_assert(strstr(err.msg, "nested too deeply"));
	/* 32 levels are fine */
	n = (size_t)sprintf(text, "[{\"Key\":\"a\",\"ModifyIndex\":1,\"X\":");
	memset(text + n, '[', 32);
	memset(text + n + 32, ']', 32);
	strcpy(text + n + 64, "}]");
	ck_assert_int_eq(consul_parse_list(text, strlen(text), &r, &err), 0);
	consul_reply_free(&r);
	free(text);
}
END_TEST

static void lines(struct consul_headers *h, const char *const *l)
{
	memset(h, 0, sizeof *h);
	for (; *l; l++)
		consul_header_line(h, *l, strlen(*l));
}

START_TEST(headers_give_the_index_and_the_acl_filter)
{
	struct consul_headers h;
	const char *const ok[] = {"HTTP/1.1 200 OK\r\n", "x-consul-index:  4242 \r\n",
	                          "X-Consul-Results-Filtered-By-ACLs: true\r\n", "\r\n", NULL};
	lines(&h, ok);
	ck_assert(h.has_index && !h.bad_index && h.acl_filtered);
	ck_assert_uint_eq(h.index, 4242);
	const char *const none[] = {"HTTP/1.1 404 Not Found\r\n", "X-Consul-Indexes: 7\r\n",
	                            "X-Consul-Results-Filtered-By-ACLs: false\r\n", NULL};
	lines(&h, none);
	ck_assert(!h.has_index && !h.acl_filtered);
	const char *const bad_index[] = {"X-Consul-Index: 12a\r\n", NULL};
	lines(&h, bad_index);
	ck_assert(!h.has_index && h.bad_index);
	const char *const huge[] = {"X-Consul-Index: 9223372036854775808\r\n", NULL};
	lines(&h, huge);
	ck_assert(!h.has_index && h.bad_index);
	/* a second answer's status line (a redirect, a 100 Continue) starts over */
	const char *const two[] = {"HTTP/1.1 100 Continue\r\n", "X-Consul-Index: 9\r\n",
	                           "HTTP/1.1 200 OK\r\n", NULL};
	lines(&h, two);
	ck_assert(!h.has_index);
}
END_TEST

/* ---------------------------------------------------------------- index rules */

START_TEST(the_index_rules)
{
	uint64_t next;
	/* the first read (no index sent) is all news */
	ck_assert_int_eq(consul_index_step(0, 57, &next), CONSUL_CHANGED);
	ck_assert_uint_eq(next, 57);
	/* the same index: no change */
	ck_assert_int_eq(consul_index_step(57, 57, &next), CONSUL_SAME);
	ck_assert_uint_eq(next, 57);
	/* forward: a change */
	ck_assert_int_eq(consul_index_step(57, 90, &next), CONSUL_CHANGED);
	ck_assert_uint_eq(next, 90);
	/* backwards: a reset (a full read) */
	ck_assert_int_eq(consul_index_step(90, 12, &next), CONSUL_BACKWARDS);
	/* never 0 after an answer: 0 is taken as 1 */
	ck_assert_int_eq(consul_index_step(0, 0, &next), CONSUL_CHANGED);
	ck_assert_uint_eq(next, 1);
	ck_assert_int_eq(consul_index_step(90, 0, &next), CONSUL_BACKWARDS);
	ck_assert_uint_eq(next, 1);
	ck_assert_int_eq(consul_index_step(1, 0, &next), CONSUL_BACKWARDS);
	ck_assert_uint_eq(next, 1);
	ck_assert_int_eq(consul_index_step(1, 1, &next), CONSUL_SAME);
	ck_assert_uint_eq(next, 1);
}
END_TEST

START_TEST(pacing_doubles_up_to_its_cap_and_only_for_early_answers)
{
	ck_assert_int_eq(consul_pace_ms(0, 15000), 0);
	ck_assert_int_eq(consul_pace_ms(1, 15000), 250);
	ck_assert_int_eq(consul_pace_ms(2, 15000), 500);
	ck_assert_int_eq(consul_pace_ms(3, 15000), 1000);
	ck_assert_int_eq(consul_pace_ms(6, 15000), 8000);
	ck_assert_int_eq(consul_pace_ms(7, 15000), 15000);
	ck_assert_int_eq(consul_pace_ms(1000, 15000), 15000);
	ck_assert_int_eq(consul_pace_ms(4, 600), 600);
	ck_assert_int_eq(consul_pace_ms(1, 100), 100);
	/* early: back in less than half the wait */
	ck_assert(consul_answer_early(3, 300000));
	ck_assert(!consul_answer_early(300100, 300000));
	ck_assert(consul_answer_early(40, 100));
	ck_assert(!consul_answer_early(60, 100));
}
END_TEST

/* ---------------------------------------------------------------- the keys held */

static char gone_log[256];

static void on_gone(void *arg, const struct consul_key *k)
{
	(void)arg;
	strcat(gone_log, k->path);
	strcat(gone_log, ";");
}

/* One answer listing paths[0..n) with ModifyIndex mi[]: how many were new or moved. */
static int answer(struct consul_keys *ks, const char *const *paths, const uint64_t *mi, size_t n)
{
	int changed = 0;
	consul_keys_begin(ks);
	for (size_t i = 0; i < n; i++) {
		struct consul_key *k = consul_keys_find(ks, paths[i], strlen(paths[i]));
		if (!k) {
			ck_assert_ptr_nonnull(
			    consul_keys_add(ks, paths[i], strlen(paths[i]), mi[i]));
			changed++;
			continue;
		}
		if (k->modify_index != mi[i]) {
			k->modify_index = mi[i];
			changed++;
		}
		ck_assert_int_eq(consul_keys_seen(ks, k), 0);
	}
	gone_log[0] = '\0';
	consul_keys_end(ks, on_gone, NULL);
	return changed;
}

START_TEST(the_keys_held_follow_each_answer_in_and_out_of_order)
{
	struct consul_keys ks = {0};
	const char *a[] = {"/r/a", "/r/b", "/r/c", "/r/d"};
	uint64_t m1[] = {1, 2, 3, 4};
	ck_assert_int_eq(answer(&ks, a, m1, 4), 4);
	ck_assert_str_eq(gone_log, "");
	/* the same answer again: nothing new, found in order, nothing gone */
	ck_assert_int_eq(answer(&ks, a, m1, 4), 0);
	ck_assert_uint_eq(ks.n_order, 4);
	/* one moved, one deleted, one added in the middle, one listed twice */
	const char *b[] = {"/r/a", "/r/b2", "/r/b", "/r/d", "/r/d"};
	uint64_t m2[] = {1, 9, 2, 8, 8};
	ck_assert_int_eq(answer(&ks, b, m2, 5), 2);
	ck_assert_str_eq(gone_log, "/r/c;");
	ck_assert_uint_eq(ks.tab.n, 4);
	/* out of order (a hostile server): still found by the table */
	const char *c[] = {"/r/d", "/r/b", "/r/a", "/r/b2"};
	uint64_t m3[] = {8, 2, 1, 9};
	ck_assert_int_eq(answer(&ks, c, m3, 4), 0);
	ck_assert_str_eq(gone_log, "");
	/* an answer given up half way forgets nothing */
	consul_keys_begin(&ks);
	struct consul_key *k = consul_keys_find(&ks, "/r/d", 4);
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(consul_keys_seen(&ks, k), 0);
	consul_keys_abort(&ks);
	ck_assert_int_eq(answer(&ks, c, m3, 4), 0);
	ck_assert_str_eq(gone_log, "");
	/* an empty answer (404): everything gone */
	ck_assert_int_eq(answer(&ks, NULL, NULL, 0), 0);
	ck_assert_uint_eq(strlen(gone_log), strlen("/r/d;/r/b;/r/a;/r/b2;"));
	ck_assert_uint_eq(ks.tab.n, 0);
	consul_keys_clear(&ks);
	ck_assert_int_eq(answer(&ks, a, m1, 4), 4);
	consul_keys_free(&ks);
}
END_TEST

/* ---------------------------------------------------------------- the section */

static struct cfg *load(const char *text)
{
	struct cfg *c = NULL;
	struct gw_err err;
	const struct cfg_section *sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(sections); /* as main hands them to the loader */
	ck_assert_msg(cfg_parse("t.yaml", text, strlen(text), sections, &c, &err) == 0, "%s",
	              err.msg);
	return c;
}

START_TEST(the_section_keeps_the_root_as_a_path_and_raises_max_response)
{
	struct cfg *c = load("consul:\n  servers: [\"http://127.0.0.1:8500/\"]\n"
	                     "  root: ns1/shenyu/\n  token: abc\n");
	const struct consul_config *cc = consul_config(c);
	ck_assert_ptr_nonnull(cc);
	ck_assert_str_eq(cc->kv.root, "/ns1/shenyu");
	ck_assert_str_eq(cc->kv.label, "consul://127.0.0.1:8500/ns1/shenyu");
	ck_assert_str_eq(cc->kv.servers[0], "http://127.0.0.1:8500");
	ck_assert_str_eq(cc->token, "abc");
	ck_assert_int_eq(cc->wait_ms, 300000);
	ck_assert_int_eq(cc->pace_max_ms, 15000);
	/* a recursive answer holds the whole store: 256 MiB unless written */
	ck_assert_int_eq(c->max_response, (int64_t)256 << 20);
	cfg_free(c);
	c = load("consul:\n  servers: [\"http://127.0.0.1:8500\"]\n  max_response: 1MiB\n");
	ck_assert_int_eq(c->max_response, (int64_t)1 << 20);
	ck_assert_str_eq(consul_config(c)->kv.root, "/" GW_DEFAULT_NAMESPACE "/shenyu");
	cfg_free(c);
	/* another source keeps admin:'s default */
	c = load("admin:\n  servers: [\"http://127.0.0.1:9095\"]\n");
	ck_assert_int_eq(c->max_response, (int64_t)64 << 20);
	cfg_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("consul");
	TCase *tc = tcase_create("consul");
	tcase_add_test(tc, a_list_gives_keys_indexes_and_value_spans);
	tcase_add_test(tc, escaped_keys_are_decoded_in_place_and_unknown_members_skipped);
	tcase_add_test(tc, a_value_is_checked_when_read_and_an_escaped_quote_does_not_end_it);
	tcase_add_test(tc, an_empty_array_is_no_entries);
	tcase_add_loop_test(tc, malformed_answers_are_refused_naming_why, 0,
	                    (int)(sizeof bad / sizeof bad[0]));
	tcase_add_test(tc, nesting_is_bounded_not_recursed_without_end);
	tcase_add_test(tc, headers_give_the_index_and_the_acl_filter);
	tcase_add_test(tc, the_index_rules);
	tcase_add_test(tc, pacing_doubles_up_to_its_cap_and_only_for_early_answers);
	tcase_add_test(tc, the_keys_held_follow_each_answer_in_and_out_of_order);
	tcase_add_test(tc, the_section_keeps_the_root_as_a_path_and_raises_max_response);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
