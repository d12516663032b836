/*
 * The Polaris source's pure parts: Polaris's answers as its jsonpb writes them (reply.c),
 * the GetConfigFile path and the WatchConfigFile body (wire.c), the table of versions
 * held (versions.c), and the polaris: section (config.c) through the configuration loader.
 */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "source/polaris/config.h"
#include "source/polaris/reply.h"
#include "source/polaris/versions.h"
#include "source/polaris/wire.h"
#include "source/source.h"

/* ---------------------------------------------------------------- replies */

/* GetConfigFile's success, as config/client.go and jsonpb{Indent: " ", EmitDefaults}
 * write it: Go's escaping of '<' and '&', the version a string */
static const char get_ok[] =
    "{\n \"code\": 200000,\n \"info\": \"execute success\",\n \"configFile\": {\n"
    "  \"namespace\": \"default\",\n  \"group\": \"shenyu\",\n"
    "  \"fileName\": \"ns.plugin.divide\",\n"
    "  \"content\": \"{\\\"name\\\":\\\"divide\\\",\\\"config\\\":\\\"\\u003ca\\u0026b\\\"}\",\n"
    "  \"version\": \"17\",\n  \"md5\": \"0cc175b9c0f1b6a831c399e269772661\",\n"
    "  \"tags\": [],\n  \"encrypted\": false,\n  \"publicKey\": null,\n  \"name\": null,\n"
    "  \"release_time\": null,\n  \"client_type\": \"SDK\",\n  \"persistent\": null\n }\n}";

START_TEST(a_released_file_is_read_whole)
{
	struct polaris_reply r;
	struct gw_err err = {0};
	ck_assert_int_eq(polaris_reply_parse(get_ok, strlen(get_ok), &r, &err), 0);
	ck_assert_uint_eq(r.code, POLARIS_EXECUTE_SUCCESS);
	ck_assert_str_eq(r.info, "execute success");
	ck_assert(r.has_file);
	ck_assert_str_eq(r.file_name, "ns.plugin.divide");
	ck_assert_str_eq(r.content, "{\"name\":\"divide\",\"config\":\"<a&b\"}");
	ck_assert_uint_eq(r.content_len, strlen(r.content));
	ck_assert_uint_eq(r.version, 17);
	polaris_reply_free(&r);
}
END_TEST

START_TEST(not_found_no_change_and_empty_content)
{
	struct polaris_reply r;
	struct gw_err err = {0};
	/* not found echoes the request, with the client-ip tag the server added */
	const char *nf = "{\"code\":400202,\"info\":\"not found resource\",\"configFile\":{"
	                 "\"namespace\":\"default\",\"group\":\"shenyu\",\"fileName\":\"x\","
	                 "\"content\":null,\"version\":\"0\",\"tags\":[{\"key\":\"internal-client-"
	                 "ip\",\"value\":\"127.0.0.1\"}]}}";
	ck_assert_int_eq(polaris_reply_parse(nf, strlen(nf), &r, &err), 0);
	ck_assert_uint_eq(r.code, POLARIS_NOT_FOUND_RESOURCE);
	ck_assert_ptr_null(r.content);
	ck_assert_uint_eq(r.version, 0);
	polaris_reply_free(&r);
	/* the watch's timeout (watcher.go notModifiedResponse): code only */
	const char *nc = "{\n \"code\": 200001,\n \"info\": null,\n \"configFile\": null\n}";
	ck_assert_int_eq(polaris_reply_parse(nc, strlen(nc), &r, &err), 0);
	ck_assert_uint_eq(r.code, POLARIS_DATA_NO_CHANGE);
	ck_assert(!r.has_file);
	ck_assert_str_eq(r.info, "");
	polaris_reply_free(&r);
	/* ShenYu's delete: a release with empty content is still a release */
	const char *del = "{\"code\":200000,\"configFile\":{\"fileName\":\"f\",\"content\":\"\","
	                  "\"version\":\"3\"}}";
	ck_assert_int_eq(polaris_reply_parse(del, strlen(del), &r, &err), 0);
	ck_assert_ptr_nonnull(r.content);
	ck_assert_uint_eq(r.content_len, 0);
	ck_assert_uint_eq(r.version, 3);
	polaris_reply_free(&r);
}
END_TEST

START_TEST(a_watch_answer_names_one_file)
{
	/* ToSpecNotifyClientRequest: no content, the version and md5 of the release */
	const char *w =
	    "{\"code\":200000,\"info\":\"execute success\",\"configFile\":{"
	    "\"namespace\":\"default\",\"group\":\"shenyu\",\"fileName\":\"a.b\\u00e9c\","
	    "\"content\":null,\"version\":\"18446744073709551615\",\"md5\":\"m\",\"name\":\"\"}}";
	struct polaris_reply r;
	struct gw_err err = {0};
	ck_assert_int_eq(polaris_reply_parse(w, strlen(w), &r, &err), 0);
	ck_assert_str_eq(r.file_name, "a.b\xc3\xa9"
	                              "c"); /* \u escapes decoded to UTF-8 */
	ck_assert_ptr_null(r.content);
	ck_assert(r.version == UINT64_MAX);
	polaris_reply_free(&r);
	/* wrappers as objects, which Go's unmarshaler accepts too */
	const char *wrapped =
	    "{\"code\":{\"value\":200000},\"configFile\":{\"fileName\":{\"value\":"
	    "\"f\"},\"version\":{\"value\":9}}}";
	ck_assert_int_eq(polaris_reply_parse(wrapped, strlen(wrapped), &r, &err), 0);
	ck_assert_uint_eq(r.code, 200000);
	ck_assert_str_eq(r.file_name, "f");
	ck_assert_uint_eq(r.version, 9);
	polaris_reply_free(&r);
}
END_TEST

START_TEST(bodies_that_are_not_answers_are_refused)
{
	const char *bad[] = {
	    "",
	    "<html><body>502 Bad Gateway</body></html>",
	    "[]",
	    "{}",
	    "{\"code\":null}",
	    "{\"code\":\"abc\"}",
	    "{\"code\":-1}",
	    "{\"code\":4294967296}",
	    "{\"code\":200000,\"configFile\":[]}",
	    "{\"code\":200000,\"configFile\":{\"fileName\":7}}",
	    "{\"code\":200000,\"configFile\":{\"content\":{}}}",
	    "{\"code\":200000,\"configFile\":{\"version\":\"-1\"}}",
	    "{\"code\":200000,\"configFile\":{\"version\":\"18446744073709551616\"}}",
	    "{\"code\":200000,\"configFile\":{\"version\":\" 1\"}}",
	    "{\"code\":200000,\"code\":200001}",
	    "{\"code\":200000,\"info\":\"\xff\xfe\"}",
	    "{\"code\":200000,\"configFile\":{\"content\":\"\xc3\x28\"}}",
	    "{\"code\":200000,\"configFile\":{\"fileName\":\"a\\u0000b\"}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		struct polaris_reply r;
		struct gw_err err = {0};
		ck_assert_msg(polaris_reply_parse(bad[i], strlen(bad[i]), &r, &err) == -1, "%s",
		              bad[i]);
		ck_assert_msg(err.msg[0], "no message for %s", bad[i]);
		ck_assert_ptr_null(r.file_name);
		ck_assert_ptr_null(r.content);
	}
	/* deep nesting is refused, not recursed into */
	size_t depth = 100000, n = 0;
	char *deep = malloc(2 * depth + 64);
	n += (size_t)sprintf(deep, "{\"code\":200000,\"configFile\":");
	memset(deep + n, '[', depth);
	n += depth;
	memset(deep + n, ']', depth);
	n += depth;
	deep[n++] = '}';
	struct polaris_reply r;
	struct gw_err err = {0};
	ck_assert_int_eq(polaris_reply_parse(deep, n, &r, &err), -1);
	free(deep);
}
END_TEST

START_TEST(auth_codes)
{
	ck_assert(polaris_code_is_auth(401000));
	ck_assert(polaris_code_is_auth(401004));
	ck_assert(polaris_code_is_auth(403001));
	ck_assert(!polaris_code_is_auth(400202));
	ck_assert(!polaris_code_is_auth(200000));
	ck_assert(!polaris_code_is_auth(500000));
}
END_TEST

/* ---------------------------------------------------------------- requests */

START_TEST(the_read_path_is_percent_encoded)
{
	struct strbuf b = {0};
	ck_assert_int_eq(polaris_get_path(&b, "default", "shen yu", "ns.meta.1&2=é", 15), 0);
	char *p = strbuf_finish(&b);
	ck_assert_str_eq(p, "/config/v1/GetConfigFile?namespace=default&group=shen%20yu&fileName="
	                    "ns.meta.1%262%3D%C3%A9&version=0");
	free(p);
}
END_TEST

START_TEST(the_watch_body_names_every_file_with_its_version)
{
	struct strbuf b = {0};
	size_t at1, at2;
	polaris_watch_begin(&b);
	polaris_watch_add(&b, "default", "shenyu", "ns.plugin.list", 14, 7, &at1);
	polaris_watch_add(&b, "default", "shenyu", "a\"b\\c\n\x01", 7, 0, &at2);
	polaris_watch_end(&b);
	char *body = strbuf_finish(&b);
	/* the version's field is padded with spaces to a fixed width */
	ck_assert_str_eq(body,
	                 "{\"watch_files\":[{\"namespace\":\"default\",\"group\":\"shenyu\","
	                 "\"file_name\":\"ns.plugin.list\",\"version\":\"7\"                   "
	                 "},{\"namespace\":\"default\",\"group\":\"shenyu\",\"file_name\":"
	                 "\"a\\\"b\\\\c\\u000a\\u0001\",\"version\":\"0\"                   }]}");
	ck_assert(body[at1] == '7');
	ck_assert(body[at2] == '0');
	/* patched in place, the body is still JSON and says the new versions */
	polaris_watch_patch(body, at1, UINT64_MAX);
	polaris_watch_patch(body, at2, 42);
	json_error_t je;
	json_t *doc = json_loads(body, 0, &je);
	ck_assert_msg(doc != NULL, "%s", je.text);
	json_t *files = json_object_get(doc, "watch_files");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(files, 0), "version")),
	                 "18446744073709551615");
	json_t *f = json_array_get(files, 1);
	ck_assert_str_eq(json_string_value(json_object_get(f, "version")), "42");
	ck_assert_str_eq(json_string_value(json_object_get(f, "file_name")), "a\"b\\c\n\x01");
	json_decref(doc);
	free(body);
	/* an empty list is still valid JSON (the source never sends one: Polaris refuses it) */
	polaris_watch_begin(&b);
	polaris_watch_end(&b);
	body = strbuf_finish(&b);
	ck_assert_str_eq(body, "{\"watch_files\":[]}");
	free(body);
}
END_TEST

/* ---------------------------------------------------------------- versions */

START_TEST(versions_are_kept_until_a_full_read_drops_them)
{
	struct polaris_versions v = {0};
	ck_assert_uint_eq(polaris_versions_get(&v, "a", 1), 0);
	ck_assert_int_eq(polaris_versions_set(&v, "a", 1, 5), 0);
	ck_assert_int_eq(polaris_versions_set(&v, "ab", 2, 6), 0);
	ck_assert_uint_eq(polaris_versions_get(&v, "a", 1), 5);
	ck_assert_uint_eq(polaris_versions_get(&v, "ab", 2), 6);
	ck_assert_int_eq(polaris_versions_set(&v, "a", 1, 9), 0);
	ck_assert_uint_eq(polaris_versions_get(&v, "a", 1), 9);
	ck_assert_int_eq(polaris_versions_set(&v, "ab", 2, 0), 0);
	ck_assert_uint_eq(polaris_versions_get(&v, "ab", 2), 0);
	for (int i = 0; i < 1000; i++) {
		char k[16];
		int n = snprintf(k, sizeof k, "k%d", i);
		ck_assert_int_eq(polaris_versions_set(&v, k, (size_t)n, (uint64_t)i + 1), 0);
	}
	/* a place belongs to one body generation */
	uint32_t slot = 99;
	ck_assert_int_eq(polaris_versions_place(&v, "a", 1, 3, 2, 120), 0);
	ck_assert_uint_eq(polaris_versions_at(&v, "a", 1, 3, &slot), 120);
	ck_assert_uint_eq(slot, 2);
	ck_assert(polaris_versions_at(&v, "a", 1, 4, &slot) == (size_t)-1);
	ck_assert(polaris_versions_at(&v, "k1", 2, 3, &slot) == (size_t)-1);
	ck_assert(polaris_versions_at(&v, "zz", 2, 3, &slot) == (size_t)-1);
	/* a full read sets a and k7 again: everything else goes */
	polaris_versions_mark(&v);
	polaris_versions_set(&v, "a", 1, 10);
	polaris_versions_set(&v, "k7", 2, 8);
	polaris_versions_prune(&v);
	ck_assert_uint_eq(polaris_versions_count(&v), 2);
	ck_assert_uint_eq(polaris_versions_get(&v, "a", 1), 10);
	ck_assert_uint_eq(polaris_versions_get(&v, "k7", 2), 8);
	ck_assert_uint_eq(polaris_versions_get(&v, "k8", 2), 0);
	polaris_versions_free(&v);
}
END_TEST

/* ---------------------------------------------------------------- polaris: */

static struct cfg *load(const char *text, struct gw_err *err)
{
	struct cfg *c = NULL;
	const struct cfg_section *sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(sections); /* as main hands them to the loader */
	if (cfg_parse("test.yaml", text, strlen(text), sections, &c, err) != 0)
		return NULL;
	return c;
}

START_TEST(section_defaults_and_the_layout_prefix)
{
	struct gw_err err = {0};
	struct cfg *c = load("polaris:\n  servers: [\"http://127.0.0.1:8090/\"]\n", &err);
	ck_assert_msg(c != NULL, "%s", err.msg);
	const struct polaris_config *p = polaris_config(c);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(c->section, "polaris");
	ck_assert_str_eq(p->namespace, "default");
	ck_assert_str_eq(p->file_group, "shenyu");
	ck_assert_str_eq(p->layout_name, "namespaced");
	ck_assert_int_eq(p->layout, NODE_LAYOUT_NODES);
	ck_assert_str_eq(p->prefix, "649330b6-c2d7-4edc-be8e-8a54df9eb385.");
	ck_assert_str_eq(p->kv.servers[0], "http://127.0.0.1:8090");
	ck_assert_str_eq(p->kv.label, "polaris://127.0.0.1:8090/default/shenyu");
	ck_assert_int_eq(p->kv.settle_ms, 100);
	ck_assert_int_eq(p->kv.resync_interval_ms, 600000);
	ck_assert_ptr_null(p->token);
	cfg_free(c);

	c = load("polaris:\n  servers: http://a:1,https://b:2\n  namespace: prod\n"
	         "  file_group: gw\n  layout: plain\n  token: s3cret\n",
	         &err);
	ck_assert_msg(c != NULL, "%s", err.msg);
	p = polaris_config(c);
	ck_assert_str_eq(p->prefix, "");
	ck_assert_str_eq(p->token, "s3cret");
	ck_assert_str_eq(p->kv.label, "polaris://a:1,b:2/prod/gw");
	const char *secrets[8];
	size_t n = cfg_secrets(c, secrets, 8);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		found |= strcmp(secrets[i], "s3cret") == 0;
	ck_assert_msg(found, "the token is not among the secrets the log masks");
	cfg_free(c);

	c = load("polaris:\n  servers: [\"http://a:1\"]\n  layout: legacy\n", &err);
	ck_assert_msg(c != NULL, "%s", err.msg);
	ck_assert_int_eq(polaris_config(c)->layout, NODE_LAYOUT_WHOLE);
	cfg_free(c);
}
END_TEST

static void refused(const char *text, const char *words)
{
	struct gw_err err = {0};
	struct cfg *c = load(text, &err);
	ck_assert_msg(c == NULL, "accepted: %s", text);
	ck_assert_msg(strstr(err.msg, words) != NULL, "'%s' not in: %s", words, err.msg);
}

START_TEST(section_refusals)
{
	refused("polaris:\n  namespace: x\n", "polaris.servers");
	refused("polaris:\n  servers: [\"127.0.0.1:8090\"]\n", "not an http:// or https:// URL");
	refused("polaris:\n  servers: [\"http://u:p@h:8090\"]\n", "credentials in the URL");
	refused("polaris:\n  servers: [\"http://h:8090/config\"]\n", "without a path");
	refused("polaris:\n  servers: [\"http://h\"]\n", "no host:port");
	refused("polaris:\n  servers: [\"http://h:1\", \"http://h:1\"]\n", "duplicate");
	refused("polaris:\n  servers: [\"http://h:1\"]\n  layout: \"2.6.0\"\n",
	        "expected namespaced");
	refused("polaris:\n  servers: [\"http://h:1\"]\n  namespace: \"\"\n", "must not be empty");
	refused("polaris:\n  servers: [\"http://h:1\"]\n  token: a\n  token_file: /x\n",
	        "cannot be used together");
	refused("polaris:\n  servers: [\"http://h:1\"]\n  read_timeout: 20s\n", "above 30s");
	refused("polaris:\n  servers: [\"http://h:1\"]\n  groups: [PLUGIN, AI_PROXY_API_KEY]\n",
	        "AI_PROXY_API_KEY is never published to Polaris");
	refused("polaris:\n  servers: [\"http://h:1\"]\n  file_groop: x\n", "file_group");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("polaris");
	TCase *tc = tcase_create("polaris");
	tcase_add_test(tc, a_released_file_is_read_whole);
	tcase_add_test(tc, not_found_no_change_and_empty_content);
	tcase_add_test(tc, a_watch_answer_names_one_file);
	tcase_add_test(tc, bodies_that_are_not_answers_are_refused);
	tcase_add_test(tc, auth_codes);
	tcase_add_test(tc, the_read_path_is_percent_encoded);
	tcase_add_test(tc, the_watch_body_names_every_file_with_its_version);
	tcase_add_test(tc, versions_are_kept_until_a_full_read_drops_them);
	tcase_add_test(tc, section_defaults_and_the_layout_prefix);
	tcase_add_test(tc, section_refusals);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
