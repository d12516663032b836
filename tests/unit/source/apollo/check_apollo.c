/*
 * The Apollo source's pure parts: the access-key signature (sign.c) against apollo-java's
 * own test vector (SignatureTest.testSignature), the request paths (client.c), the
 * config service's replies (reply.c: notifications, releases full and incremental, the
 * meta service's list) and the key-by-key diff of two releases (diff.c).
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/apollo/client.h"
#include "source/apollo/diff.h"
#include "source/apollo/reply.h"
#include "source/apollo/scan.h"
#include "source/apollo/sign.h"
#include "source/failure.h"

/* ---------------------------------------------------------------- signature */

START_TEST(signature_matches_apollo_javas_vector)
{
	/* apollo-java apollo-core/src/test/.../signature/SignatureTest.java */
	char sig[APOLLO_SIGN_LEN];
	ck_assert_int_eq(apollo_sign("df23df3f59884980844ff3dada30fa97", "1576478257344",
	                             "/configs/100004458/default/application?ip=10.0.0.1", sig),
	                 0);
	ck_assert_str_eq(sig, "EoKyziXvKqzHgwx+ijDJwgVTDgE=");
}
END_TEST

START_TEST(signature_headers_carry_the_timestamp_signed)
{
	char ts[64], auth[256], sig[APOLLO_SIGN_LEN];
	ck_assert_int_eq(apollo_sign_headers("100004458", "df23df3f59884980844ff3dada30fa97",
	                                     1576478257344LL,
	                                     "/configs/100004458/default/application?ip=10.0.0.1",
	                                     ts, sizeof ts, auth, sizeof auth),
	                 0);
	ck_assert_str_eq(ts, "Timestamp: 1576478257344");
	ck_assert_str_eq(auth, "Authorization: Apollo 100004458:EoKyziXvKqzHgwx+ijDJwgVTDgE=");
	/* another path, another signature; a line that does not fit is refused */
	ck_assert_int_eq(apollo_sign("df23df3f59884980844ff3dada30fa97", "1576478257344",
	                             "/configs/100004458/default/application", sig),
	                 0);
	ck_assert_str_ne(sig, "EoKyziXvKqzHgwx+ijDJwgVTDgE=");
	ck_assert_int_eq(apollo_sign_headers("app", "s", 1, "/x", ts, 8, auth, sizeof auth), -1);
}
END_TEST

/* ---------------------------------------------------------------- paths */

START_TEST(paths_are_percent_encoded)
{
	char *p = apollo_notifications_path("shenyu", "default", "application", -1);
	ck_assert_str_eq(p, "/notifications/v2?appId=shenyu&cluster=default&notifications="
	                    "%5B%7B%22namespaceName%22%3A%22application%22%2C%22notificationId%"
	                    "22%3A-1%7D%5D");
	free(p);
	p = apollo_configs_path("my app", "c1", "ns.json", "2026+k");
	ck_assert_str_eq(p, "/configs/my%20app/c1/ns.json?releaseKey=2026%2Bk");
	free(p);
	p = apollo_configs_path("a", "default", "application", NULL);
	ck_assert_str_eq(p, "/configs/a/default/application");
	free(p);
}
END_TEST

/* ---------------------------------------------------------------- notifications */

static int notif(const char *body, const char *ns, int64_t *id)
{
	struct gw_err err = {0};
	int rc = apollo_parse_notifications(body, strlen(body), ns, id, &err);
	if (rc < 0)
		ck_assert_int_eq(err.kind, SYNC_FAIL_PARSE);
	return rc;
}

START_TEST(notifications_give_the_namespaces_id)
{
	int64_t id = 0;
	ck_assert_int_eq(notif("[{\"namespaceName\":\"application\",\"notificationId\":101,"
	                       "\"messages\":{\"details\":{\"shenyu+default+application\":101}}}]",
	                       "application", &id),
	                 1);
	ck_assert_int_eq(id, 101);
	/* another namespace only: not ours */
	ck_assert_int_eq(
	    notif("[{\"namespaceName\":\"other\",\"notificationId\":5}]", "application", &id), 0);
	/* the name as normalized back, in another case */
	ck_assert_int_eq(
	    notif("[{\"namespaceName\":\"Application\",\"notificationId\":7}]", "application", &id),
	    1);
	ck_assert_int_eq(id, 7);
	ck_assert_int_eq(notif("[]", "application", &id), 0);
}
END_TEST

START_TEST(notifications_refuse_what_is_not)
{
	const char *bad[] = {"",
	                     "not json",
	                     "{}",
	                     "[1]",
	                     "[{\"namespaceName\":1,\"notificationId\":1}]",
	                     "[{\"namespaceName\":\"application\",\"notificationId\":\"1\"}]",
	                     "[{\"namespaceName\":\"application\"}]",
	                     "[{\"a\":1,\"a\":2}]",
	                     "[{\"namespaceName\":\"\xff\",\"notificationId\":1}]"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int64_t id = 0;
		ck_assert_msg(notif(bad[i], "application", &id) == -1, "%s", bad[i]);
	}
}
END_TEST

/* ---------------------------------------------------------------- releases */

/* what a diff callback was handed, one "key=value" ("key=-": gone) line each */
struct seen {
	char lines[16][64];
	size_t n;
	int stop_at; /* stop at this call (1-based); 0: never */
};

static int record(void *ctx, const char *key, size_t klen, const char *value, size_t vlen)
{
	struct seen *s = ctx;
	snprintf(s->lines[s->n], sizeof s->lines[s->n], "%.*s=%.*s", (int)klen, key,
	         value ? (int)vlen : 1, value ? value : "-");
	s->n++;
	return s->stop_at && (int)s->n == s->stop_at;
}

static int has(const struct seen *s, const char *line)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->lines[i], line) == 0)
			return 1;
	return 0;
}

static int release(const char *body, struct apollo_release *r)
{
	struct gw_err err = {0};
	int rc = apollo_parse_release(body, strlen(body), r, &err);
	if (rc < 0)
		ck_assert_int_eq(err.kind, SYNC_FAIL_PARSE);
	return rc;
}

START_TEST(a_release_is_its_configurations_and_key)
{
	struct apollo_release r;
	ck_assert_int_eq(
	    release("{\"appId\":\"shenyu\",\"cluster\":\"default\",\"namespaceName\":"
	            "\"application\",\"configurations\":{\"a.plugin.list\":"
	            "\"[\\\"waf\\\"]\",\"a.plugin.waf\":\"{}\"},\"releaseKey\":\"rk1\"}",
	            &r),
	    0);
	ck_assert_str_eq(r.release_key, "rk1");
	ck_assert_uint_eq(json_object_size(r.configurations), 2);
	ck_assert_str_eq(json_string_value(json_object_get(r.configurations, "a.plugin.list")),
	                 "[\"waf\"]");
	apollo_release_free(&r);
	/* an empty namespace released */
	ck_assert_int_eq(release("{\"configurations\":{},\"releaseKey\":\"rk2\"}", &r), 0);
	ck_assert_uint_eq(json_object_size(r.configurations), 0);
	apollo_release_free(&r);
}
END_TEST

START_TEST(an_incremental_release_is_its_changes_applied_in_place)
{
	struct apollo_release r;
	ck_assert_int_eq(
	    release("{\"releaseKey\":\"rk9\",\"configSyncType\":\"IncrementalSync\","
	            "\"configurationChanges\":[{\"key\":\"k1\",\"newValue\":\"v1b\","
	            "\"configurationChangeType\":\"MODIFIED\"},{\"key\":\"k2\","
	            "\"configurationChangeType\":\"DELETED\"},{\"key\":\"k4\",\"newValue\":"
	            "\"v4\",\"configurationChangeType\":\"ADDED\"},{\"key\":\"k3\",\"newValue\":"
	            "\"v3\",\"configurationChangeType\":\"MODIFIED\"},{\"key\":\"k9\","
	            "\"configurationChangeType\":\"DELETED\"}]}",
	            &r),
	    0);
	ck_assert_ptr_null(r.configurations);
	ck_assert_str_eq(r.release_key, "rk9");
	json_t *held = json_pack("{s:s, s:s, s:s}", "k1", "v1", "k2", "v2", "k3", "v3");
	struct seen s = {0};
	/* k3 rewritten with its own value and k9 deleted though absent: no difference */
	ck_assert_int_eq(apollo_apply_changes(held, r.changes, record, &s), 3);
	ck_assert(has(&s, "k1=v1b"));
	ck_assert(has(&s, "k2=-"));
	ck_assert(has(&s, "k4=v4"));
	ck_assert_uint_eq(json_object_size(held), 3);
	ck_assert_str_eq(json_string_value(json_object_get(held, "k1")), "v1b");
	ck_assert_ptr_null(json_object_get(held, "k2"));
	ck_assert_str_eq(json_string_value(json_object_get(held, "k4")), "v4");
	apollo_release_free(&r);
	json_decref(held);
}
END_TEST

START_TEST(releases_refuse_what_is_not)
{
	const char *bad[] = {
	    "",
	    "[]",
	    "{\"configurations\":{}}",
	    "{\"releaseKey\":1,\"configurations\":{}}",
	    "{\"releaseKey\":\"r\"}",
	    "{\"releaseKey\":\"r\",\"configurations\":{\"k\":1}}",
	    "{\"releaseKey\":\"r\",\"configurations\":{\"k\":null}}",
	    "{\"releaseKey\":\"r\",\"configurations\":{\"k\":\"a\",\"k\":\"b\"}}",
	    "{\"releaseKey\":\"r\",\"configurations\":{\"k\":\"\xc3\x28\"}}",
	    "{\"releaseKey\":\"r\",\"configurationChanges\":[{\"key\":\"k\","
	    "\"configurationChangeType\":\"ADDED\"}]}",
	    "{\"releaseKey\":\"r\",\"configurationChanges\":[{\"key\":\"k\",\"newValue\":\"v\","
	    "\"configurationChangeType\":\"RENAMED\"}]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct apollo_release r;
		ck_assert_msg(release(bad[i], &r) == -1, "%s", bad[i]);
		ck_assert_ptr_null(r.configurations);
	}
	/* nesting deeper than jansson's limit */
	size_t n = 100000;
	char *deep = malloc(2 * n + 1);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	deep[2 * n] = '\0';
	struct apollo_release r;
	ck_assert_int_eq(release(deep, &r), -1);
	free(deep);
}
END_TEST

/* ---------------------------------------------------------------- meta service */

START_TEST(the_meta_service_lists_homepage_urls)
{
	const char *body = "[{\"appName\":\"APOLLO-CONFIGSERVICE\",\"instanceId\":\"i1\","
	                   "\"homepageUrl\":\"http://10.0.0.1:8080/\"},{\"appName\":\"x\","
	                   "\"homepageUrl\":\"https://c2:8443/apollo/\"},{\"homepageUrl\":1},"
	                   "{\"homepageUrl\":\"ftp://no\"}]";
	char **urls;
	size_t n;
	struct gw_err err = {0};
	ck_assert_int_eq(apollo_parse_services(body, strlen(body), &urls, &n, &err), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(urls[0], "http://10.0.0.1:8080");
	ck_assert_str_eq(urls[1], "https://c2:8443/apollo");
	apollo_urls_free(urls, n);
	const char *none[] = {"[]", "{}", "[{\"homepageUrl\":\"ftp://x\"}]", "x"};
	for (size_t i = 0; i < sizeof none / sizeof *none; i++)
		ck_assert_int_eq(apollo_parse_services(none[i], strlen(none[i]), &urls, &n, &err),
		                 -1);
}
END_TEST

/* ---------------------------------------------------------------- diff */

START_TEST(diff_hands_on_only_what_differs)
{
	json_t *old = json_pack("{s:s, s:s, s:s, s:s}", "same", "1", "changed", "a", "gone", "x",
	                        "longer", "ab");
	json_t *next = json_pack("{s:s, s:s, s:s, s:s}", "same", "1", "changed", "b", "new", "n",
	                         "longer", "abc");
	struct seen s = {0};
	ck_assert_int_eq(apollo_diff(old, next, record, &s), 4);
	ck_assert_uint_eq(s.n, 4);
	ck_assert(has(&s, "changed=b"));
	ck_assert(has(&s, "new=n"));
	ck_assert(has(&s, "longer=abc"));
	ck_assert(has(&s, "gone=-"));
	/* nothing held: every key is new */
	struct seen all = {0};
	ck_assert_int_eq(apollo_diff(NULL, next, record, &all), 4);
	/* equal maps: nothing */
	struct seen none = {0};
	ck_assert_int_eq(apollo_diff(next, next, record, &none), 0);
	ck_assert_uint_eq(none.n, 0);
	/* the callback stops it */
	struct seen stop = {.stop_at = 1};
	ck_assert_int_eq(apollo_diff(old, next, record, &stop), -1);
	ck_assert_uint_eq(stop.n, 1);
	json_decref(old);
	json_decref(next);
}
END_TEST

START_TEST(diff_compares_values_with_nul_bytes_whole)
{
	json_t *old = json_object(), *next = json_object();
	json_object_set_new(old, "k", json_stringn("a\0b", 3));
	json_object_set_new(next, "k", json_stringn("a\0c", 3));
	struct seen s = {0};
	ck_assert_int_eq(apollo_diff(old, next, record, &s), 1);
	json_decref(old);
	json_decref(next);
}
END_TEST

/* ---------------------------------------------------------------- scan */

/* The walk against the parser on one reply and one held map: the walk either takes it and
 * ends with what the parser and the diff give (the same new map, the same keys handed on),
 * or leaves it (changing nothing). Returns what the walk returned. */
static int scan_as_parser(const char *body, const json_t *held0)
{
	json_t *a = json_deep_copy(held0), *b = json_deep_copy(held0);
	struct seen sa = {0}, sb = {0};
	char *rk = NULL;
	long n = -1;
	int r = apollo_scan_release(body, strlen(body), a, record, &sa, &rk, &n);
	struct apollo_release rel;
	struct gw_err err = {0};
	int p = apollo_parse_release(body, strlen(body), &rel, &err);
	if (r == 1) {
		ck_assert_msg(p == 0 && rel.configurations,
		              "the walk took what the parser refuses: %s", body);
		long m = apollo_diff(b, rel.configurations, record, &sb);
		ck_assert_int_eq(n, m);
		ck_assert_uint_eq(sa.n, sb.n);
		for (size_t i = 0; i < sb.n; i++)
			ck_assert_msg(has(&sa, sb.lines[i]), "%s", sb.lines[i]);
		ck_assert(json_equal(a, rel.configurations));
		ck_assert_str_eq(rk, rel.release_key);
	} else {
		ck_assert_int_eq(r, 0);
		ck_assert_uint_eq(sa.n, 0);
		ck_assert(json_equal(a, held0));
		ck_assert_ptr_null(rk);
	}
	if (p == 0)
		apollo_release_free(&rel);
	free(rk);
	json_decref(a);
	json_decref(b);
	return r;
}

START_TEST(the_walk_gives_what_the_parser_and_the_diff_give)
{
	json_t *held = json_pack("{s:s, s:s, s:s, s:s}", "same", "1", "changed", "a", "gone", "x",
	                         "esc", "q\"uote");
	/* taken: changes, additions, deletions, escapes (same and changed), UTF-8, numbers and
	 * literals among the other members, whitespace */
	const char *taken[] = {
	    "{\"appId\":\"shenyu\",\"configurations\":{\"same\":\"1\",\"changed\":\"b\",\"new\":"
	    "\"n\",\"esc\":\"q\\\"uote\"},\"releaseKey\":\"rk2\"}",
	    " { \"releaseKey\" : \"r\\u0041\" , \"n\" : -1.5e3 , \"t\" : true , \"z\" : null , "
	    "\"configurations\" : { \"same\" : \"1\" , \"changed\" : \"a\" , \"gone\" : \"x\" , "
	    "\"esc\" : \"q\\\"uote2\" , \"k\\u00e9\" : \"v\xc3\xa9\" } } \n",
	    "{\"configurations\":{},\"releaseKey\":\"empty\"}",
	    "{\"configurations\":{\"same\":\"1\",\"changed\":\"a\",\"gone\":\"x\",\"esc\":"
	    "\"q\\\"uote\"},\"releaseKey\":\"nothing\"}",
	};
	for (size_t i = 0; i < sizeof taken / sizeof *taken; i++)
		ck_assert_msg(scan_as_parser(taken[i], held) == 1, "%s", taken[i]);
	/* left to the parser: every one either refused by it or not a full reply */
	const char *left[] = {
	    "",
	    "[]",
	    "{\"configurations\":{\"k\":1},\"releaseKey\":\"r\"}",
	    "{\"configurations\":{\"k\":\"a\",\"k\":\"b\"},\"releaseKey\":\"r\"}",
	    "{\"configurations\":{},\"releaseKey\":\"r\",\"releaseKey\":\"s\"}",
	    "{\"configurations\":{\"k\":\"\xc3\x28\"},\"releaseKey\":\"r\"}",
	    "{\"configurations\":{\"k\":\"a\"}}",
	    "{\"configurations\":{\"k\":\"a\"},\"releaseKey\":\"r\"} x",
	    "{\"configurations\":{\"k\":\"a\",},\"releaseKey\":\"r\"}",
	    "{\"configurations\":{\"k\":\"a\"},\"releaseKey\":\"r\",\"x\":tru}",
	    "{\"configurations\":{\"k\":\"a\"},\"releaseKey\":\"r\",\"x\":01}",
	    "{\"releaseKey\":\"r\",\"configurationChanges\":[]}",
	    "{\"configurations\":{\"k\":\"a\"},\"releaseKey\":\"r\",\"x\":{\"y\":1}}",
	    "{\"configurations\":{\"k\":\"a\\u0000\"},\"releaseKey\":\"r\"}",
	};
	for (size_t i = 0; i < sizeof left / sizeof *left; i++)
		ck_assert_msg(scan_as_parser(left[i], held) == 0, "%s", left[i]);
	json_decref(held);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("apollo");
	TCase *t = tcase_create("sign");
	tcase_add_test(t, signature_matches_apollo_javas_vector);
	tcase_add_test(t, signature_headers_carry_the_timestamp_signed);
	tcase_add_test(t, paths_are_percent_encoded);
	suite_add_tcase(s, t);
	t = tcase_create("reply");
	tcase_add_test(t, notifications_give_the_namespaces_id);
	tcase_add_test(t, notifications_refuse_what_is_not);
	tcase_add_test(t, a_release_is_its_configurations_and_key);
	tcase_add_test(t, an_incremental_release_is_its_changes_applied_in_place);
	tcase_add_test(t, releases_refuse_what_is_not);
	tcase_add_test(t, the_meta_service_lists_homepage_urls);
	suite_add_tcase(s, t);
	t = tcase_create("diff");
	tcase_add_test(t, diff_hands_on_only_what_differs);
	tcase_add_test(t, diff_compares_values_with_nul_bytes_whole);
	tcase_add_test(t, the_walk_gives_what_the_parser_and_the_diff_give);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
