/*
 * The wire forms of Nacos's listener (source/nacos/listen.h), checked against what
 * alibaba/nacos's code does with them: MD5Util.getClientMd5Map's reading of the request
 * field, compareMd5ResultString's answer, MD5Utils.md5Hex.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "source/nacos/listen.h"

START_TEST(md5_is_lowercase_hex_of_the_bytes)
{
	char out[NACOS_MD5_HEX];
	nacos_md5_hex("", 0, out);
	ck_assert_str_eq(out, "d41d8cd98f00b204e9800998ecf8427e");
	nacos_md5_hex("[\"divide\"]", 10, out);
	ck_assert_str_eq(out, "4d574993e3693275907882db663dbf17");
}
END_TEST

START_TEST(the_request_field_puts_md5_before_tenant)
{
	struct strbuf b = {0};
	nacos_listen_begin(&b);
	nacos_listen_add(&b, "ns.plugin.list", 14, "DEFAULT_GROUP", "abc", NULL);
	nacos_listen_add(&b, "ns.auth.list", 12, "DEFAULT_GROUP", "", "t1");
	char *s = strbuf_finish(&b);
	ck_assert_str_eq(s, "Listening-Configs=ns.plugin.list%02DEFAULT_GROUP%02abc%01"
	                    "ns.auth.list%02DEFAULT_GROUP%02%02t1%01");
	free(s);
}
END_TEST

struct got {
	char keys[512];
};

static int on_key(void *ctx, const char *id, size_t len)
{
	struct got *g = ctx;
	strncat(g->keys, id, len);
	strcat(g->keys, " ");
	return 0;
}

START_TEST(an_answer_names_the_keys_of_our_group_and_tenant)
{
	struct got g = {""};
	/* URL-encoded, a trailing newline (the writer's println), the public tenant left out */
	const char *a = "ns.plugin.list%02DEFAULT_GROUP%01ns.rule.a.1.list%02DEFAULT_GROUP%01"
	                "other%02OTHER_GROUP%01\n";
	ck_assert_int_eq(nacos_listen_parse(a, strlen(a), "DEFAULT_GROUP", NULL, on_key, &g), 3);
	ck_assert_str_eq(g.keys, "ns.plugin.list ns.rule.a.1.list ");
	/* with a tenant: only that tenant's keys */
	g.keys[0] = '\0';
	const char *t = "k1%02DEFAULT_GROUP%02t1%01k2%02DEFAULT_GROUP%02t2%01";
	ck_assert_int_eq(nacos_listen_parse(t, strlen(t), "DEFAULT_GROUP", "t1", on_key, &g), 2);
	ck_assert_str_eq(g.keys, "k1 ");
	/* Nacos 2+ answers the "public" namespace without a tenant */
	g.keys[0] = '\0';
	const char *p = "k3%02DEFAULT_GROUP%01";
	ck_assert_int_eq(nacos_listen_parse(p, strlen(p), "DEFAULT_GROUP", "public", on_key, &g),
	                 1);
	ck_assert_str_eq(g.keys, "k3 ");
	/* a timeout: an empty body names nothing */
	ck_assert_int_eq(nacos_listen_parse("", 0, "DEFAULT_GROUP", NULL, on_key, &g), 0);
}
END_TEST

START_TEST(a_malformed_answer_names_nothing)
{
	struct got g = {""};
	const char *bad[] = {"k%02G",            /* no line end */
	                     "k%0",              /* a cut escape */
	                     "k%zzG%01",         /* not hex */
	                     "k%01",             /* no group */
	                     "%02G%01",          /* no id */
	                     "a%02b%02c%02d%01", /* four words */
	                     "ok%02G%01bad%01"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_int_eq(nacos_listen_parse(bad[i], strlen(bad[i]), "G", NULL, on_key, &g),
		                 -1);
	ck_assert_str_eq(g.keys, "");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nacos_listen");
	TCase *tc = tcase_create("listen");
	tcase_add_test(tc, md5_is_lowercase_hex_of_the_bytes);
	tcase_add_test(tc, the_request_field_puts_md5_before_tenant);
	tcase_add_test(tc, an_answer_names_the_keys_of_our_group_and_tenant);
	tcase_add_test(tc, a_malformed_answer_names_nothing);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
