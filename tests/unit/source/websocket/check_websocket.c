/*
 * The WebSocket source's pure parts: the message envelope (agent/source/websocket/
 * message.c) and what each message does to the held groups (apply.c) over a real store
 * and ingest: MYSELF replaces, PLUGIN REFRESH replaces, per-plugin REFRESH replaces one
 * plugin's items, CREATE and UPDATE upsert (a renamed plugin replaces the one with its
 * id), DELETE removes, a malformed item changes nothing, the end of a full sync
 * removes what the admin no longer has, and an anti-entropy full sync counts repairs.
 */
#include <check.h>
#include <pthread.h>
#include <string.h>

#include "source/websocket/apply.h"
#include "source/websocket/message.h"
#include "store/store.h"
#include "abiview.h"

static struct ws_msg parse_ok(const char *text)
{
	struct ws_msg m;
	struct gw_err err = {0};
	ck_assert_msg(ws_msg_parse(text, strlen(text), &m, &err) == 0, "%s: %s", text, err.msg);
	return m;
}

static void parse_bad(const char *text, const char *part)
{
	struct ws_msg m;
	struct gw_err err = {0};
	ck_assert_msg(ws_msg_parse(text, strlen(text), &m, &err) == -1, "accepted %s", text);
	ck_assert_msg(strstr(err.msg, part), "'%s' -> '%s', wanted '%s'", text, err.msg, part);
}

START_TEST(envelopes)
{
	struct ws_msg m = parse_ok(" {\"groupType\":\"RULE\",\"eventType\":\"UPDATE\","
	                           "\"data\":[{\"id\":\"1\",\"operator\":\"\\u003d\"}]} ");
	ck_assert_int_eq(m.kind, WS_MSG_DATA);
	ck_assert_int_eq(m.group, GW_GROUP_RULE);
	ck_assert_int_eq(m.event, WS_EV_UPDATE);
	ck_assert_uint_eq(m.data_len, strlen("[{\"id\":\"1\",\"operator\":\"\\u003d\"}]"));
	ck_assert_int_eq(m.data[0], '[');
	/* any member order; unknown members are fine */
	m = parse_ok("{\"data\":[],\"x\":{\"y\":[1]},\"eventType\":\"MYSELF\",\"groupType\":"
	             "\"AI_PROXY_API_KEY\"}");
	ck_assert_int_eq(m.group, GW_GROUP_AI_PROXY_API_KEY);
	ck_assert_int_eq(m.event, WS_EV_MYSELF);
	/* the RUNNING_MODE reply, Jackson's key order */
	m = parse_ok("{\"masterUrl\":\"ws://10.0.0.7:9095/websocket\",\"isMaster\":false,"
	             "\"runningMode\":\"CLUSTER\",\"eventType\":\"RUNNING_MODE\"}");
	ck_assert_int_eq(m.kind, WS_MSG_RUNNING_MODE);
	ck_assert_int_eq(m.cluster, 1);
	ck_assert_int_eq(m.is_master, 0);
	ck_assert_str_eq(m.master_url, "ws://10.0.0.7:9095/websocket");
	m = parse_ok("{\"eventType\":\"RUNNING_MODE\",\"runningMode\":\"STANDALONE\","
	             "\"isMaster\":true,\"masterUrl\":\"/websocket\"}");
	ck_assert_int_eq(m.cluster, 0);
	ck_assert_int_eq(m.is_master, 1);
	/* newer groups and event types are skipped, not refused */
	m = parse_ok("{\"groupType\":\"NEW_GROUP\",\"eventType\":\"UPDATE\",\"data\":[]}");
	ck_assert_int_eq(m.kind, WS_MSG_IGNORED);
	ck_assert_str_eq(m.group_name, "NEW_GROUP");
	m = parse_ok("{\"groupType\":\"RULE\",\"eventType\":\"SOMETHING\",\"data\":{}}");
	ck_assert_int_eq(m.kind, WS_MSG_IGNORED);

	parse_bad("", "not a JSON object");
	parse_bad("[1]", "not a JSON object");
	parse_bad("{not json", "invalid JSON");
	parse_bad("{\"groupType\":\"RULE\",\"eventType\":\"UPDATE\",\"data\":[]} x",
	          "invalid JSON");
	parse_bad("{\"groupType\":\"RULE\",\"data\":[]}", "no 'eventType'");
	parse_bad("{\"eventType\":\"UPDATE\",\"data\":[]}", "no 'groupType'");
	parse_bad("{\"groupType\":\"RULE\",\"eventType\":\"UPDATE\"}", "group RULE: 'data' must");
	parse_bad("{\"groupType\":\"RULE\",\"eventType\":\"UPDATE\",\"data\":{}}",
	          "must be an array");
	parse_bad("{\"groupType\":1,\"eventType\":\"UPDATE\",\"data\":[]}", "'groupType'");
	parse_bad("{\"groupType\":\"RULE\",\"groupType\":\"RULE\",\"eventType\":\"UPDATE\"}",
	          "duplicated");
	parse_bad("{\"groupType\":\"RULE\",\"eventType\":\"UPDATE\",\"data\":[],\"data\":[]}",
	          "duplicate key 'data'");
	parse_bad("{\"groupType\":\"R\xc3\x28\",\"eventType\":\"UPDATE\",\"data\":[]}",
	          "invalid JSON");
}
END_TEST

/* ---------------------------------------------------------------- apply */

struct fix {
	struct cfg cfg;
	struct store *st;
	struct ingest *in;
	struct gw_log *log;
	struct ws_shared sh;
	struct ws_apply ap;
};

static void fix_init(struct fix *f)
{
	memset(f, 0, sizeof *f);
	static const enum gw_group groups[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE,
	                                       GW_GROUP_APP_AUTH, GW_GROUP_META_DATA};
	memcpy(f->cfg.groups, groups, sizeof groups);
	f->cfg.n_groups = 5;
	struct gw_err err = {0};
	ck_assert_int_eq(gw_log_open(&f->log, GW_LOG_ERROR, GW_LOG_TEXT, NULL, &err), 0);
	f->st = store_new();
	f->in = ingest_new(f->st, f->log);
	f->sh.cfg = &f->cfg;
	f->sh.in = f->in;
	f->sh.log = f->log;
	pthread_mutex_init(&f->sh.apply_mu, NULL);
	pthread_cond_init(&f->sh.gate_cv, NULL);
	f->ap.sh = &f->sh;
	f->ap.server = "ws://a/websocket";
}

static void fix_free(struct fix *f)
{
	ws_apply_window_abort(&f->ap);
	pthread_cond_destroy(&f->sh.gate_cv);
	pthread_mutex_destroy(&f->sh.apply_mu);
	ingest_free(f->in);
	store_free(f->st);
	gw_log_close(f->log);
}

static int apply(struct fix *f, const char *text)
{
	struct ws_msg m = parse_ok(text);
	struct gw_err err = {0};
	return ws_apply_message(&f->ap, &m, &err);
}

/* The held keys of a group in order, "a,b"; "-" if nothing is held. */
static const char *held(struct fix *f, enum gw_group g)
{
	static char buf[512];
	struct group_data *gd = store_get(f->st, g);
	if (!gd)
		return "-";
	buf[0] = '\0';
	for (size_t i = 0; i < gd->n_items; i++) {
		if (i)
			strcat(buf, ",");
		strcat(buf, item_key(&gd->items[i]));
	}
	group_data_unref(gd);
	return buf;
}

#define SEL(id, plugin) "{\"id\":\"" id "\",\"pluginName\":\"" plugin "\"}"

START_TEST(events)
{
	struct fix f;
	fix_init(&f);
	ck_assert_int_eq(
	    apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"MYSELF\",\"data\":[" SEL(
	                  "d1", "divide") "," SEL("w1", "waf") "," SEL("d2", "divide") "]}"),
	    0);
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "d1,w1,d2");
	/* per-plugin REFRESH: divide's selectors are now only d2 and d3; waf's stay */
	apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"REFRESH\",\"data\":[" SEL(
	              "d2", "divide") "," SEL("d3", "divide") "]}");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "w1,d2,d3");
	apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"CREATE\",\"data\":[" SEL(
	              "x1", "waf") "]}");
	apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"DELETE\",\"data\":[" SEL(
	              "w1", "waf") "," SEL("nope", "waf") "]}");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "d2,d3,x1");
	/* APP_AUTH REFRESH replaces the group; its DELETE carries only some fields */
	apply(&f, "{\"groupType\":\"APP_AUTH\",\"eventType\":\"REFRESH\",\"data\":[{\"appKey\":"
	          "\"K1\"},{\"appKey\":\"K2\"}]}");
	apply(&f, "{\"groupType\":\"APP_AUTH\",\"eventType\":\"REFRESH\",\"data\":[{\"appKey\":"
	          "\"K3\"}]}");
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "K3");
	apply(&f, "{\"groupType\":\"APP_AUTH\",\"eventType\":\"DELETE\",\"data\":[{\"appKey\":"
	          "\"K3\",\"appSecret\":\"s\",\"open\":false,\"enabled\":true}]}");
	ck_assert_str_eq(held(&f, GW_GROUP_APP_AUTH), "");
	/* a malformed item refuses the message: nothing changes */
	struct group_data *before = store_get(f.st, GW_GROUP_SELECTOR);
	ck_assert_int_eq(
	    apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"UPDATE\",\"data\":[" SEL(
	                  "d2", "divide") ",{\"id\":\"d3\",\"enabled\":\"yes\"}]}"),
	    -1);
	struct group_data *after = store_get(f.st, GW_GROUP_SELECTOR);
	ck_assert_ptr_eq(before, after);
	group_data_unref(before);
	group_data_unref(after);
	/* groups not configured are not held */
	apply(&f, "{\"groupType\":\"PROXY_SELECTOR\",\"eventType\":\"CREATE\",\"data\":[{\"id\":"
	          "\"p\"}]}");
	ck_assert_str_eq(held(&f, GW_GROUP_PROXY_SELECTOR), "-");
	fix_free(&f);
}
END_TEST

START_TEST(full_sync_sweeps_and_repairs)
{
	struct fix f;
	fix_init(&f);
	ws_apply_window_open(&f.ap, 0);
	apply(&f, "{\"groupType\":\"RULE\",\"eventType\":\"MYSELF\",\"data\":[" SEL("r1",
	                                                                            "divide") "]}");
	apply(&f,
	      "{\"groupType\":\"META_DATA\",\"eventType\":\"REFRESH\",\"data\":[{\"id\":\"m1\"}]}");
	ck_assert_uint_eq(ws_apply_window_close(&f.ap, WS_END_MARKER),
	                  3);                            /* PLUGIN, SELECTOR, APP_AUTH */
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), ""); /* received once: empty */
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "r1");
	ck_assert_uint_eq(f.ap.repairs, 0);

	/* while "disconnected" the admin deleted every META_DATA item: a 2.7 admin then sends
	 * nothing for it, and only the end of the full sync empties it */
	ws_apply_window_open(&f.ap, 0);
	apply(&f, "{\"groupType\":\"RULE\",\"eventType\":\"MYSELF\",\"data\":[" SEL("r1",
	                                                                            "divide") "]}");
	ck_assert_uint_eq(ws_apply_window_close(&f.ap, WS_END_MARKER), 1);
	ck_assert_str_eq(held(&f, GW_GROUP_META_DATA), "");
	/* an incomplete end (no marker) removes nothing */
	apply(&f,
	      "{\"groupType\":\"META_DATA\",\"eventType\":\"CREATE\",\"data\":[{\"id\":\"m2\"}]}");
	ws_apply_window_open(&f.ap, 0);
	ck_assert_uint_eq(ws_apply_window_close(&f.ap, WS_END_TIMEOUT), 0);
	ck_assert_str_eq(held(&f, GW_GROUP_META_DATA), "m2");

	/* an answer with nothing at all (a namespace the admin does not know) empties nothing */
	ws_apply_window_open(&f.ap, 0);
	ck_assert_uint_eq(ws_apply_window_close(&f.ap, WS_END_MARKER), 0);
	ck_assert_str_eq(held(&f, GW_GROUP_META_DATA), "m2");
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "r1");

	/* ended by silence (an admin before 2.7): only the groups that came are swept */
	ws_apply_window_open(&f.ap, 0);
	apply(&f, "{\"groupType\":\"RULE\",\"eventType\":\"MYSELF\",\"data\":[" SEL("r1",
	                                                                            "divide") "]}");
	ck_assert_uint_eq(ws_apply_window_close(&f.ap, WS_END_SILENCE), 0);
	ck_assert_str_eq(held(&f, GW_GROUP_META_DATA), "m2");

	/* anti-entropy: nothing differs, nothing is made; then one lost event is repaired */
	uint64_t accepted = f.ap.accepted;
	ws_apply_window_open(&f.ap, 1);
	apply(&f, "{\"groupType\":\"RULE\",\"eventType\":\"MYSELF\",\"data\":[" SEL("r1",
	                                                                            "divide") "]}");
	apply(&f,
	      "{\"groupType\":\"META_DATA\",\"eventType\":\"REFRESH\",\"data\":[{\"id\":\"m2\"}]}");
	ws_apply_window_close(&f.ap, WS_END_MARKER);
	ck_assert_uint_eq(f.ap.accepted, accepted);
	ck_assert_uint_eq(f.ap.repairs, 0);
	ws_apply_window_open(&f.ap, 1);
	apply(&f, "{\"groupType\":\"RULE\",\"eventType\":\"MYSELF\",\"data\":[" SEL(
	              "r1", "divide") "," SEL("lost", "divide") "]}");
	apply(&f,
	      "{\"groupType\":\"META_DATA\",\"eventType\":\"REFRESH\",\"data\":[{\"id\":\"m2\"}]}");
	ws_apply_window_close(&f.ap, WS_END_MARKER);
	ck_assert_str_eq(held(&f, GW_GROUP_RULE), "r1,lost");
	ck_assert_uint_eq(f.ap.repairs, 1);
	fix_free(&f);
}
END_TEST

#define PLG(id, name) "{\"id\":\"" id "\",\"name\":\"" name "\",\"enabled\":true}"

/* Issue 20 item 11: the admin sends PLUGIN REFRESH only with the namespace's whole plugin
 * list ("sync all", a configuration import), so it replaces the group; SELECTOR and RULE
 * REFRESH stay per plugin (the events test above). */
START_TEST(plugin_refresh_replaces_the_group)
{
	struct fix f;
	fix_init(&f);
	apply(&f, "{\"groupType\":\"PLUGIN\",\"eventType\":\"MYSELF\",\"data\":[" PLG(
	              "1", "divide") "," PLG("2", "waf") "," PLG("3", "sign") "]}");
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide,waf,sign");
	apply(&f, "{\"groupType\":\"PLUGIN\",\"eventType\":\"REFRESH\",\"data\":[" PLG(
	              "1", "divide") "," PLG("3", "sign") "]}");
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide,sign");
	fix_free(&f);
}
END_TEST

/* Issue 20 item 10: a plugin renamed in the admin arrives as an UPDATE of its id under the
 * new name; the old name must not stay behind as a ghost. */
START_TEST(a_renamed_plugin_replaces_the_one_with_its_id)
{
	struct fix f;
	fix_init(&f);
	apply(&f, "{\"groupType\":\"PLUGIN\",\"eventType\":\"MYSELF\",\"data\":[" PLG(
	              "1", "divide") "," PLG("2", "waf") "]}");
	apply(&f, "{\"groupType\":\"PLUGIN\",\"eventType\":\"UPDATE\",\"data\":[" PLG(
	              "2", "firewall") "]}");
	ck_assert_str_eq(held(&f, GW_GROUP_PLUGIN), "divide,firewall");
	/* selectors and rules are keyed by id already: an UPDATE with a new name replaces */
	apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"UPDATE\",\"data\":[" SEL(
	              "s1", "divide") "]}");
	apply(&f, "{\"groupType\":\"SELECTOR\",\"eventType\":\"UPDATE\",\"data\":[{\"id\":\"s1\","
	          "\"pluginName\":\"divide\",\"name\":\"renamed\"}]}");
	ck_assert_str_eq(held(&f, GW_GROUP_SELECTOR), "s1");
	fix_free(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("websocket");
	TCase *tc = tcase_create("websocket");
	tcase_add_test(tc, envelopes);
	tcase_add_test(tc, events);
	tcase_add_test(tc, full_sync_sweeps_and_repairs);
	tcase_add_test(tc, plugin_refresh_replaces_the_group);
	tcase_add_test(tc, a_renamed_plugin_replaces_the_one_with_its_id);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
