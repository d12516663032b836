/*
 * The etcd source's pure parts: base64 (b64.c), the prefix range's end and the request
 * bodies (wire.c), the watch stream's framing cut at every byte (stream.c), and the
 * gateway's answers: ranges, tokens, errors and watch messages (reply.c).
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "source/b64.h"
#include "source/etcd/reply.h"
#include "source/etcd/stream.h"
#include "source/etcd/wire.h"

/* ---------------------------------------------------------------- base64 */

static void b64_round(const char *plain, size_t len, const char *coded)
{
	char *enc = b64_encode(plain, len);
	ck_assert_str_eq(enc, coded);
	char *dec;
	size_t dlen;
	ck_assert_int_eq(b64_decode(coded, strlen(coded), &dec, &dlen), 0);
	ck_assert_uint_eq(dlen, len);
	ck_assert(memcmp(dec, plain, len) == 0);
	ck_assert_int_eq(dec[dlen], '\0');
	free(enc);
	free(dec);
}

START_TEST(base64_round_trips)
{
	b64_round("", 0, "");
	b64_round("f", 1, "Zg==");
	b64_round("fo", 2, "Zm8=");
	b64_round("foo", 3, "Zm9v");
	b64_round("foob", 4, "Zm9vYg==");
	b64_round("/ns/shenyu/plugin/a", 19, "L25zL3NoZW55dS9wbHVnaW4vYQ==");
	b64_round("\xff\xfe\x00\x01", 4, "//4AAQ==");
	/* padding may be left out */
	char *dec;
	size_t n;
	ck_assert_int_eq(b64_decode("Zm8", 3, &dec, &n), 0);
	ck_assert_str_eq(dec, "fo");
	free(dec);
}
END_TEST

START_TEST(base64_refuses_what_is_not)
{
	const char *bad[] = {"Zm9v!", "Z", "Zm9vY", "Zg=", "Z===", "Zh==", "Zm 9v", "=Zm9"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *dec = (char *)1;
		size_t n;
		ck_assert_msg(b64_decode(bad[i], strlen(bad[i]), &dec, &n) == B64_BAD, "%s",
		              bad[i]);
		ck_assert_ptr_null(dec);
	}
}
END_TEST

/* ---------------------------------------------------------------- wire */

static void end_is(const char *prefix, size_t len, const char *want, size_t want_len)
{
	char out[64];
	size_t n = etcd_prefix_end(prefix, len, out);
	ck_assert_uint_eq(n, want_len);
	ck_assert(memcmp(out, want, n) == 0);
}

START_TEST(prefix_end_increments_the_last_byte)
{
	end_is("/ns/shenyu/plugin/", 18, "/ns/shenyu/plugin0", 18);
	end_is("/ns/shenyu/plugin", 17, "/ns/shenyu/plugio", 17);
	end_is("a\xff", 2, "b", 1); /* 0xff cannot grow: dropped, the byte before grows */
	end_is("a\xff\xff", 3, "b", 1);
	end_is("\xff\xff", 2, "\0", 1); /* everything from the key on */
	end_is("", 0, "\0", 1);
	end_is("\x7f", 1, "\x80", 1);
}
END_TEST

static json_t *parse(const char *text)
{
	json_error_t je;
	json_t *o = json_loads(text, 0, &je);
	ck_assert_msg(o != NULL, "%s: %s", text, je.text);
	return o;
}

START_TEST(request_bodies)
{
	char *t = etcd_body_range("/ns/shenyu/plugin/", 18, 0);
	json_t *o = parse(t);
	ck_assert_str_eq(json_string_value(json_object_get(o, "key")),
	                 "L25zL3NoZW55dS9wbHVnaW4v"); /* /ns/shenyu/plugin/ */
	ck_assert_str_eq(json_string_value(json_object_get(o, "range_end")),
	                 "L25zL3NoZW55dS9wbHVnaW4w");       /* /ns/shenyu/plugin0 */
	ck_assert_ptr_null(json_object_get(o, "revision")); /* 0: the newest */
	json_decref(o);
	free(t);

	t = etcd_body_range("/a/", 3, 1234567890123LL);
	o = parse(t);
	/* int64 as a JSON string, as etcd's gateway wants it */
	ck_assert_str_eq(json_string_value(json_object_get(o, "revision")), "1234567890123");
	json_decref(o);
	free(t);

	/* a page: from a key on, to the prefix's end, at most N keys */
	t = etcd_body_range_page("/a/", 3, "/a/k\0", 5, 77, 1000);
	o = parse(t);
	ck_assert_str_eq(json_string_value(json_object_get(o, "key")),
	                 "L2EvawA="); /* /a/k and a NUL */
	ck_assert_str_eq(json_string_value(json_object_get(o, "range_end")), "L2Ew"); /* /a0 */
	ck_assert_str_eq(json_string_value(json_object_get(o, "revision")), "77");
	ck_assert_str_eq(json_string_value(json_object_get(o, "limit")), "1000");
	json_decref(o);
	free(t);
	t = etcd_body_range_page("/a/", 3, NULL, 0, 0, 0);
	o = parse(t);
	ck_assert_str_eq(json_string_value(json_object_get(o, "key")), "L2Ev"); /* /a/ */
	ck_assert_ptr_null(json_object_get(o, "limit"));
	json_decref(o);
	free(t);

	t = etcd_body_watch("/ns/shenyu/", 11, 42);
	o = parse(t);
	json_t *cr = json_object_get(o, "create_request");
	ck_assert_ptr_nonnull(cr);
	ck_assert_str_eq(json_string_value(json_object_get(cr, "key")), "L25zL3NoZW55dS8=");
	ck_assert_str_eq(json_string_value(json_object_get(cr, "range_end")), "L25zL3NoZW55dTA=");
	ck_assert_str_eq(json_string_value(json_object_get(cr, "start_revision")), "42");
	json_decref(o);
	free(t);

	t = etcd_body_auth("root", "p\"w\\d");
	o = parse(t);
	ck_assert_str_eq(json_string_value(json_object_get(o, "name")), "root");
	ck_assert_str_eq(json_string_value(json_object_get(o, "password")), "p\"w\\d");
	json_decref(o);
	free(t);
}
END_TEST

/* ---------------------------------------------------------------- stream */

struct seen {
	char objs[16][256];
	size_t n;
	int stop_at; /* return 7 when the nth object (1-based) arrives; 0: never */
};

static int collect(void *arg, const char *text, size_t len)
{
	struct seen *s = arg;
	ck_assert_uint_eq(strlen(text), len);
	ck_assert_uint_lt(s->n, 16);
	snprintf(s->objs[s->n++], sizeof s->objs[0], "%s", text);
	return s->stop_at && (int)s->n == s->stop_at ? 7 : 0;
}

static const char STREAM[] =
    "{\"result\":{\"header\":{\"revision\":\"3\"},\"created\":true}}\n"
    "{\"result\":{\"events\":[{\"kv\":{\"key\":\"YQ==\",\"value\":\"e30=\"}}],"
    "\"x\":\"a } ] \\\" {\"}}\r\n"
    "  {\"result\":{\"canceled\":true,\"compact_revision\":\"3\"}}\n";

START_TEST(stream_frames_objects_cut_anywhere)
{
	size_t total = strlen(STREAM);
	/* every way of cutting the stream in two, and byte by byte */
	for (size_t cut = 0; cut <= total; cut++) {
		struct etcd_stream st;
		etcd_stream_init(&st, 4096);
		struct seen s = {.n = 0};
		struct gw_err err = {0};
		ck_assert_int_eq(etcd_stream_feed(&st, STREAM, cut, collect, &s, &err), 0);
		ck_assert_int_eq(
		    etcd_stream_feed(&st, STREAM + cut, total - cut, collect, &s, &err), 0);
		ck_assert_uint_eq(s.n, 3);
		ck_assert_str_eq(s.objs[0],
		                 "{\"result\":{\"header\":{\"revision\":\"3\"},\"created\":true}}");
		ck_assert(strstr(s.objs[1], "\"x\":\"a } ] \\\" {\"}}"));
		ck_assert_str_eq(s.objs[2],
		                 "{\"result\":{\"canceled\":true,\"compact_revision\":\"3\"}}");
		etcd_stream_reset(&st);
	}
	struct etcd_stream st;
	etcd_stream_init(&st, 4096);
	struct seen s = {.n = 0};
	struct gw_err err = {0};
	for (size_t i = 0; i < total; i++)
		ck_assert_int_eq(etcd_stream_feed(&st, STREAM + i, 1, collect, &s, &err), 0);
	ck_assert_uint_eq(s.n, 3);
	etcd_stream_reset(&st);
}
END_TEST

START_TEST(stream_callback_stops_the_feed)
{
	struct etcd_stream st;
	etcd_stream_init(&st, 4096);
	struct seen s = {.stop_at = 2};
	struct gw_err err = {0};
	ck_assert_int_eq(etcd_stream_feed(&st, STREAM, strlen(STREAM), collect, &s, &err), 7);
	ck_assert_uint_eq(s.n, 2);
	etcd_stream_reset(&st);
}
END_TEST

static void stream_bad(const char *text, size_t max, const char *part)
{
	struct etcd_stream st;
	etcd_stream_init(&st, max);
	struct seen s = {.n = 0};
	struct gw_err err = {0};
	ck_assert_msg(etcd_stream_feed(&st, text, strlen(text), collect, &s, &err) == -1,
	              "accepted %s", text);
	ck_assert_msg(strstr(err.msg, part), "'%s' -> '%s'", text, err.msg);
	/* only the cap says "too large": the source answers it with a fresh read */
	ck_assert_int_eq(st.too_large, strstr(part, "larger than") != NULL);
	etcd_stream_reset(&st);
	ck_assert_int_eq(st.too_large, 0);
}

START_TEST(stream_refuses_what_is_not_objects)
{
	stream_bad("[1]", 100, "expected a JSON object");
	stream_bad("{}x", 100, "expected a JSON object");
	stream_bad("{} ]", 100, "expected a JSON object");
	stream_bad("Grpc-Trailer", 100, "expected a JSON object");
	/* one object larger than the cap, whole or still open */
	stream_bad("{\"a\":\"0123456789\"}", 10, "larger than 10 bytes");
	stream_bad("{\"a\":\"0123456789", 10, "larger than 10 bytes");
	char deep[1200];
	memset(deep, '[', sizeof deep - 1);
	deep[0] = '{';
	deep[sizeof deep - 1] = '\0';
	stream_bad(deep, 4096, "nesting deeper");
}
END_TEST

START_TEST(stream_large_object_under_the_cap)
{
	size_t n = 100000;
	char *big = malloc(n + 16);
	strcpy(big, "{\"v\":\"");
	memset(big + 6, 'a', n);
	strcpy(big + 6 + n, "\"}\n");
	struct etcd_stream st;
	etcd_stream_init(&st, n + 16);
	struct seen s = {.n = 0};
	struct gw_err err = {0};
	for (size_t i = 0; i < n + 9; i += 1000) {
		size_t k = n + 9 - i < 1000 ? n + 9 - i : 1000;
		ck_assert_int_eq(etcd_stream_feed(&st, big + i, k, collect, &s, &err), 0);
	}
	ck_assert_uint_eq(s.n, 1);
	etcd_stream_reset(&st);
	free(big);
}
END_TEST

/* ---------------------------------------------------------------- replies */

START_TEST(range_replies)
{
	const char *body =
	    "{\"header\":{\"cluster_id\":\"1\",\"revision\":\"3\",\"raft_term\":\"2\"},"
	    "\"kvs\":[{\"key\":\"L25zL3NoZW55dS9wbHVnaW4vYQ==\",\"create_revision\":\"2\","
	    "\"mod_revision\":\"2\",\"version\":\"1\",\"value\":\"eyJuYW1lIjoiYSJ9\"},"
	    "{\"key\":\"L25zL3NoZW55dS9wbHVnaW4vYg==\",\"mod_revision\":\"3\"}],\"count\":\"2\"}";
	struct etcd_range r;
	struct gw_err err = {0};
	ck_assert_int_eq(etcd_parse_range(body, strlen(body), &r, &err), 0);
	ck_assert_int_eq(r.revision, 3);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_str_eq(r.kvs[0].key, "/ns/shenyu/plugin/a");
	ck_assert_str_eq(r.kvs[0].value, "{\"name\":\"a\"}");
	ck_assert_int_eq(r.kvs[0].mod_revision, 2);
	ck_assert_str_eq(r.kvs[1].key, "/ns/shenyu/plugin/b");
	ck_assert_uint_eq(r.kvs[1].value_len, 0); /* an empty value is left out */
	etcd_range_free(&r);

	/* an empty range has no kvs at all */
	const char *empty = "{\"header\":{\"revision\":\"7\"}}";
	ck_assert_int_eq(etcd_parse_range(empty, strlen(empty), &r, &err), 0);
	ck_assert_int_eq(r.revision, 7);
	ck_assert_uint_eq(r.n, 0);
	etcd_range_free(&r);

	const char *bad[] = {
	    "",
	    "[]",
	    "{}",
	    "{\"header\":{\"revision\":\"x\"}}",
	    "{\"header\":{},\"kvs\":{}}",
	    "{\"header\":{},\"kvs\":[{\"key\":\"!!\"}]}",
	    "{\"header\":{},\"kvs\":[{\"value\":\"YQ==\"}]}",
	    "{\"header\":{},\"kvs\":[{\"key\":\"YQ==\",\"mod_revision\":\"1x\"}]}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(etcd_parse_range(bad[i], strlen(bad[i]), &r, &err) == -1, "%s",
		              bad[i]);
}
END_TEST

START_TEST(token_and_error_replies)
{
	char *tok;
	struct gw_err err = {0};
	const char *ok = "{\"header\":{\"revision\":\"3\"},\"token\":\"zVzEUBMlZuPyMgAQ.13\"}";
	ck_assert_int_eq(etcd_parse_token(ok, strlen(ok), &tok, &err), 0);
	ck_assert_str_eq(tok, "zVzEUBMlZuPyMgAQ.13");
	free(tok);
	ck_assert_int_eq(etcd_parse_token("{}", 2, &tok, &err), -1);

	struct etcd_error e;
	const char *unary = "{\"error\":\"etcdserver: invalid auth token\",\"message\":"
	                    "\"etcdserver: invalid auth token\",\"code\":16}";
	ck_assert_int_eq(etcd_parse_error(unary, strlen(unary), &e), 1);
	ck_assert_int_eq(e.code, 16);
	ck_assert_str_eq(e.message, "etcdserver: invalid auth token");
	const char *streamed = "{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":"
	                       "\"transport is closing\",\"http_status\":\"Service Unavailable\"}}";
	ck_assert_int_eq(etcd_parse_error(streamed, strlen(streamed), &e), 1);
	ck_assert_int_eq(e.code, 14);
	ck_assert_str_eq(e.message, "transport is closing");
	ck_assert_int_eq(etcd_parse_error(ok, strlen(ok), &e), 0);
	ck_assert_int_eq(etcd_parse_error("nope", 4, &e), 0);
}
END_TEST

START_TEST(watch_messages)
{
	struct etcd_watch_msg m;
	struct gw_err err = {0};
	const char *created = "{\"result\":{\"header\":{\"revision\":\"3\"},\"created\":true}}";
	ck_assert_int_eq(etcd_parse_watch(created, strlen(created), &m, &err), 0);
	ck_assert(m.created && !m.canceled && !m.is_error);
	ck_assert_int_eq(m.revision, 3);
	ck_assert_uint_eq(m.n_events, 0);
	etcd_watch_msg_free(&m);

	/* PUT is the default type and left out; DELETE carries the key only */
	const char *events =
	    "{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":["
	    "{\"kv\":{\"key\":\"L2EvYg==\",\"mod_revision\":\"8\",\"value\":\"e30=\"}},"
	    "{\"type\":\"DELETE\",\"kv\":{\"key\":\"L2EvYw==\",\"mod_revision\":\"9\"}}]}}";
	ck_assert_int_eq(etcd_parse_watch(events, strlen(events), &m, &err), 0);
	ck_assert_uint_eq(m.n_events, 2);
	ck_assert_int_eq(m.events[0].type, ETCD_EV_PUT);
	ck_assert_str_eq(m.events[0].kv.key, "/a/b");
	ck_assert_str_eq(m.events[0].kv.value, "{}");
	ck_assert_int_eq(m.events[0].kv.mod_revision, 8);
	ck_assert_int_eq(m.events[1].type, ETCD_EV_DELETE);
	ck_assert_str_eq(m.events[1].kv.key, "/a/c");
	ck_assert_int_eq(m.events[1].kv.mod_revision, 9);
	etcd_watch_msg_free(&m);

	const char *compacted = "{\"result\":{\"header\":{\"revision\":\"3\"},\"canceled\":true,"
	                        "\"compact_revision\":\"3\"}}";
	ck_assert_int_eq(etcd_parse_watch(compacted, strlen(compacted), &m, &err), 0);
	ck_assert(m.canceled);
	ck_assert_int_eq(m.compact_revision, 3);
	etcd_watch_msg_free(&m);

	const char *refused =
	    "{\"result\":{\"header\":{\"revision\":\"3\"},\"watch_id\":\"-1\",\"created\":true,"
	    "\"canceled\":true,\"cancel_reason\":\"rpc error: code = Unauthenticated desc = "
	    "etcdserver: invalid auth token\"}}";
	ck_assert_int_eq(etcd_parse_watch(refused, strlen(refused), &m, &err), 0);
	ck_assert(m.canceled && m.compact_revision == 0);
	ck_assert(strstr(m.cancel_reason, "Unauthenticated"));
	etcd_watch_msg_free(&m);

	const char *gone = "{\"error\":{\"grpc_code\":14,\"message\":\"transport is closing\"}}";
	ck_assert_int_eq(etcd_parse_watch(gone, strlen(gone), &m, &err), 0);
	ck_assert(m.is_error);
	ck_assert_int_eq(m.err.code, 14);
	etcd_watch_msg_free(&m);

	const char *bad[] = {
	    "{}",
	    "{\"result\":1}",
	    "{\"result\":{\"events\":{}}}",
	    "{\"result\":{\"events\":[{\"type\":\"X\",\"kv\":{\"key\":\"YQ==\"}}]}}",
	    "{\"result\":{\"events\":[{\"kv\":{}}]}}",
	    "{\"result\":{\"events\":[{\"kv\":{\"key\":\"YQ==\"}},1]}}",
	    "{\"result\":{\"compact_revision\":true}}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(etcd_parse_watch(bad[i], strlen(bad[i]), &m, &err) == -1, "%s",
		              bad[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("etcd");
	TCase *tc = tcase_create("etcd");
	tcase_add_test(tc, base64_round_trips);
	tcase_add_test(tc, base64_refuses_what_is_not);
	tcase_add_test(tc, prefix_end_increments_the_last_byte);
	tcase_add_test(tc, request_bodies);
	tcase_add_test(tc, stream_frames_objects_cut_anywhere);
	tcase_add_test(tc, stream_callback_stops_the_feed);
	tcase_add_test(tc, stream_refuses_what_is_not_objects);
	tcase_add_test(tc, stream_large_object_under_the_cap);
	tcase_add_test(tc, range_replies);
	tcase_add_test(tc, token_and_error_replies);
	tcase_add_test(tc, watch_messages);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
