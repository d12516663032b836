/*
 * Unit tests of the admin client's pure parts: listener form body and fetch URL building,
 * listener-reply parsing (good replies, admin errors, wrong types, truncated JSON,
 * non-ASCII), login request building and reply parsing, the token refresh deadline, and
 * the reply classification behind the poller's failure counters.
 */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/http/admin.h"
#include "shared/strbuf.h"
#include "source/curl_http.h"
#include "source/http/login.h"
#include "source/http/reply.h"

#define NS GW_DEFAULT_NAMESPACE

static const enum gw_group classic[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE,
                                        GW_GROUP_APP_AUTH, GW_GROUP_META_DATA};

/* ---------------------------------------------------------------- builders */

START_TEST(listener_body_every_group_with_placeholder)
{
	struct admin_stamp st[GW_GROUP_COUNT];
	memset(st, 0, sizeof st);
	strcpy(st[GW_GROUP_PLUGIN].md5, "ff9f3045505109e66c403fcc6a7a9a12");
	st[GW_GROUP_PLUGIN].last_modify_time = 1606982496917;
	strcpy(st[GW_GROUP_RULE].md5, "d751713988987e9331980363e24189ce");
	st[GW_GROUP_RULE].last_modify_time = 1606982496931;
	/* A group we hold nothing for: its time is ignored, the placeholder md5 is sent. */
	st[GW_GROUP_SELECTOR].last_modify_time = 77;
	char *b = admin_listener_body(classic, 5, st, NS);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(b, "PLUGIN=ff9f3045505109e66c403fcc6a7a9a12%2C1606982496917"
	                    "&SELECTOR=0%2C0"
	                    "&RULE=d751713988987e9331980363e24189ce%2C1606982496931"
	                    "&APP_AUTH=0%2C0"
	                    "&META_DATA=0%2C0"
	                    "&namespaceId=649330b6-c2d7-4edc-be8e-8a54df9eb385");
	free(b);
}
END_TEST

START_TEST(listener_body_eight_groups_in_configured_order)
{
	const enum gw_group all[] = {GW_GROUP_AI_PROXY_API_KEY, GW_GROUP_META_DATA,
	                             GW_GROUP_PLUGIN,           GW_GROUP_DISCOVER_UPSTREAM,
	                             GW_GROUP_PROXY_SELECTOR,   GW_GROUP_RULE,
	                             GW_GROUP_SELECTOR,         GW_GROUP_APP_AUTH};
	struct admin_stamp st[GW_GROUP_COUNT];
	memset(st, 0, sizeof st);
	char *b = admin_listener_body(all, 8, st, NS);
	ck_assert_str_eq(b, "AI_PROXY_API_KEY=0%2C0&META_DATA=0%2C0&PLUGIN=0%2C0"
	                    "&DISCOVER_UPSTREAM=0%2C0&PROXY_SELECTOR=0%2C0&RULE=0%2C0"
	                    "&SELECTOR=0%2C0&APP_AUTH=0%2C0&namespaceId=" NS);
	free(b);
}
END_TEST

START_TEST(listener_body_encodes_and_omits_empty_namespace)
{
	struct admin_stamp st[GW_GROUP_COUNT];
	memset(st, 0, sizeof st);
	strcpy(st[GW_GROUP_PLUGIN].md5, "a b&c=d");
	st[GW_GROUP_PLUGIN].last_modify_time = -5;
	const enum gw_group one[] = {GW_GROUP_PLUGIN};
	char *b = admin_listener_body(one, 1, st, "ns/\xc3\xa9");
	ck_assert_str_eq(b, "PLUGIN=a%20b%26c%3Dd%2C-5&namespaceId=ns%2F%C3%A9");
	free(b);
	b = admin_listener_body(one, 1, st, "");
	ck_assert_str_eq(b, "PLUGIN=a%20b%26c%3Dd%2C-5");
	free(b);
	b = admin_listener_body(one, 1, st, NULL);
	ck_assert_str_eq(b, "PLUGIN=a%20b%26c%3Dd%2C-5");
	free(b);
}
END_TEST

START_TEST(fetch_path)
{
	const enum gw_group two[] = {GW_GROUP_RULE, GW_GROUP_SELECTOR};
	char *p = admin_fetch_path(two, 2, NS);
	ck_assert_str_eq(p, "/configs/fetch?groupKeys=RULE&groupKeys=SELECTOR&namespaceId=" NS);
	free(p);
	p = admin_fetch_path(classic, 5, NULL);
	ck_assert_str_eq(p, "/configs/fetch?groupKeys=PLUGIN&groupKeys=SELECTOR&groupKeys=RULE"
	                    "&groupKeys=APP_AUTH&groupKeys=META_DATA");
	free(p);
	p = admin_fetch_path(two, 0, "x y");
	ck_assert_str_eq(p, "/configs/fetch?namespaceId=x%20y");
	free(p);
}
END_TEST

START_TEST(instance_info_is_json)
{
	char *s = admin_instance_info("gw-\"1\"\n", 9195);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_null(strchr(s, '\n')); /* must fit in one header line */
	json_t *o = json_loads(s, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "hostName")), "gw-\"1\"\n");
	ck_assert_str_eq(json_string_value(json_object_get(o, "agentName")), "gwsync");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "port")), 9195);
	ck_assert(json_is_string(json_object_get(o, "agentVersion")));
	json_decref(o);
	free(s);
}
END_TEST

START_TEST(escaping)
{
	struct strbuf b = {0};
	strbuf_add_escaped(&b, "AZaz09-._~ !*'();:@&=+$,/?#[]%\xe4\xb8\xad");
	char *s = strbuf_finish(&b);
	ck_assert_str_eq(s, "AZaz09-._~%20%21%2A%27%28%29%3B%3A%40%26%3D%2B%24%2C%2F%3F%23%5B%5D"
	                    "%25%E4%B8%AD");
	free(s);
	strbuf_addf(&b, "%d-%s", 42, "x");
	s = strbuf_finish(&b);
	ck_assert_str_eq(s, "42-x");
	free(s);
	s = strbuf_finish(&b); /* empty builder: an empty string, not NULL */
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

/* ---------------------------------------------------------------- listener replies */

static int parse(const char *body, unsigned *mask, struct gw_err *err)
{
	err->kind = SYNC_OK;
	err->msg[0] = '\0';
	return admin_parse_listener(body, strlen(body), classic, 5, "http://a:1", NULL, mask, err);
}

START_TEST(listener_reply_good)
{
	unsigned m = 99;
	struct gw_err err;
	ck_assert_int_eq(
	    parse("{\"code\":200,\"message\":\"success\",\"data\":[\"RULE\",\"PLUGIN\"]}", &m,
	          &err),
	    0);
	ck_assert_uint_eq(m, (1u << GW_GROUP_RULE) | (1u << GW_GROUP_PLUGIN));
	ck_assert_int_eq(parse("{\"code\":200,\"message\":\"success\",\"data\":[]}", &m, &err), 0);
	ck_assert_uint_eq(m, 0);
	/* Unknown names and groups we do not sync are ignored, not errors. */
	ck_assert_int_eq(parse("{\"code\":200,\"data\":[\"FUTURE_GROUP\",\"PROXY_SELECTOR\","
	                       "\"R\xc3\xa8GLE\",\"META_DATA\",\"META_DATA\"]}",
	                       &m, &err),
	                 0);
	ck_assert_uint_eq(m, 1u << GW_GROUP_META_DATA);
}
END_TEST

START_TEST(listener_reply_admin_error)
{
	unsigned m = 0;
	struct gw_err err;
	ck_assert_int_eq(
	    parse("{\"code\":500,\"message\":\"group param invalid:null\",\"data\":null}", &m,
	          &err),
	    -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_CODE);
	ck_assert_ptr_nonnull(strstr(err.msg, "server http://a:1: listener"));
	ck_assert_ptr_nonnull(strstr(err.msg, "500"));
	ck_assert_ptr_nonnull(strstr(err.msg, "group param invalid"));
	ck_assert_ptr_nonnull(strstr(err.msg, "admin.groups")); /* the hint */
	ck_assert_int_eq(parse("{\"code\":600,\"message\":\"token is error\"}", &m, &err), -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_CODE);
	ck_assert_ptr_nonnull(strstr(err.msg, "token is error"));
}
END_TEST

START_TEST(listener_reply_malformed)
{
	unsigned m = 0;
	struct gw_err err;
	const char *bad[] = {
	    "{\"code\":200,\"message\":\"success\"}", /* missing data */
	    "{\"code\":200,\"data\":\"PLUGIN\"}",     /* not a list */
	    "{\"code\":200,\"data\":{\"PLUGIN\":1}}", /* not a list */
	    "{\"code\":200,\"data\":[\"PLUGIN\",7]}", /* element not a name */
	    "{\"code\":200,\"data\":[\"PLUGIN\",",    /* truncated */
	    "",                                       /* empty body */
	    "<html><body>Bad Gateway</body></html>",  /* not JSON */
	    "[\"PLUGIN\"]",                           /* no envelope */
	    "{\"code\":\"200\",\"data\":[]}",         /* code of the wrong type */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		m = 12345;
		ck_assert_msg(parse(bad[i], &m, &err) == -1, "accepted: %s", bad[i]);
		ck_assert_msg(err.kind == SYNC_FAIL_PARSE, "reason %d for %s", err.kind, bad[i]);
		ck_assert_uint_eq(m, 0);
		ck_assert_msg(strstr(err.msg, "http://a:1") != NULL, "no server in: %s", err.msg);
	}
}
END_TEST

/* ---------------------------------------------------------------- login */

START_TEST(login_body_and_path)
{
	char *b = login_post_body("ad\"min", "p\xc3\xa4ss\\word");
	json_t *o = json_loads(b, 0, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_string_value(json_object_get(o, "userName")), "ad\"min");
	ck_assert_str_eq(json_string_value(json_object_get(o, "password")), "p\xc3\xa4ss\\word");
	json_decref(o);
	free(b);
	char *p = login_get_path("admin", "a&b=c d");
	ck_assert_str_eq(p, "/platform/login?userName=admin&password=a%26b%3Dc%20d");
	free(p);
}
END_TEST

START_TEST(login_reply_good)
{
	const char *r = "{\"code\":200,\"message\":\"login dashboard user success\",\"data\":"
	                "{\"id\":\"1\",\"userName\":\"admin\",\"role\":1,\"enabled\":true,"
	                "\"token\":\"eyJhbGciOiJIUzUxMiJ9.e30.sig\",\"expiredTime\":86400000}}";
	char *tok = NULL;
	int64_t exp = 0;
	/* a kind left from an earlier failure is not taken for this call's */
	struct gw_err err = {.kind = SYNC_FAIL_AUTH};
	ck_assert_int_eq(login_parse_reply(r, strlen(r), &tok, &exp, &err), 0);
	ck_assert_int_eq(err.kind, SYNC_OK);
	ck_assert_str_eq(tok, "eyJhbGciOiJIUzUxMiJ9.e30.sig");
	ck_assert_int_eq(exp, 86400000);
	free(tok);
	/* No lifetime: -1, the token is used until a 401. */
	const char *r2 = "{\"code\":200,\"data\":{\"token\":\"t0k3n\"}}";
	ck_assert_int_eq(login_parse_reply(r2, strlen(r2), &tok, &exp, &err), 0);
	ck_assert_int_eq(exp, -1);
	free(tok);
	const char *r3 = "{\"code\":200,\"data\":{\"token\":\"t0k3n\",\"expiredTime\":\"soon\"}}";
	ck_assert_int_eq(login_parse_reply(r3, strlen(r3), &tok, &exp, &err), 0);
	ck_assert_int_eq(exp, -1);
	free(tok);
}
END_TEST

START_TEST(login_reply_refused)
{
	struct {
		const char *body;
		enum sync_fail why;
	} cases[] = {
	    {"{\"code\":500,\"message\":\"user name or password is error\",\"data\":null}",
	     SYNC_FAIL_AUTH},
	    {"{\"code\":200,\"data\":{\"userName\":\"admin\"}}", SYNC_FAIL_AUTH},
	    {"{\"code\":200,\"data\":{\"token\":\"\"}}", SYNC_FAIL_AUTH},
	    {"{\"code\":200,\"data\":{\"token\":12}}", SYNC_FAIL_AUTH},
	    {"{\"code\":200,\"data\":[\"secret-token\"]}", SYNC_FAIL_PARSE},
	    {"{\"code\":200,\"data\":{\"token\":\"secret-tok", SYNC_FAIL_PARSE},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *tok = (char *)1;
		int64_t exp;
		struct gw_err err = {0};
		ck_assert_int_eq(
		    login_parse_reply(cases[i].body, strlen(cases[i].body), &tok, &exp, &err), -1);
		ck_assert_ptr_null(tok);
		ck_assert_msg(err.kind == cases[i].why, "case %zu: reason %d", i, err.kind);
		ck_assert_msg(err.msg[0] != '\0', "case %zu: no message", i);
		ck_assert_msg(!strstr(err.msg, "secret-tok"), "token in message: %s", err.msg);
	}
}
END_TEST

START_TEST(refresh_deadline)
{
	ck_assert_int_eq(login_refresh_deadline(1000, 10000), 1000 + 9000);
	ck_assert_int_eq(login_refresh_deadline(0, 86400000), 77760000);
	ck_assert_int_eq(login_refresh_deadline(5, 7), 5 + 6); /* 6.3 ms, rounded down */
	ck_assert_int_eq(login_refresh_deadline(5, 1), 5);     /* renew at once next time */
	ck_assert_int_eq(login_refresh_deadline(1000, -1), INT64_MAX);
	ck_assert_int_eq(login_refresh_deadline(1000, 0), INT64_MAX);
	ck_assert_int_eq(login_refresh_deadline(INT64_MAX - 10, INT64_MAX), INT64_MAX);
	/* Always strictly before the expiry for any lifetime of 10 ms or more. */
	for (int64_t life = 10; life < 100000; life = life * 3 + 1)
		ck_assert_int_lt(login_refresh_deadline(123, life), 123 + life);
}
END_TEST

/* ---------------------------------------------------------------- classification */

/* The kind reply_parse_envelope() puts in the error, checked against what it returns. */
static enum sync_fail envelope_kind(const char *b, size_t len, struct reply_envelope *env,
                                    struct gw_err *err)
{
	int rc = reply_parse_envelope(b, len, env, err);
	ck_assert_int_eq(rc, err->kind == SYNC_OK ? 0 : -1);
	return err->kind;
}

START_TEST(classify_and_excerpt)
{
	const char *b;
	struct reply_envelope env;
	struct gw_err err = {0};
	b = "{\"code\":500,\"message\":\"x\"}";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_FAIL_CODE);
	ck_assert_int_eq(env.code, 500);
	ck_assert_str_eq(env.message, "x");
	ck_assert_str_eq(err.msg, "admin code 500: x");
	b = " {\"code\":200,\"data\":{\"a\": [1]} }";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_OK);
	ck_assert_int_eq(env.data_len, strlen("{\"a\": [1]}"));
	ck_assert_int_eq(strncmp(env.data, "{\"a\": [1]}", env.data_len), 0);
	b = "{\"code\":200,\"data\":{";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_FAIL_PARSE);
	ck_assert_ptr_nonnull(strstr(err.msg, "invalid JSON at line 1 column"));
	ck_assert_int_eq(envelope_kind("", 0, &env, &err), SYNC_FAIL_PARSE);
	b = "[1]";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_FAIL_PARSE);
	ck_assert_str_eq(err.msg, "reply is not a JSON object");
	b = "{\"code\":\"200\",\"data\":1}";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_FAIL_PARSE);
	ck_assert_str_eq(err.msg, "reply has no integer 'code'");
	b = "{\"code\":200}";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_FAIL_PARSE);
	ck_assert_str_eq(err.msg, "reply has no 'data'");
	b = "{\"code\":200,\"data\":1,\"data\":2}";
	ck_assert_int_eq(envelope_kind(b, strlen(b), &env, &err), SYNC_FAIL_PARSE);

	/* the fetch: envelope, then the groups; each refusal with its own reason */
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct group_data *out[GW_GROUP_COUNT];
	b = "{\"code\":503,\"message\":\"busy\"}";
	ck_assert_int_eq(reply_parse_fetch(b, strlen(b), rule, 1, "s", NULL, out, &err), -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_CODE);
	b = "{\"code\":200,\"data\":{}}";
	ck_assert_int_eq(reply_parse_fetch(b, strlen(b), rule, 1, "s", NULL, out, &err), -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_FETCH);
	ck_assert_str_eq(err.msg, "group RULE: missing from the reply");
	b = "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[{]}}}";
	ck_assert_int_eq(reply_parse_fetch(b, strlen(b), rule, 1, "s", NULL, out, &err), -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_PARSE);
	ck_assert_ptr_nonnull(strstr(err.msg, "invalid JSON at line 1 column"));

	/* the listener: a ShenYu 2.7 admin's refusal of a partial group list gets a hint */
	unsigned changed;
	b = "{\"code\":500,\"message\":\"group param invalid: X\"}";
	ck_assert_int_eq(admin_parse_listener(b, strlen(b), rule, 1, "S", NULL, &changed, &err),
	                 -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_CODE);
	ck_assert_ptr_nonnull(strstr(err.msg, "server S: listener: admin code 500: group param"));
	ck_assert_ptr_nonnull(strstr(err.msg, "needs all eight"));
	b = "{\"code\":500,\"message\":\"busy\"}";
	ck_assert_int_eq(admin_parse_listener(b, strlen(b), rule, 1, "S", NULL, &changed, &err),
	                 -1);
	ck_assert_ptr_null(strstr(err.msg, "needs all eight"));

	char text[16];
	reply_excerpt("a\nb\x01"
	              "c",
	              5, text, sizeof text);
	ck_assert_str_eq(text, "a b?c");
	reply_excerpt("0123456789abcdefghij", 20, text, sizeof text);
	ck_assert_str_eq(text, "0123456789ab...");
	reply_excerpt("xyz", 3, text, 3);
	ck_assert_str_eq(text, "");

	err.kind = SYNC_OK;
	ck_assert_int_eq(reply_check_status("http://s", "fetch", 200, "", 0, &err), 0);
	ck_assert_int_eq(
	    reply_check_status("http://s", "fetch", 503, "Service Unavailable", 19, &err), -1);
	ck_assert_int_eq(err.kind, SYNC_FAIL_HTTP);
	ck_assert_str_eq(err.msg, "server http://s: fetch: HTTP 503: Service Unavailable");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("admin");
	TCase *tc = tcase_create("builders");
	tcase_add_test(tc, listener_body_every_group_with_placeholder);
	tcase_add_test(tc, listener_body_eight_groups_in_configured_order);
	tcase_add_test(tc, listener_body_encodes_and_omits_empty_namespace);
	tcase_add_test(tc, fetch_path);
	tcase_add_test(tc, instance_info_is_json);
	tcase_add_test(tc, escaping);
	suite_add_tcase(s, tc);
	tc = tcase_create("listener");
	tcase_add_test(tc, listener_reply_good);
	tcase_add_test(tc, listener_reply_admin_error);
	tcase_add_test(tc, listener_reply_malformed);
	suite_add_tcase(s, tc);
	tc = tcase_create("login");
	tcase_add_test(tc, login_body_and_path);
	tcase_add_test(tc, login_reply_good);
	tcase_add_test(tc, login_reply_refused);
	tcase_add_test(tc, refresh_deadline);
	tcase_add_test(tc, classify_and_excerpt);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
