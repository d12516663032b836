/*
 * Unit tests of the direct item decoder (model/itemdec.c). Each case runs the decoder and
 * the reference filler (tests/unit/itemref.c: jansson's tree) on the same text and requires
 * the same verdict, the same message and the same fields; the cases are the edges where a
 * hand-written decoder could drift from jansson: escapes and surrogates, UTF-8, numbers at
 * their limits, duplicate keys, nesting depth, table order of refusals, nested lists.
 * fuzz_itemdec does the same on random text.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fields.h"
#include "model/groups.h"
#include "model/itemdec.h"
#include "itemref.h"

struct run {
	struct group_data *gd;
	struct gw_err err;
	int syntax, rc;
	struct gw_item it;
};

static void run_one(struct run *r, int decoder, enum gw_group g, const char *text, size_t len)
{
	memset(r, 0, sizeof *r);
	r->gd = group_data_new(g);
	ck_assert_ptr_nonnull(r->gd);
	struct item_ctx c = {.gd = r->gd,
	                     .mem = &r->gd->arena,
	                     .err = &r->err,
	                     .group = gw_group_name(g),
	                     .index = 3,
	                     .syntax = &r->syntax};
	if (decoder) {
		struct itemdec *d = itemdec_new();
		ck_assert_ptr_nonnull(d);
		r->rc = itemdec_item(d, &c, g, text, len, &r->it);
		itemdec_free(d); /* the item must not point into the decoder's scratch */
	} else {
		r->rc = itemref_item(&c, g, text, len, &r->it);
	}
}

static void same_text(const char *a, const char *b)
{
	ck_assert(!a == !b);
	if (a)
		ck_assert_str_eq(a, b);
}

static void same_fields(const struct field *fields, size_t n, const void *x, const void *y)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		const char *a = (const char *)x + f->off, *b = (const char *)y + f->off;
		if (f->kind == K_STR || f->kind == K_STR_OR_NUM) {
			same_text(*(const char *const *)a, *(const char *const *)b);
		} else if (f->kind == K_INT) {
			ck_assert(*(const int64_t *)a == *(const int64_t *)b);
		} else if (f->kind == K_BOOL) {
			ck_assert_int_eq(*(const enum gw_bool *)a, *(const enum gw_bool *)b);
		} else {
			const struct list_shape *ls = fields_list(f->kind);
			size_t na = *(const size_t *)((const char *)x + f->count_off);
			ck_assert_uint_eq(na, *(const size_t *)((const char *)y + f->count_off));
			const unsigned char *la = *(const void *const *)a,
			                    *lb = *(const void *const *)b;
			for (size_t j = 0; j < na; j++)
				same_fields(ls->fields, ls->n, la + j * ls->size,
				            lb + j * ls->size);
		}
	}
}

/* Decode `text` both ways; they must agree. Returns the decoder's run (the caller frees
 * its gd) for checks of the values themselves. */
static struct run both_len(enum gw_group g, const char *text, size_t len)
{
	struct run ref, dec;
	run_one(&ref, 0, g, text, len);
	run_one(&dec, 1, g, text, len);
	ck_assert_msg(ref.rc == dec.rc && ref.syntax == dec.syntax &&
	                  strcmp(ref.err.msg, dec.err.msg) == 0,
	              "%s\nreference: %d '%s'\ndecoder:   %d '%s'", text, ref.rc, ref.err.msg,
	              dec.rc, dec.err.msg);
	if (ref.rc == 0) {
		same_text(ref.it.key, dec.it.key);
		same_text(ref.it.name, dec.it.name);
		ck_assert_uint_eq(ref.it.json_len, dec.it.json_len);
		const struct group_shape *sh = fields_group(g);
		if (sh->fields)
			same_fields(sh->fields, sh->n_fields,
			            *(void *const *)((const char *)&ref.it + sh->item_ptr_off),
			            *(void *const *)((const char *)&dec.it + sh->item_ptr_off));
	}
	group_data_unref(ref.gd);
	return dec;
}

static struct run both(enum gw_group g, const char *text)
{
	return both_len(g, text, strlen(text));
}

/* Both accept (or both refuse: ok 0) and the decoder's message contains `want`. */
static void expect(enum gw_group g, const char *text, int ok, const char *want)
{
	struct run r = both(g, text);
	ck_assert_msg((r.rc == 0) == ok, "%s: %s", text, r.err.msg);
	if (want)
		ck_assert_msg(strstr(r.err.msg, want), "%s: '%s' lacks '%s'", text, r.err.msg,
		              want);
	group_data_unref(r.gd);
}

START_TEST(escapes_and_surrogates_decode_to_utf8)
{
	struct run r = both(GW_GROUP_RULE, "{\"id\":\"r\\u0031\",\"name\":\"\\u9650 caf\\u00e9 "
	                                   "\\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\\t\"}");
	ck_assert_int_eq(r.rc, 0);
	ck_assert_str_eq(r.it.key, "r1");
	ck_assert_str_eq(r.it.rule->name, "\xe9\x99\x90 caf\xc3\xa9 \xf0\x9f\x98\x80 \"q\" \\ / "
	                                  "\b\f\n\r\t");
	ck_assert_str_eq(r.it.name, r.it.rule->name);
	group_data_unref(r.gd);
}
END_TEST

START_TEST(strings_jansson_refuses_are_refused)
{
	expect(GW_GROUP_RULE, "{\"id\":\"\\ud800x\"}", 0, "invalid JSON");       /* lone high */
	expect(GW_GROUP_RULE, "{\"id\":\"\\udc00\"}", 0, "invalid JSON");        /* lone low */
	expect(GW_GROUP_RULE, "{\"id\":\"\\ud800\\u0041\"}", 0, "invalid JSON"); /* bad pair */
	expect(GW_GROUP_RULE, "{\"id\":\"a\\u0000b\"}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"a\\u0000\":1,\"id\":\"r\"}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"a\\x\"}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"a\\u12g4\"}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"a\tb\"}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"\xed\xa0\x80\"}", 0, "invalid JSON");     /* surrogate */
	expect(GW_GROUP_RULE, "{\"id\":\"\xc0\xaf\"}", 0, "invalid JSON");         /* overlong */
	expect(GW_GROUP_RULE, "{\"id\":\"\xe0\x80\xaf\"}", 0, "invalid JSON");     /* overlong */
	expect(GW_GROUP_RULE, "{\"id\":\"\xf4\x90\x80\x80\"}", 0, "invalid JSON"); /* > 10FFFF */
	expect(GW_GROUP_RULE, "{\"id\":\"\xc3\"}", 0, "invalid JSON");             /* cut */
	expect(GW_GROUP_RULE, "{\"id\":\"\xf0\x9f\x98\x80\xc3\xa9\"}", 1, NULL);
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":\"\xff\"}", 0, "invalid JSON");
}
END_TEST

START_TEST(numbers_at_their_limits)
{
	struct run r = both(GW_GROUP_RULE, "{\"id\":\"r\",\"sort\":9223372036854775807,"
	                                   "\"matchMode\":-9223372036854775808}");
	ck_assert_int_eq(r.rc, 0);
	ck_assert(r.it.rule->sort == INT64_MAX);
	ck_assert(r.it.rule->match_mode == INT64_MIN); /* GW_INT_UNSET's value, as jansson's */
	group_data_unref(r.gd);
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"sort\":9223372036854775808}", 0, "too big integer");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"sort\":-9223372036854775809}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":12345678901234567890123}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"sort\":01}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"sort\":-}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":1.}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":1e}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":+1}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":1e400}", 0, "real number overflow");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":-1.5e-400,\"y\":0.5E+3}", 1, NULL);
	/* a real where an integer is wanted names the field and "number" */
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"sort\":1.0}", 0,
	       "field 'sort': expected integer, got number");
	/* role: a number becomes its text, as the reference prints it */
	r = both(GW_GROUP_PLUGIN, "{\"name\":\"p\",\"role\":-0}");
	ck_assert_str_eq(r.it.plugin->role, "0");
	group_data_unref(r.gd);
	expect(GW_GROUP_PLUGIN, "{\"name\":\"p\",\"role\":2.5}", 0,
	       "field 'role': expected string, got number");
}
END_TEST

START_TEST(duplicate_keys_are_refused_after_decoding_at_every_depth)
{
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"n\\u0061me\":\"a\",\"name\":\"b\"}", 0,
	       "duplicate object key");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":{\"a\":[{\"b\":1,\"b\":2}]}}", 0,
	       "duplicate object key");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":{\"a\":1},\"y\":{\"a\":1}}", 1, NULL);
	/* an object of many keys is checked by sorting: a duplicate far apart is found */
	char text[2048] = "{\"id\":\"r\"";
	for (int i = 0; i < 60; i++)
		snprintf(text + strlen(text), sizeof text - strlen(text), ",\"k%d\":%d", i, i);
	char ok[2100];
	snprintf(ok, sizeof ok, "%s}", text);
	expect(GW_GROUP_META_DATA, ok, 1, NULL);
	snprintf(ok, sizeof ok, "%s,\"k\\u0033\":0}", text);
	expect(GW_GROUP_META_DATA, ok, 0, "duplicate object key");
}
END_TEST

START_TEST(nesting_up_to_jansson_limit)
{
	size_t n = 2047; /* the item is value 1, the member's array 2, ..., 2048 */
	char *text = malloc(2 * n + 32);
	for (size_t extra = 0; extra < 2; extra++) {
		size_t d = n + extra;
		char *p = text + sprintf(text, "{\"id\":\"r\",\"x\":");
		memset(p, '[', d);
		memset(p + d, ']', d);
		strcpy(p + 2 * d, "}");
		expect(GW_GROUP_RULE, text, extra == 0, extra ? "maximum parsing depth" : NULL);
	}
	free(text);
}
END_TEST

START_TEST(structure_errors_are_refused)
{
	expect(GW_GROUP_RULE, "{\"id\":\"r\",}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":[1,]}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\" \"x\":1}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":tru}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":truex}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\"}}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"r\"", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{'id':\"r\"}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, " {\"id\" : \"r\" }\r\n", 1, NULL);
	expect(GW_GROUP_RULE, "[{\"id\":\"r\"}]", 0, "expected an object, got array");
	/* jansson drops a NUL byte after a literal; an item's text must hold none */
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":true}", 1, NULL);
	struct run r = both_len(GW_GROUP_RULE, "{\"id\":\"r\",\"x\":true\0}", 20);
	ck_assert_int_eq(r.rc, -1);
	ck_assert_int_eq(r.syntax, 1);
	ck_assert_msg(strstr(r.err.msg, "NUL byte at offset 18"), "%s", r.err.msg);
	group_data_unref(r.gd);
}
END_TEST

START_TEST(the_first_wrong_field_in_table_order_is_named)
{
	/* 'sort' comes first in the text, 'name' first in RULE's table: the reference names
	 * 'name' */
	expect(GW_GROUP_RULE, "{\"sort\":\"x\",\"id\":\"r\",\"name\":5}", 0,
	       "item 3 (key 'r'): field 'name': expected string, got integer");
	/* a missing key comes before any wrong field, and an invalid text before both */
	expect(GW_GROUP_RULE, "{\"name\":5}", 0, "missing key field 'id' (its key is id)");
	expect(GW_GROUP_RULE, "{\"name\":5,\"x\":01}", 0, "invalid JSON");
	expect(GW_GROUP_RULE, "{\"id\":\"\"}", 0, "missing key field 'id'");
	expect(GW_GROUP_RULE, "{\"id\":7}", 0, "missing key field 'id'");
	expect(GW_GROUP_SELECTOR, "{\"id\":\"s\",\"enabled\":1}", 0,
	       "field 'enabled': expected boolean, got integer");
	expect(GW_GROUP_APP_AUTH, "{\"appKey\":\"k\",\"paramDataList\":{}}", 0,
	       "field 'paramDataList': expected array, got object");
}
END_TEST

START_TEST(nested_lists_fill_and_refuse_like_the_reference)
{
	struct run r = both(GW_GROUP_SELECTOR,
	                    "{\"id\":\"s\",\"conditionList\":[{\"paramType\":\"uri\",\"operator\":"
	                    "\"match\",\"paramName\":\"/\",\"paramValue\":\"/a/**\",\"x\":[{}]},"
	                    "{\"param\\u0054ype\":\"header\",\"paramValue\":null}],"
	                    "\"beforeConditionList\":[],\"enabled\":null,\"sort\":null}");
	ck_assert_int_eq(r.rc, 0);
	const struct gw_selector_data *s = r.it.selector;
	ck_assert_uint_eq(s->n_conditions, 2);
	ck_assert_str_eq(s->conditions[0].param_value, "/a/**");
	ck_assert_str_eq(s->conditions[1].param_type, "header");
	ck_assert_ptr_null(s->conditions[1].param_value);
	ck_assert_uint_eq(s->n_before_conditions, 0);
	ck_assert_int_eq(s->enabled, GW_UNSET);
	ck_assert(s->sort == GW_INT_UNSET);
	group_data_unref(r.gd);
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"conditionDataList\":[{\"paramType\":\"uri\"},2]}", 0,
	       "field 'conditionDataList': expected array of objects, got integer");
	expect(GW_GROUP_RULE, "{\"id\":\"r\",\"conditionDataList\":[{\"paramType\":1},2]}", 0,
	       "field 'paramType': expected string, got integer");
	r = both(GW_GROUP_APP_AUTH, "{\"appKey\":\"k\",\"pathDataList\":[{\"appName\":\"a\","
	                            "\"path\":\"/x\",\"enabled\":true}],\"paramDataList\":[{"
	                            "\"appName\":\"a\",\"appParam\":\"p\"}]}");
	ck_assert_str_eq(r.it.app_auth->paths[0].path, "/x");
	ck_assert_int_eq(r.it.app_auth->paths[0].enabled, GW_TRUE);
	ck_assert_str_eq(r.it.app_auth->params[0].app_param, "p");
	group_data_unref(r.gd);
}
END_TEST

START_TEST(newer_groups_keys_and_names)
{
	struct run r =
	    both(GW_GROUP_AI_PROXY_API_KEY,
	         "{\"selectorId\":\"s\\u00e9\",\"proxyApiKey\":\"sk-1\",\"name\":\"n\"}");
	ck_assert_str_eq(r.it.key, "s\xc3\xa9::sk-1");
	ck_assert_str_eq(r.it.name, "n");
	group_data_unref(r.gd);
	expect(GW_GROUP_AI_PROXY_API_KEY, "{\"selectorId\":\"s\",\"proxyApiKey\":\"\"}", 0,
	       "missing key field 'proxyApiKey'");
	r = both(GW_GROUP_DISCOVER_UPSTREAM, "{\"selectorId\":\"s9\",\"name\":7,\"upstreams\":[]}");
	ck_assert_str_eq(r.it.key, "s9");
	ck_assert_ptr_null(r.it.name); /* a name that is not a string is no name, no error */
	group_data_unref(r.gd);
	expect(GW_GROUP_PROXY_SELECTOR, "{\"name\":\"tcp\"}", 0, "missing key field 'id'");
}
END_TEST

/* Every seed of the fuzz target (fixtures, benchmark items, edge cases) agrees. */
START_TEST(every_fuzz_seed_agrees)
{
	const char *dirs[] = {"/tests/fuzz/corpus/itemdec/", "/tests/fuzz/regress/itemdec/"};
	static char buf[1 << 16];
	size_t seen = 0;
	for (size_t k = 0; k < 2; k++) {
		char path[512];
		snprintf(path, sizeof path, "%s%s", SRCDIR, dirs[k]);
		DIR *dir = opendir(path);
		ck_assert_msg(dir != NULL, "cannot open %s", path);
		for (struct dirent *e; (e = readdir(dir));) {
			char file[800];
			snprintf(file, sizeof file, "%s%s", path, e->d_name);
			FILE *f = e->d_name[0] == '.' ? NULL : fopen(file, "rb");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof buf, f);
			fclose(f);
			if (n < 1)
				continue;
			enum gw_group g = (enum gw_group)((unsigned char)buf[0] % GW_GROUP_COUNT);
			struct run r = both_len(g, buf + 1, n - 1);
			group_data_unref(r.gd);
			seen++;
		}
		closedir(dir);
	}
	ck_assert_uint_ge(seen, 50);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("itemdec");
	TCase *tc = tcase_create("decode");
	tcase_add_test(tc, escapes_and_surrogates_decode_to_utf8);
	tcase_add_test(tc, strings_jansson_refuses_are_refused);
	tcase_add_test(tc, numbers_at_their_limits);
	tcase_add_test(tc, duplicate_keys_are_refused_after_decoding_at_every_depth);
	tcase_add_test(tc, nesting_up_to_jansson_limit);
	tcase_add_test(tc, structure_errors_are_refused);
	tcase_add_test(tc, the_first_wrong_field_in_table_order_is_named);
	tcase_add_test(tc, nested_lists_fill_and_refuse_like_the_reference);
	tcase_add_test(tc, newer_groups_keys_and_names);
	tcase_add_test(tc, every_fuzz_seed_agrees);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
