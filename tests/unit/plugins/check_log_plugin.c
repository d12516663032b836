/*
 * The `log` subscriber (plugins/log/log.c) driven through the plugin test kit
 * (gwsync/testing.h), whose host keeps the lines exactly as the plugin wrote them: the
 * plugin's own fields (keys, names, md5s: the admin's text) never carry a control character
 * into a line, whatever host it runs in (the agent's log escapes every line again).
 */
#include <check.h>
#include <gwsync/testing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct gw_subscriber *gwsync_subscriber(void);

/* The lines the plugin logged for a change from nothing to `items` (a JSON list). */
static char *apply_items(enum gw_group group, const char *items)
{
	const struct gw_subscriber *d = gwsync_subscriber();
	char err[512] = "";
	struct gwt_config *cfg = gwt_config_parse("items: true\n", err, sizeof err);
	ck_assert_msg(cfg != NULL, "%s", err);
	struct gwt_host *h = gwt_host_new("gateway-log", d->options);
	void *state = NULL;
	ck_assert_int_eq(d->init(gwt_host(h), gwt_config(cfg), &state), 0);
	struct gwt_change *c = gwt_change_new(group, NULL, items, err, sizeof err);
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_int_eq(d->apply(state, gwt_host(h), gwt_change(c)), 0);
	char *log = strdup(gwt_host_log(h));
	d->fini(state, gwt_host(h));
	gwt_change_free(c);
	gwt_host_free(h);
	gwt_config_free(cfg);
	return log;
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

START_TEST(keys_and_names_cannot_forge_a_line)
{
	char *log = apply_items(
	    GW_GROUP_META_DATA,
	    "[{\"id\":\"m\\n2026-01-01 info store: accepted PLUGIN version "
	    "FORGED\",\"appName\":\"a\",\"path\":\"/p\\r\\u001b[2J\\u0007\\t\\u007f\"}]");
	ck_assert_msg(count_lines(log) == 2, "%s", log); /* the item and the summary */
	ck_assert_msg(strstr(log, "added key=m\\n2026-01-01 info store: accepted PLUGIN version "
	                          "FORGED name=") != NULL,
	              "%s", log);
	ck_assert_msg(strstr(log, "\\r\\x1b[2J\\x07\\t\\x7f\n") != NULL, "%s", log);
	free(log);
}
END_TEST

START_TEST(ordinary_text_is_unchanged)
{
	char *log = apply_items(GW_GROUP_RULE,
	                        "[{\"id\":\"r1\",\"name\":\"/\xc3\xbcr\xc3\xbcn/\xe6\xb3\xa8 \\\\ "
	                        "\\\"q\\\"\",\"selectorId\":\"s\",\"pluginName\":\"divide\"}]");
	ck_assert_msg(strstr(log, "RULE added key=r1 name=/\xc3\xbcr\xc3\xbcn/\xe6\xb3\xa8 \\ "
	                          "\"q\"\n") != NULL,
	              "%s", log);
	free(log);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("log_plugin");
	TCase *tc = tcase_create("log_plugin");
	tcase_add_test(tc, keys_and_names_cannot_forge_a_line);
	tcase_add_test(tc, ordinary_text_is_unchanged);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
