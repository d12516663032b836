/*
 * Unit tests of model.c: admin replies -> typed group versions. Good replies (including
 * the ShenYu project's own fixture), every kind of refusal, raw JSON kept byte-exact.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "abiview.h"
#include "source/http/reply.h"
#include "model/groups.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static const enum gw_group classic[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE,
                                        GW_GROUP_APP_AUTH, GW_GROUP_META_DATA};

/* The fetch reply's parser (check_admin tests the reasons it leaves in err->kind). */
static int fetch(const char *body, size_t len, const enum gw_group *want, size_t n_want,
                 const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                 struct group_data *out[GW_GROUP_COUNT], struct gw_err *err)
{
	return reply_parse_fetch(body, len, want, n_want, source, prev, out, err);
}

static int parse(const char *body, struct group_data *out[GW_GROUP_COUNT], struct gw_err *err)
{
	return fetch(body, strlen(body), classic, 5, "http://a", NULL, out, err);
}

static void unref_all(struct group_data *out[GW_GROUP_COUNT])
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(out[g]);
}

START_TEST(fixture_parses)
{
	size_t len;
	char *body = slurp(FIXTURES_DIR "/shenyu/mock_configs_fetch_response.json", &len);
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_msg(fetch(body, len, classic, 5, "http://a", NULL, out, &err) == 0, "%s",
	              err.msg);
	struct group_data *p = out[GW_GROUP_PLUGIN];
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p->md5, "ff9f3045505109e66c403fcc6a7a9a12");
	ck_assert_int_eq(p->last_modify_time, 1606982496917LL);
	ck_assert_uint_eq(p->n_items, 8);
	ck_assert_str_eq(abi_item(p, 0)->key, "sign"); /* plugins are keyed by name (keys.c) */
	ck_assert_str_eq(abi_item(p, 0)->plugin->id, "1");
	ck_assert_str_eq(abi_item(p, 0)->plugin->name, "sign");
	ck_assert_ptr_null(abi_item(p, 0)->plugin->config);
	ck_assert_str_eq(abi_item(p, 0)->plugin->role, "0");
	ck_assert_int_eq(abi_item(p, 0)->plugin->enabled, GW_FALSE);
	ck_assert_int_eq(abi_item(p, 0)->plugin->sort, GW_INT_UNSET);
	ck_assert_str_eq(abi_item(p, 1)->plugin->config, "{\"model\":\"black\"}");
	ck_assert_int_eq(abi_item(p, 4)->plugin->enabled, GW_TRUE);
	/* raw text is the admin's, byte for byte (escapes included) */
	ck_assert_ptr_nonnull(
	    strstr(p->items[1].json, "\"config\": \"{\\\"model\\\":\\\"black\\\"}\""));
	ck_assert_uint_eq(out[GW_GROUP_RULE]->n_items, 0);
	ck_assert_str_eq(out[GW_GROUP_RULE]->md5, "d751713988987e9331980363e24189ce");
	ck_assert_str_eq(p->server, "http://a");
	unref_all(out);
	free(body);
}
END_TEST

static const char *wrap_rule = "{\"code\":200,\"message\":\"ok\",\"data\":{"
                               "\"PLUGIN\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]},"
                               "\"SELECTOR\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]},"
                               "\"APP_AUTH\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]},"
                               "\"META_DATA\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]},"
                               "\"RULE\":{\"md5\":\"b\",\"lastModifyTime\":2,\"data\":[%s]}}}";

static int parse_rules(const char *items, struct group_data *out[GW_GROUP_COUNT],
                       struct gw_err *err)
{
	char body[8192];
	snprintf(body, sizeof body, wrap_rule, items);
	return parse(body, out, err);
}

START_TEST(typed_rule_with_conditions_and_unicode)
{
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	const char *item =
	    "{\"id\":\"r1\",\"name\":\"限流-規則 "
	    "café\",\"pluginName\":\"divide\",\"selectorId\":\"s1\","
	    "\"matchMode\":0,\"sort\":7,\"enabled\":true,\"loged\":null,\"handle\":\"{\\\"x\\\":1}"
	    "\","
	    "\"conditionDataList\":[{\"paramType\":\"uri\",\"operator\":\"match\",\"paramName\":\"/"
	    "\","
	    "\"paramValue\":\"/http/\\u00e9t\\u00e9/**\"}],\"unknownField\":{\"kept\":[1,2]}}";
	ck_assert_msg(parse_rules(item, out, &err) == 0, "%s", err.msg);
	/* checked, but its item of the ABI (and view) is made only for a subscriber */
	ck_assert_ptr_null(out[GW_GROUP_RULE]->abi_items);
	const struct gw_item *it = abi_item(out[GW_GROUP_RULE], 0);
	ck_assert_str_eq(it->key, "r1");
	ck_assert_str_eq(it->name, "限流-規則 café");
	ck_assert_str_eq(it->rule->selector_id, "s1");
	ck_assert_int_eq(it->rule->sort, 7);
	ck_assert_int_eq(it->rule->logged, GW_UNSET);
	ck_assert_uint_eq(it->rule->n_conditions, 1);
	ck_assert_str_eq(it->rule->conditions[0].param_value, "/http/été/**");
	ck_assert_uint_eq(it->rule->n_before_conditions, 0);
	ck_assert_str_eq(it->json, item); /* exact, escapes and unknown fields kept */
	ck_assert_uint_eq(it->json_len, strlen(item));
	unref_all(out);
}
END_TEST

START_TEST(wrong_field_type_names_group_item_field)
{
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_int_eq(
	    parse_rules("{\"id\":\"ok\"},{\"id\":\"r2\",\"enabled\":\"yes\"}", out, &err), -1);
	ck_assert_ptr_nonnull(
	    strstr(err.msg,
	           "group RULE item 1 (key 'r2'): field 'enabled': expected boolean, got string"));
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		ck_assert_ptr_null(out[g]);
	ck_assert_int_eq(parse_rules("{\"id\":\"r\",\"conditionDataList\":[\"x\"]}", out, &err),
	                 -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "conditionDataList"));
	ck_assert_int_eq(parse_rules("{\"id\":\"r\",\"sort\":1.5}", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "'sort': expected integer"));
}
END_TEST

START_TEST(missing_key_and_duplicate_key_refused)
{
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_int_eq(parse_rules("{\"name\":\"nokey\"}", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "missing key field 'id'"));
	ck_assert_int_eq(parse_rules("{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":\"a\"}", out, &err),
	                 -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "duplicate key 'a'"));
	ck_assert_int_eq(parse_rules("7", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "expected an object"));
}
END_TEST

START_TEST(envelope_refusals)
{
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_int_eq(parse("{\"code\":500,\"message\":\"group param invalid\"}", out, &err),
	                 -1);
	ck_assert_str_eq(err.msg, "admin code 500: group param invalid");
	ck_assert_int_eq(parse("{\"code\":200,\"message\":\"ok\"}", out, &err), -1);
	ck_assert_str_eq(err.msg, "reply has no 'data'");
	ck_assert_int_eq(parse("{\"code\":200,\"data\":[]}", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "'data' must be an object"));
	ck_assert_int_eq(parse("{\"code\":\"200\",\"data\":{}}", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "integer 'code'"));
	ck_assert_int_eq(
	    parse("{\"code\":200,\"data\":{\"PLUGIN\":{\"md5\":\"a\",\"lastM", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "invalid JSON"));
	ck_assert_int_eq(parse("", out, &err), -1);
	ck_assert_int_eq(parse("[1]", out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a JSON object"));
}
END_TEST

START_TEST(config_data_refusals)
{
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	/* a requested group missing */
	ck_assert_int_eq(parse("{\"code\":200,\"data\":{\"PLUGIN\":{\"md5\":\"a\","
	                       "\"lastModifyTime\":1,\"data\":[]}}}",
	                       out, &err),
	                 -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "missing from the reply"));
	char body[1024];
	snprintf(body, sizeof body, wrap_rule, "");
	char *p = strstr(body, "\"lastModifyTime\":2");
	memcpy(p, "\"lastModifyTime\":\"", 18); /* now a string: wrong type */
	ck_assert_int_eq(parse(body, out, &err), -1);
	snprintf(body, sizeof body,
	         "{\"code\":200,\"data\":{\"PLUGIN\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":{"
	         "}}}}");
	ck_assert_int_eq(fetch(body, strlen(body), classic, 1, "s", NULL, out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "group PLUGIN: 'data' must be an array, got object"));
	/* invalid UTF-8 */
	snprintf(body, sizeof body, wrap_rule, "{\"id\":\"\xff\xfe\"}");
	ck_assert_int_eq(parse(body, out, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "invalid JSON"));
}
END_TEST

START_TEST(newer_groups_raw_with_keys)
{
	const enum gw_group want[] = {GW_GROUP_DISCOVER_UPSTREAM, GW_GROUP_PROXY_SELECTOR};
	const char *body =
	    "{\"code\":200,\"data\":{\"DISCOVER_UPSTREAM\":{\"md5\":\"x\",\"lastModifyTime\":5,"
	    "\"data\":[{\"selectorId\":\"s9\",\"upstreamDataList\":[]}]},"
	    "\"PROXY_SELECTOR\":{\"md5\":\"y\",\"lastModifyTime\":6,\"data\":[{\"id\":\"p1\","
	    "\"name\":\"tcp\"}]}}}";
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_msg(fetch(body, strlen(body), want, 2, "s", NULL, out, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(abi_item(out[GW_GROUP_DISCOVER_UPSTREAM], 0)->key, "s9");
	ck_assert_ptr_null(abi_item(out[GW_GROUP_DISCOVER_UPSTREAM], 0)->rule);
	ck_assert_str_eq(abi_item(out[GW_GROUP_PROXY_SELECTOR], 0)->name, "tcp");
	ck_assert_ptr_null(out[GW_GROUP_PLUGIN]);
	unref_all(out);

	/* an item without its key cannot be updated or deleted later: the version is refused */
	const char *keyless =
	    "{\"code\":200,\"data\":{\"DISCOVER_UPSTREAM\":{\"md5\":\"x\",\"lastModifyTime\":5,"
	    "\"data\":[{\"selectorId\":\"s9\"},{\"weird\":true}]}}}";
	ck_assert_int_eq(fetch(keyless, strlen(keyless), want, 1, "s", NULL, out, &err), -1);
	ck_assert_msg(strstr(err.msg, "item 1: missing key field 'selectorId'"), "%s", err.msg);
}
END_TEST

/* Parse one group of `items` (JSON array text); the keys joined with '|'. */
static char *keys_of(enum gw_group g, const char *items)
{
	char body[4096];
	snprintf(
	    body, sizeof body,
	    "{\"code\":200,\"data\":{\"%s\":{\"md5\":\"m\",\"lastModifyTime\":1,\"data\":%s}}}",
	    gw_group_name(g), items);
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_msg(fetch(body, strlen(body), &g, 1, "s", NULL, out, &err) == 0, "%s: %s",
	              gw_group_name(g), err.msg);
	static char joined[1024];
	joined[0] = '\0';
	for (size_t i = 0; i < out[g]->n_items; i++) {
		if (i)
			strcat(joined, "|");
		strcat(joined, abi_item(out[g], i)->key);
	}
	unref_all(out);
	return joined;
}

START_TEST(each_group_is_keyed_as_shenyu_caches_key_it)
{
	/* Several items sharing every field that is not the key: all kept, one key each. */
	ck_assert_str_eq(keys_of(GW_GROUP_PLUGIN, "[{\"id\":\"1\",\"name\":\"divide\"},"
	                                          "{\"id\":\"1\",\"name\":\"waf\"}]"),
	                 "divide|waf");
	ck_assert_str_eq(keys_of(GW_GROUP_SELECTOR,
	                         "[{\"id\":\"a\",\"pluginName\":\"divide\",\"name\":\"s\"},"
	                         "{\"id\":\"b\",\"pluginName\":\"divide\",\"name\":\"s\"}]"),
	                 "a|b");
	ck_assert_str_eq(keys_of(GW_GROUP_RULE,
	                         "[{\"id\":\"a\",\"selectorId\":\"s\",\"name\":\"r\"},"
	                         "{\"id\":\"b\",\"selectorId\":\"s\",\"name\":\"r\"}]"),
	                 "a|b");
	ck_assert_str_eq(keys_of(GW_GROUP_APP_AUTH, "[{\"appKey\":\"k1\",\"appSecret\":\"x\"},"
	                                            "{\"appKey\":\"k2\",\"appSecret\":\"x\"}]"),
	                 "k1|k2");
	ck_assert_str_eq(keys_of(GW_GROUP_META_DATA, "[{\"id\":\"m1\",\"path\":\"/p\"},"
	                                             "{\"id\":\"m2\",\"path\":\"/p\"}]"),
	                 "m1|m2");
	ck_assert_str_eq(keys_of(GW_GROUP_PROXY_SELECTOR,
	                         "[{\"id\":\"p1\",\"name\":\"tcp\",\"pluginName\":\"tcp\"},"
	                         "{\"id\":\"p2\",\"name\":\"tcp\",\"pluginName\":\"tcp\"}]"),
	                 "p1|p2");
	ck_assert_str_eq(keys_of(GW_GROUP_DISCOVER_UPSTREAM,
	                         "[{\"selectorId\":\"s1\",\"pluginName\":\"divide\"},"
	                         "{\"selectorId\":\"s2\",\"pluginName\":\"divide\"}]"),
	                 "s1|s2");
	/* several API keys on one selector, and one proxy key on several selectors (the bug a
	 * soak test found: keyed by selectorId alone, such a version was a "duplicate key") */
	ck_assert_str_eq(
	    keys_of(GW_GROUP_AI_PROXY_API_KEY,
	            "[{\"selectorId\":\"s1\",\"proxyApiKey\":\"k1\",\"realApiKey\":\"r\"},"
	            "{\"selectorId\":\"s1\",\"proxyApiKey\":\"k2\",\"realApiKey\":\"r\"},"
	            "{\"selectorId\":\"s2\",\"proxyApiKey\":\"k1\",\"realApiKey\":\"r\"}]"),
	    "s1::k1|s1::k2|s2::k1");
	/* and a true duplicate is still refused */
	char body[1024];
	snprintf(body, sizeof body,
	         "{\"code\":200,\"data\":{\"AI_PROXY_API_KEY\":{\"md5\":\"m\",\"lastModifyTime\":1,"
	         "\"data\":[{\"selectorId\":\"s1\",\"proxyApiKey\":\"k1\"},"
	         "{\"selectorId\":\"s1\",\"proxyApiKey\":\"k1\",\"enabled\":false}]}}}");
	enum gw_group g = GW_GROUP_AI_PROXY_API_KEY;
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_int_eq(fetch(body, strlen(body), &g, 1, "s", NULL, out, &err), -1);
	ck_assert_msg(strstr(err.msg, "s1::k1"), "%s", err.msg);
	/* a composite key's second field missing is named */
	snprintf(body, sizeof body,
	         "{\"code\":200,\"data\":{\"AI_PROXY_API_KEY\":{\"md5\":\"m\",\"lastModifyTime\":1,"
	         "\"data\":[{\"selectorId\":\"s1\"}]}}}");
	ck_assert_int_eq(fetch(body, strlen(body), &g, 1, "s", NULL, out, &err), -1);
	ck_assert_msg(strstr(err.msg, "missing key field 'proxyApiKey' (its key is "
	                              "selectorId::proxyApiKey)"),
	              "%s", err.msg);
}
END_TEST

START_TEST(group_document_roundtrip)
{
	const char *doc =
	    "{\"group\": \"APP_AUTH\", \"md5\": \"m\", \"lastModifyTime\": 9, \"data\": ["
	    "{\"appKey\":\"k1\",\"appSecret\":\"s\",\"open\":false,"
	    "\"paramDataList\":[{\"appName\":\"a\",\"appParam\":\"p\"}],"
	    "\"pathDataList\":[{\"appName\":\"a\",\"path\":\"/x\",\"enabled\":true}]}]}";
	struct group_data *gd;
	struct gw_err err = {0};
	ck_assert_msg(
	    model_parse_group(GW_GROUP_APP_AUTH, doc, strlen(doc), "snapshot", &gd, &err) == 0,
	    "%s", err.msg);
	abi_typed(gd);
	ck_assert_str_eq(abi_item(gd, 0)->app_auth->app_key, "k1");
	ck_assert_str_eq(abi_item(gd, 0)->app_auth->paths[0].path, "/x");
	ck_assert_int_eq(abi_item(gd, 0)->app_auth->paths[0].enabled, GW_TRUE);
	ck_assert_str_eq(abi_item(gd, 0)->app_auth->params[0].app_param, "p");
	ck_assert_ptr_eq(group_data_find(gd, "k1"), &gd->items[0]);
	ck_assert_ptr_null(group_data_find(gd, "k2"));
	group_data_unref(gd);
	ck_assert_int_eq(model_parse_group(GW_GROUP_RULE, doc, strlen(doc), "snapshot", &gd, &err),
	                 -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "says it is group APP_AUTH"));
}
END_TEST

START_TEST(unchanged_items_are_shared_changed_ones_parsed)
{
	const char *v1 =
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":["
	    "{\"id\":\"r1\",\"name\":\"one\",\"conditionDataList\":[{\"paramValue\":\"/a\"}]},"
	    "{\"id\":\"r2\",\"name\":\"two\",\"sort\":2},{\"id\":\"r3\",\"name\":\"three\"}]}}}";
	const char *v2 =
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"b\",\"lastModifyTime\":2,\"data\":["
	    "{\"id\":\"r1\",\"name\":\"one\",\"conditionDataList\":[{\"paramValue\":\"/a\"}]},"
	    "{\"id\":\"r2\",\"name\":\"TWO\",\"sort\":3},{\"id\":\"r3\",\"name\":\"three\"}]}}}";
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct group_data *a[GW_GROUP_COUNT], *b[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_int_eq(fetch(v1, strlen(v1), rule, 1, "s", NULL, a, &err), 0);
	abi_typed(a[GW_GROUP_RULE]);
	ck_assert_msg(fetch(v2, strlen(v2), rule, 1, "s", a, b, &err) == 0, "%s", err.msg);
	struct group_data *old = a[GW_GROUP_RULE], *new = abi_typed(b[GW_GROUP_RULE]);
	ck_assert_uint_eq(new->n_items, 3);
	ck_assert_str_eq(abi_item(new, 1)->rule->name, "TWO"); /* changed: parsed */
	ck_assert_int_eq(abi_item(new, 1)->rule->sort, 3);
	ck_assert_str_eq(new->md5, "b");
	/* unchanged items are the old version's items, not copies; the changed one is new */
	ck_assert_ptr_eq(new->items[0].json, old->items[0].json);
	ck_assert_ptr_eq(abi_item(new, 0)->rule, abi_item(old, 0)->rule);
	ck_assert_ptr_ne(new->items[1].json, old->items[1].json);
	/* the new version holds the pool they live in: the old version can go */
	group_data_unref(old);
	ck_assert_str_eq(abi_item(new, 0)->key, "r1");
	ck_assert_str_eq(abi_item(new, 0)->name, "one");
	ck_assert_str_eq(abi_item(new, 0)->rule->conditions[0].param_value, "/a");
	ck_assert_ptr_eq(abi_item(new, 0)->name, abi_item(new, 0)->rule->name);
	ck_assert_str_eq(new->items[2].json, "{\"id\":\"r3\",\"name\":\"three\"}");
	ck_assert_ptr_eq(group_data_find(new, "r3"), &new->items[2]);
	group_data_unref(new);
}
END_TEST

/* Builds a RULE fetch reply with the given ids in order. */
static char *rules_reply(const char *md5, int lmt, const int *ids, size_t n)
{
	size_t cap = 128 + n * 48;
	char *b = malloc(cap);
	int off = snprintf(b, cap,
	                   "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"%s\",\"lastModifyTime\":%d,"
	                   "\"data\":[",
	                   md5, lmt);
	for (size_t i = 0; i < n; i++)
		off += snprintf(b + off, cap - (size_t)off, "%s{\"id\":\"r%d\",\"name\":\"n%d\"}",
		                i ? "," : "", ids[i], ids[i]);
	snprintf(b + off, cap - (size_t)off, "]}}}");
	return b;
}

START_TEST(carry_over_with_growth_reorder_and_duplicates)
{
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct gw_err err = {0};
	int ids[200];
	for (int i = 0; i < 200; i++)
		ids[i] = i;
	char *b1 = rules_reply("a", 1, ids, 3);
	struct group_data *v1[GW_GROUP_COUNT], *v2[GW_GROUP_COUNT], *v3[GW_GROUP_COUNT];
	ck_assert_int_eq(fetch(b1, strlen(b1), rule, 1, "s", NULL, v1, &err), 0);
	/* many more items than the held version's count + slack: the array grows */
	char *b2 = rules_reply("b", 2, ids, 200);
	ck_assert_msg(fetch(b2, strlen(b2), rule, 1, "s", v1, v2, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(v2[GW_GROUP_RULE]->n_items, 200);
	ck_assert_str_eq(abi_item(v2[GW_GROUP_RULE], 199)->key, "r199");
	ck_assert_ptr_eq(group_data_find(v2[GW_GROUP_RULE], "r150"),
	                 &v2[GW_GROUP_RULE]->items[150]);
	/* reordered: the index is rebuilt, lookups still right */
	int rev[200];
	for (int i = 0; i < 200; i++)
		rev[i] = 199 - i;
	char *b3 = rules_reply("c", 3, rev, 200);
	ck_assert_int_eq(fetch(b3, strlen(b3), rule, 1, "s", v2, v3, &err), 0);
	ck_assert_ptr_eq(group_data_find(v3[GW_GROUP_RULE], "r0"), &v3[GW_GROUP_RULE]->items[199]);
	ck_assert_ptr_eq(group_data_find(v3[GW_GROUP_RULE], "r199"), &v3[GW_GROUP_RULE]->items[0]);
	/* a duplicate introduced next to carried-over items is still refused */
	int dup[3] = {0, 1, 0};
	char *b4 = rules_reply("d", 4, dup, 3);
	struct group_data *v4[GW_GROUP_COUNT];
	ck_assert_int_eq(fetch(b4, strlen(b4), rule, 1, "s", v1, v4, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "duplicate key 'r0'"));
	/* the same keys in the same places: the held index is reused and still right */
	char *b5 = rules_reply("e", 5, ids, 3);
	struct group_data *v5[GW_GROUP_COUNT];
	ck_assert_int_eq(fetch(b5, strlen(b5), rule, 1, "s", v1, v5, &err), 0);
	for (int i = 0; i < 3; i++) {
		char k[8];
		snprintf(k, sizeof k, "r%d", i);
		ck_assert_ptr_eq(group_data_find(v5[GW_GROUP_RULE], k),
		                 &v5[GW_GROUP_RULE]->items[i]);
	}
	unref_all(v1);
	unref_all(v2);
	unref_all(v3);
	unref_all(v5);
	free(b1);
	free(b2);
	free(b3);
	free(b4);
	free(b5);
}
END_TEST

/* Two versions hold the same items: keys, text and typed fields, in the same order. */
static void assert_same_items(struct group_data *a, struct group_data *b)
{
	ck_assert_uint_eq(a->n_items, b->n_items);
	for (size_t i = 0; i < a->n_items; i++) {
		const struct gw_item *x = abi_item(a, i), *y = abi_item(b, i);
		ck_assert_str_eq(x->key, y->key);
		ck_assert_str_eq(x->json, y->json);
		ck_assert_uint_eq(x->json_len, y->json_len);
		ck_assert_str_eq(x->rule->name, y->rule->name);
		ck_assert_ptr_eq(x->name, x->rule->name);
		ck_assert_ptr_eq(group_data_find(a, x->key), &a->items[i]);
	}
}

/* Each edit of the held list (insertions, removals, changes, moves, at either end and in
 * the middle) gives, with the held version to share from, exactly the version a fresh
 * parse gives; and the shared version outlives the one it shares with. */
START_TEST(shared_items_give_the_version_a_fresh_parse_gives)
{
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct gw_err err = {0};
	static const int lists[][8] = {
	    {0, 1, 2, 3, 4, 5, 6, 7}, /* the held list */
	    {9, 0, 1, 2, 3, 4, 5, 6}, /* inserted at the front, the last removed */
	    {0, 1, 3, 4, 5, 6, 7, 8}, /* one removed in the middle, one appended */
	    {0, 1, 2, 9, 8, 5, 6, 7}, /* two replaced in the middle */
	    {7, 6, 5, 4, 3, 2, 1, 0}, /* reversed */
	    {0, 2, 1, 3, 4, 6, 5, 7}, /* neighbours swapped */
	    {1, 2, 3, 4, 5, 6, 7, 0}, /* the first moved to the end */
	};
	char *b0 = rules_reply("a", 1, lists[0], 8);
	for (size_t l = 1; l < sizeof lists / sizeof lists[0]; l++) {
		struct group_data *held[GW_GROUP_COUNT], *shared[GW_GROUP_COUNT],
		    *fresh[GW_GROUP_COUNT];
		ck_assert_int_eq(fetch(b0, strlen(b0), rule, 1, "s", NULL, held, &err), 0);
		char *b = rules_reply("b", 2, lists[l], 8);
		ck_assert_msg(fetch(b, strlen(b), rule, 1, "s", held, shared, &err) == 0, "%s",
		              err.msg);
		ck_assert_int_eq(fetch(b, strlen(b), rule, 1, "s", NULL, fresh, &err), 0);
		unref_all(held);
		assert_same_items(shared[GW_GROUP_RULE], fresh[GW_GROUP_RULE]);
		unref_all(shared);
		unref_all(fresh);
		free(b);
	}
	free(b0);
}
END_TEST

/* A long run of changes, each to another item, never lets a version hold more than
 * GD_MAX_POOLS pools (then one compacting copy starts over), and every version stays
 * whole after all the versions before it are gone. */
START_TEST(a_long_run_of_changes_keeps_the_stores_bounded)
{
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct gw_err err = {0};
	enum { N = 300 };
	int ids[N];
	for (int i = 0; i < N; i++)
		ids[i] = i;
	char *b = rules_reply("a", 1, ids, N);
	struct group_data *held[GW_GROUP_COUNT], *next[GW_GROUP_COUNT];
	ck_assert_int_eq(fetch(b, strlen(b), rule, 1, "s", NULL, held, &err), 0);
	free(b);
	size_t most = 0;
	for (int round = 0; round < 2 * GD_MAX_POOLS; round++) {
		ids[round % N] = 1000 + round; /* another item each time */
		b = rules_reply("b", 2 + round, ids, N);
		ck_assert_msg(fetch(b, strlen(b), rule, 1, "s", held, next, &err) == 0, "%s",
		              err.msg);
		free(b);
		unref_all(held);
		struct group_data *gd = next[GW_GROUP_RULE];
		ck_assert_uint_le(gd->n_pools, GD_MAX_POOLS);
		if (gd->n_pools > most)
			most = gd->n_pools;
		char k[16], name[16];
		snprintf(k, sizeof k, "r%d", 1000 + round);
		snprintf(name, sizeof name, "n%d", 1000 + round);
		ck_assert_ptr_eq(group_data_find(gd, k), &gd->items[round % N]);
		ck_assert_str_eq(abi_item(gd, round % N)->rule->name, name);
		memcpy(held, next, sizeof held);
	}
	ck_assert_uint_gt(most, 2); /* it did share, over many pools */
	unref_all(held);
}
END_TEST

/* A full parse keeps the reply instead of copying it: the items' raw JSON points into the
 * body, NUL-terminated, and the body lives as long as a version uses it; a change shares
 * those items and gives its own body back to the caller. */
START_TEST(a_full_parse_keeps_the_reply_a_change_gives_it_back)
{
	const enum gw_group rule[] = {GW_GROUP_RULE};
	struct gw_err err = {0};
	int ids[3] = {1, 2, 3};
	char *body = rules_reply("a", 1, ids, 3);
	const char *start = body, *stop = body + strlen(body);
	struct group_data *v1[GW_GROUP_COUNT], *v2[GW_GROUP_COUNT];
	ck_assert_int_eq(reply_parse_fetch_adopt(&body, strlen(body), rule, 1, "s", NULL, v1, &err),
	                 0);
	ck_assert_ptr_null(body); /* the version keeps it */
	struct group_data *gd = v1[GW_GROUP_RULE];
	for (size_t i = 0; i < 3; i++) {
		ck_assert(gd->items[i].json >= start && gd->items[i].json < stop);
		ck_assert_uint_eq(strlen(gd->items[i].json), abi_item(gd, i)->json_len);
	}
	ck_assert_str_eq(gd->items[2].json, "{\"id\":\"r3\",\"name\":\"n3\"}");

	ids[1] = 9;
	body = rules_reply("b", 2, ids, 3);
	char *mine = body;
	ck_assert_int_eq(reply_parse_fetch_adopt(&body, strlen(body), rule, 1, "s", v1, v2, &err),
	                 0);
	ck_assert_ptr_eq(body, mine); /* shared, not kept: still the caller's */
	free(body);
	unref_all(v1); /* the first body now lives on in v2's shared items only */
	gd = abi_typed(v2[GW_GROUP_RULE]);
	ck_assert_str_eq(gd->items[0].json, "{\"id\":\"r1\",\"name\":\"n1\"}");
	ck_assert_str_eq(abi_item(gd, 1)->rule->name, "n9");
	ck_assert_str_eq(gd->items[2].json, "{\"id\":\"r3\",\"name\":\"n3\"}");
	unref_all(v2);

	/* a refused reply is the caller's again, unchanged */
	body = strdup("{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,"
	              "\"data\":[{\"id\":\"x\"},{\"id\":\"x\"}]}}}");
	mine = body;
	char *copy = strdup(body);
	ck_assert_int_eq(reply_parse_fetch_adopt(&body, strlen(body), rule, 1, "s", NULL, v1, &err),
	                 -1);
	ck_assert_ptr_eq(body, mine);
	ck_assert_str_eq(body, copy);
	free(body);
	free(copy);
}
END_TEST

/* Regression (found by fuzz_reply): a group document of only whitespace read one byte past
 * the end while naming what it got. */
START_TEST(whitespace_only_group_document)
{
	struct group_data *gd = NULL;
	struct gw_err err = {0};
	char *tab = malloc(1);
	tab[0] = '\t';
	ck_assert_int_eq(model_parse_group(GW_GROUP_RULE, tab, 1, "s", &gd, &err), -1);
	ck_assert_ptr_null(gd);
	ck_assert_int_eq(model_parse_group(GW_GROUP_RULE, tab, 0, "s", &gd, &err), -1);
	free(tab);
}
END_TEST

/* Regression (found by fuzz_reply): a group document that is one number, its last byte the
 * reply's, was named "integer" by a scan that read past the end looking for a fraction. */
START_TEST(a_number_that_ends_the_document_is_named_without_reading_past_it)
{
	struct group_data *gd = NULL;
	struct gw_err err = {0};
	char *one = malloc(2);
	memcpy(one, "12", 2);
	ck_assert_int_eq(model_parse_group(GW_GROUP_RULE, one, 2, "s", &gd, &err), -1);
	ck_assert_ptr_null(gd);
	ck_assert_msg(strstr(err.msg, "got integer") != NULL, "%s", err.msg);
	one[1] = '.';
	ck_assert_int_eq(model_parse_group(GW_GROUP_RULE, one, 2, "s", &gd, &err), -1);
	free(one);
}
END_TEST

START_TEST(structure_between_values_is_strict)
{
	const enum gw_group rule[] = {GW_GROUP_RULE};
	const char *bad[] = {
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[{"
	    "\"id\":\"x\"},]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[{"
	    "\"id\":\"x\"} {\"id\":\"y\"}]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\" \"lastModifyTime\":1,\"data\":[]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]}}} x",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]}},"
	    "\"data\":{}}",
	    "{\"code\":200,\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,"
	    "\"data\":[]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]},"
	    "\"PLUGIN\":{nope}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":01,\"data\":[]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[{"
	    "\"id\":\"x\",\"id\":\"y\"}]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[]},"
	    "\"RULE\":{\"md5\":\"b\",\"lastModifyTime\":2,\"data\":[]}}}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"data\":[{"
	    "\"id\":\"x\"}",
	    /* an md5 that would break the listener's "md5,time" parameter or a log line */
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"d7,1\",\"lastModifyTime\":1,\"data\":[]}}"
	    "}",
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\\nb\",\"lastModifyTime\":1,\"data\":[]}}"
	    "}",
	    /* an invalid escaped key, a duplicate 'data' after code/message */
	    "{\"code\":200,\"data\":{\"RULE\":{\"md5\":\"a\",\"lastModifyTime\":1,\"d\\qata\":1,"
	    "\"data\":[]}}}",
	    "{\"code\":200,\"message\":\"m\",\"data\":{},\"data\":{}}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct group_data *out[GW_GROUP_COUNT];
		struct gw_err err = {0};
		ck_assert_msg(fetch(bad[i], strlen(bad[i]), rule, 1, "s", NULL, out, &err) == -1,
		              "accepted #%zu: %s", i, bad[i]);
		for (int g = 0; g < GW_GROUP_COUNT; g++)
			ck_assert_ptr_null(out[g]);
	}
	/* escaped keys and whitespace everywhere are fine */
	const char *ok = " { \"c\\u006fde\" : 200 , \"data\" : { \"RULE\" : { \"md5\" : \"a\" , "
	                 "\"lastModifyTime\" : 1 , \"data\" : [ { \"id\" : \"x\" } ] } } } \n";
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	ck_assert_msg(fetch(ok, strlen(ok), rule, 1, "s", NULL, out, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(out[GW_GROUP_RULE]->items[0].json, "{ \"id\" : \"x\" }");
	unref_all(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("model");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, fixture_parses);
	tcase_add_test(tc, typed_rule_with_conditions_and_unicode);
	tcase_add_test(tc, wrong_field_type_names_group_item_field);
	tcase_add_test(tc, missing_key_and_duplicate_key_refused);
	tcase_add_test(tc, envelope_refusals);
	tcase_add_test(tc, config_data_refusals);
	tcase_add_test(tc, newer_groups_raw_with_keys);
	tcase_add_test(tc, each_group_is_keyed_as_shenyu_caches_key_it);
	tcase_add_test(tc, group_document_roundtrip);
	tcase_add_test(tc, unchanged_items_are_shared_changed_ones_parsed);
	tcase_add_test(tc, structure_between_values_is_strict);
	tcase_add_test(tc, whitespace_only_group_document);
	tcase_add_test(tc, a_number_that_ends_the_document_is_named_without_reading_past_it);
	tcase_add_test(tc, carry_over_with_growth_reorder_and_duplicates);
	tcase_add_test(tc, shared_items_give_the_version_a_fresh_parse_gives);
	tcase_add_test(tc, a_long_run_of_changes_keeps_the_stores_bounded);
	tcase_add_test(tc, a_full_parse_keeps_the_reply_a_change_gives_it_back);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
