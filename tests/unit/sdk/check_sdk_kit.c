/*
 * The plugin test kit (gwsync/testing.h) builds what the agent delivers and what the plugin
 * guide tells authors to test: versions with their own md5s and times, a stale change and
 * the confirmed_only change after it, a group the header does not know, the groups the
 * agent syncs (and an older agent without that member), tick() on a fake clock as the
 * dispatcher drives it, log lines cut as the agent cuts them, and a plugin's .so opened and
 * an instance of it started, delivered to (the delta from what it last accepted) and
 * stopped as the agent runs one (the `recorder` test plugin; one with apply() alone; the
 * typed views an on-demand plugin is not given; the synced groups init() is started with;
 * a plugin reading its lists on demand, on this agent and on an older one; one built
 * before gw_subscriber.flags handed the lists).
 * The `upstreams` test
 * plugin (upstreams.c) shows what the synced groups are for: it writes its output once at
 * start, from DISCOVER_UPSTREAM when synced and from the selectors' handles otherwise.
 */
#include <check.h>
#include <fcntl.h>
#include <gwsync/testing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testfiles.h"

const struct gw_subscriber *gwsync_subscriber(void); /* upstreams.c */

static char err[1024];

static struct gwt_version *version(enum gw_group g, const char *md5, int64_t lmt, const char *items)
{
	struct gwt_version *v = gwt_version_new(g, md5, lmt, items, err, sizeof err);
	ck_assert_msg(v != NULL, "%s", err);
	return v;
}

static struct gwt_change *between(const struct gwt_version *a, const struct gwt_version *b)
{
	struct gwt_change *c = gwt_change_between(a, b, err, sizeof err);
	ck_assert_msg(c != NULL, "%s", err);
	return c;
}

START_TEST(versions_carry_their_own_md5_and_time_and_any_two_make_a_change)
{
	struct gwt_version *v1 = version(GW_GROUP_RULE, "m1", 100, "[{\"id\":\"a\"}]");
	struct gwt_version *v2 = version(GW_GROUP_RULE, "m2", 200, "[{\"id\":\"a\",\"x\":1}]");
	struct gwt_version *v3 =
	    version(GW_GROUP_RULE, "m3", 300, "[{\"id\":\"a\",\"x\":1},{\"id\":\"b\"}]");
	struct gwt_change *c = between(v1, v3); /* v2 coalesced away, as the agent does */
	const struct gw_change *ch = gwt_change(c);
	ck_assert_str_eq(ch->version.md5, "m3");
	ck_assert_int_eq(ch->version.last_modify_time, 300);
	ck_assert_str_eq(ch->previous.md5, "m1");
	ck_assert_int_eq(ch->previous.last_modify_time, 100);
	ck_assert_uint_eq(ch->n_added, 1);
	ck_assert_str_eq(ch->added[0]->key, "b");
	ck_assert_uint_eq(ch->n_updated, 1);
	ck_assert_str_eq(ch->updated[0].old_item->json, "{\"id\":\"a\"}");
	ck_assert_int_eq(ch->stale, 0);
	ck_assert_int_eq(ch->confirmed_only, 0);
	/* the change keeps what it needs: the versions may go first */
	gwt_version_free(v1);
	gwt_version_free(v3);
	ck_assert_str_eq(gwt_change(c)->items[1]->key, "b");
	gwt_change_free(c);

	/* a first change: from nothing */
	c = between(NULL, v2);
	ck_assert_ptr_null(gwt_change(c)->previous.md5);
	ck_assert_int_eq(gwt_change(c)->previous.last_modify_time, GW_INT_UNSET);
	ck_assert_uint_eq(gwt_change(c)->n_added, 1);
	gwt_change_free(c);
	gwt_version_free(v2);

	/* no md5: a digest of the items, distinct for distinct lists, equal for equal ones */
	char md5s[3][80];
	const char *lists[3] = {"[{\"id\":\"a\"}]", "[{\"id\":\"b\"}]", "[{\"id\":\"a\"}]"};
	for (int i = 0; i < 3; i++) {
		struct gwt_version *v = version(GW_GROUP_SELECTOR, NULL, i, lists[i]);
		snprintf(md5s[i], sizeof md5s[i], "%s", gwt_version_md5(v));
		gwt_version_free(v);
	}
	ck_assert_uint_eq(strlen(md5s[0]), 32);
	ck_assert_str_ne(md5s[0], md5s[1]);
	ck_assert_str_eq(md5s[0], md5s[2]);

	/* the agent's own refusals */
	ck_assert_ptr_null(
	    gwt_version_new(GW_GROUP_RULE, "m", 1, "[{\"name\":\"no id\"}]", err, sizeof err));
	ck_assert_msg(strstr(err, "id"), "%s", err);
	ck_assert_ptr_null(gwt_version_new(GW_GROUP_RULE, "a\"b", 1, "[]", err, sizeof err));
	ck_assert_msg(strstr(err, "md5"), "%s", err);
	struct gwt_version *p = version(GW_GROUP_PLUGIN, "p", 1, "[]");
	struct gwt_version *r = version(GW_GROUP_RULE, "r", 1, "[]");
	ck_assert_ptr_null(gwt_change_between(p, r, err, sizeof err));
	gwt_version_free(p);
	gwt_version_free(r);
}
END_TEST

START_TEST(a_stale_version_then_the_same_data_confirmed_only)
{
	const char *items = "[{\"id\":\"1\",\"name\":\"divide\"}]";
	struct gwt_version *snap = version(GW_GROUP_PLUGIN, "m1", 7, items);
	gwt_version_set_stale(snap, 1);
	struct gwt_version *admin = version(GW_GROUP_PLUGIN, "m1", 7, items);
	struct gwt_version *next = version(GW_GROUP_PLUGIN, "m2", 8, "[]");

	struct gwt_change *c = between(NULL, snap);
	ck_assert_int_eq(gwt_change(c)->stale, 1);
	ck_assert_int_eq(gwt_change(c)->confirmed_only, 0);
	ck_assert_uint_eq(gwt_change(c)->n_added, 1);
	gwt_change_free(c);

	c = between(snap, admin);
	const struct gw_change *ch = gwt_change(c);
	ck_assert_int_eq(ch->confirmed_only, 1);
	ck_assert_int_eq(ch->stale, 0);
	ck_assert_str_eq(ch->version.md5, ch->previous.md5);
	ck_assert_uint_eq(ch->n_added + ch->n_updated + ch->n_removed, 0);
	ck_assert_uint_eq(ch->n_items, 1);
	gwt_change_free(c);

	/* other data after the snapshot: an ordinary change */
	c = between(snap, next);
	ck_assert_int_eq(gwt_change(c)->confirmed_only, 0);
	ck_assert_int_eq(gwt_change(c)->stale, 0);
	ck_assert_uint_eq(gwt_change(c)->n_removed, 1);
	gwt_change_free(c);
	gwt_version_free(snap);
	gwt_version_free(admin);
	gwt_version_free(next);
}
END_TEST

START_TEST(a_group_the_header_does_not_know)
{
	struct gwt_host *h = gwt_host_new("t", NULL);
	const struct gw_host *host = gwt_host(h);
	int g = gwt_host_add_group(h, "FUTURE_GROUP");
	ck_assert_int_eq(g, GW_GROUP_COUNT);
	ck_assert_int_eq(gwt_host_add_group(h, "ANOTHER"), GW_GROUP_COUNT + 1);
	ck_assert_int_eq(host->group_count(host), GW_GROUP_COUNT + 2);
	ck_assert_str_eq(host->group_name(host, (enum gw_group)g), "FUTURE_GROUP");
	ck_assert_str_eq(host->group_name(host, GW_GROUP_RULE), "RULE");
	ck_assert_ptr_null(host->group_name(host, (enum gw_group)(GW_GROUP_COUNT + 2)));

	struct gwt_version *a = gwt_version_new_unknown(
	    g, "FUTURE_GROUP", "f1", 1, "[{\"id\":\"x\",\"v\":1}]", err, sizeof err);
	ck_assert_msg(a != NULL, "%s", err);
	struct gwt_version *b = gwt_version_new_unknown(
	    g, "FUTURE_GROUP", "f2", 2, "[{\"id\":\"x\",\"v\":2},{\"id\":\"y\"}]", err, sizeof err);
	ck_assert_msg(b != NULL, "%s", err);
	struct gwt_change *c = between(a, b);
	const struct gw_change *ch = gwt_change(c);
	ck_assert_int_eq(ch->group, g);
	ck_assert_str_eq(ch->group_name, "FUTURE_GROUP");
	ck_assert_uint_eq(ch->n_added, 1);
	ck_assert_uint_eq(ch->n_updated, 1);
	const struct gw_item *it = ch->updated[0].new_item;
	ck_assert_str_eq(it->key, "x");
	ck_assert_int_eq(it->group, g);
	ck_assert_int_eq(ch->updated[0].old_item->group, g);
	ck_assert_str_eq(it->json, "{\"id\":\"x\",\"v\":2}");
	ck_assert(!it->plugin && !it->selector && !it->rule && !it->app_auth && !it->meta);
	gwt_change_free(c);
	ck_assert_ptr_null(
	    gwt_version_new_unknown(GW_GROUP_RULE, "RULE", NULL, 1, "[]", err, sizeof err));
	ck_assert_ptr_null(gwt_version_new(GW_GROUP_COUNT, NULL, 1, "[]", err, sizeof err));

	/* the bundled test plugin ignores what it does not know */
	const struct gw_subscriber *d = gwsync_subscriber();
	char *dir = test_tmpdir(), yaml[9000];
	snprintf(yaml, sizeof yaml, "out: %s/out\nwrites: %s/writes\n", dir, dir);
	struct gwt_config *cfg = gwt_config_parse(yaml, err, sizeof err);
	void *state = NULL;
	ck_assert_int_eq(d->init(host, gwt_config(cfg), &state), 0);
	c = between(NULL, b);
	ck_assert_int_eq(d->apply(state, host, gwt_change(c)), 0);
	gwt_change_free(c);
	d->fini(state, host);
	gwt_config_free(cfg);
	rm_rf(dir);
	free(dir);
	gwt_version_free(a);
	gwt_version_free(b);
	gwt_host_free(h);
}
END_TEST

START_TEST(the_synced_groups_default_set_and_an_older_agent_without_them)
{
	struct gwt_host *h = gwt_host_new("t", NULL);
	const struct gw_host *host = gwt_host(h);
	ck_assert(GW_HAS(host, group_configured));
	ck_assert(GW_HAS(host, configured_groups));
	/* the agent's default admin.groups */
	enum gw_group got[GW_GROUP_COUNT];
	ck_assert_uint_eq(host->configured_groups(host, got, GW_GROUP_COUNT), 5);
	ck_assert_int_eq(got[0], GW_GROUP_PLUGIN);
	ck_assert_int_eq(got[4], GW_GROUP_META_DATA);
	ck_assert_int_eq(host->group_configured(host, GW_GROUP_RULE), 1);
	ck_assert_int_eq(host->group_configured(host, GW_GROUP_DISCOVER_UPSTREAM), 0);

	enum gw_group mine[] = {GW_GROUP_SELECTOR, GW_GROUP_DISCOVER_UPSTREAM, GW_GROUP_SELECTOR};
	ck_assert_int_eq(gwt_host_set_groups(h, mine, 3), 0);
	ck_assert_uint_eq(host->configured_groups(host, NULL, 0), 2); /* the count alone */
	ck_assert_uint_eq(host->configured_groups(host, got, 1), 2);  /* only cap written */
	ck_assert_int_eq(got[0], GW_GROUP_SELECTOR);
	ck_assert_int_eq(host->group_configured(host, GW_GROUP_DISCOVER_UPSTREAM), 1);
	ck_assert_int_eq(host->group_configured(host, GW_GROUP_PLUGIN), 0);

	/* an agent from before these members: GW_HAS says so */
	gwt_host_set_size(h, offsetof(struct gw_host, group_configured));
	ck_assert(!GW_HAS(host, group_configured));
	ck_assert(!GW_HAS(host, configured_groups));
	ck_assert(GW_HAS(host, group_count));
	gwt_host_free(h);
}
END_TEST

/* A plugin with a debounce: apply() asks for a tick 100 ms after the last change, at most
 * 250 ms after the first; tick() logs "reload" when it is due. */
struct deb {
	int64_t first, last;
	int pending;
};

static int deb_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
	struct deb *d = state;
	int64_t now = host->now_ms(host);
	if (!d->pending)
		d->first = now;
	d->last = now;
	d->pending = 1;
	if (c->n_items == 99) {
		host->error(host, "99 items refused");
		return -1;
	}
	return 0;
}

static int64_t deb_deadline(const struct deb *d)
{
	if (!d->pending)
		return -1;
	int64_t quiet = d->last + 100, cap = d->first + 250;
	return quiet < cap ? quiet : cap;
}

static int64_t deb_tick(void *state, const struct gw_host *host, int64_t now)
{
	struct deb *d = state;
	if (d->pending && now >= deb_deadline(d)) {
		d->pending = 0;
		host->log(host, GW_LOG_INFO, "reload at %lld", (long long)now);
		if (now == 1600)
			host->error(host, "reload was slow");
	}
	return deb_deadline(d);
}

static const struct gw_subscriber deb_desc = {GWSYNC_SUBSCRIBER_INIT, .name = "deb",
                                              .apply = deb_apply, .tick = deb_tick};

START_TEST(tick_runs_on_a_fake_clock_as_the_dispatcher_drives_it)
{
	struct gwt_host *h = gwt_host_new("t", NULL);
	struct deb d = {0};
	gwt_clock_set(h, 1000);
	ck_assert_int_eq(gwt_now(h), 1000);
	ck_assert_int_eq(gwt_host(h)->now_ms(gwt_host(h)), 1000);
	/* the first tick() when delivery starts: nothing pending */
	ck_assert_int_eq(gwt_tick_until(h, &deb_desc, &d, 0, 1000), -1);

	struct gwt_change *c = gwt_change_new(GW_GROUP_RULE, NULL, "[]", err, sizeof err);
	int64_t next = 0;
	/* a change every 50 ms: the quiet period never comes, the 250 ms cap does */
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(gwt_apply(h, &deb_desc, &d, gwt_change(c), &next), 0);
		ck_assert_int_eq(next, i < 3 ? gwt_now(h) + 100 : 1250);
		next = gwt_tick_until(h, &deb_desc, &d, next, gwt_now(h) + 50);
	}
	ck_assert_int_eq(gwt_now(h), 1200);
	ck_assert_str_eq(gwt_host_log(h), "");
	next = gwt_tick_until(h, &deb_desc, &d, next, 1249);
	ck_assert_str_eq(gwt_host_log(h), "");
	next = gwt_tick_until(h, &deb_desc, &d, next, 5000);
	ck_assert_str_eq(gwt_host_log(h), "info reload at 1250\n");
	ck_assert_int_eq(next, -1);
	ck_assert_int_eq(gwt_now(h), 5000);

	/* a rejected change is still followed by tick(); apply's message is the error, tick's
	 * is a warning */
	gwt_host_clear(h);
	gwt_clock_set(h, 1500);
	struct gwt_change *c99 = NULL;
	{
		char items[99 * 16 + 3] = "[";
		for (int i = 0; i < 99; i++)
			snprintf(items + strlen(items), sizeof items - strlen(items),
			         "%s{\"id\":\"%d\"}", i ? "," : "", i);
		strcat(items, "]");
		c99 = gwt_change_new(GW_GROUP_RULE, NULL, items, err, sizeof err);
		ck_assert_msg(c99 != NULL, "%s", err);
	}
	ck_assert_int_eq(gwt_apply(h, &deb_desc, &d, gwt_change(c99), &next), -1);
	ck_assert_str_eq(gwt_host_error(h), "99 items refused");
	ck_assert_int_eq(next, 1600);
	ck_assert_int_eq(gwt_tick_until(h, &deb_desc, &d, next, 2000), -1);
	ck_assert_str_eq(gwt_host_log(h), "info reload at 1600\nwarn tick(): reload was slow\n");
	ck_assert_str_eq(gwt_host_error(h), "99 items refused");
	gwt_change_free(c);
	gwt_change_free(c99);
	gwt_host_free(h);
}
END_TEST

static void log_long(const struct gw_host *host, const char *text)
{
	host->log(host, GW_LOG_INFO, "%s", text);
}

START_TEST(a_long_log_message_is_cut_and_says_so)
{
	struct gwt_host *h = gwt_host_new("t", NULL);
	char *text = malloc(6001);
	memset(text, 'a', 6000);
	/* a 3-byte character across the cut, which falls at 4096 - 17 bytes (the mark, the NUL) */
	memcpy(text + 4078, "\xe2\x82\xac", 3);
	text[6000] = '\0';
	log_long(gwt_host(h), text);
	const char *log = gwt_host_log(h);
	const char *mark = strstr(log, " ... [truncated]\n");
	ck_assert_ptr_nonnull(mark);
	ck_assert_int_eq(mark[17], '\0');
	/* "info " + the message cut before the character, never through it */
	ck_assert_int_eq(mark - log, 5 + 4078);
	ck_assert_int_eq(mark[-1], 'a');
	gwt_host_clear(h);
	text[100] = '\0';
	log_long(gwt_host(h), text);
	ck_assert_ptr_null(strstr(gwt_host_log(h), "truncated"));
	free(text);
	gwt_host_free(h);
}
END_TEST

/* ------------------------------------------------------------ the upstreams plugin */

static const char divide_selector[] =
    "[{\"id\":\"s1\",\"pluginName\":\"divide\",\"name\":\"/order\","
    "\"handle\":\"[{\\\"upstreamUrl\\\":\\\"10.0.0.1:8080\\\",\\\"weight\\\":50}]\"},"
    "{\"id\":\"s2\",\"pluginName\":\"waf\",\"name\":\"/waf\"}]";
static const char discovery[] =
    "[{\"selectorId\":\"s1\",\"pluginName\":\"divide\",\"upstreamDataList\":["
    "{\"url\":\"10.0.0.2:8080\",\"status\":0,\"weight\":50},"
    "{\"url\":\"10.0.0.3:8080\",\"status\":1,\"weight\":50}]}]";

/* Start the plugin with `groups` synced (NULL: an older agent's host) and deliver what the
 * agent delivers at start, in its order: PLUGIN, SELECTOR, RULE, then DISCOVER_UPSTREAM when
 * synced (an older agent delivers it too when configured: `discover`). */
static void start(const enum gw_group *groups, size_t n, int discover, char **out, char **writes)
{
	const struct gw_subscriber *d = gwsync_subscriber();
	struct gwt_host *h = gwt_host_new("ups", d->options);
	if (groups)
		ck_assert_int_eq(gwt_host_set_groups(h, groups, n), 0);
	else
		gwt_host_set_size(h, offsetof(struct gw_host, group_configured));
	char *dir = test_tmpdir(), yaml[9000], path[4200];
	snprintf(yaml, sizeof yaml, "out: %s/out\nwrites: %s/writes\n", dir, dir);
	struct gwt_config *cfg = gwt_config_parse(yaml, err, sizeof err);
	ck_assert_int_eq(gwt_config_check(cfg, d->options, err, sizeof err), 0);
	void *state = NULL;
	ck_assert_int_eq(d->init(gwt_host(h), gwt_config(cfg), &state), 0);
	struct {
		enum gw_group g;
		const char *items;
	} seq[] = {{GW_GROUP_PLUGIN, "[{\"id\":\"5\",\"name\":\"divide\"}]"},
	           {GW_GROUP_SELECTOR, divide_selector},
	           {GW_GROUP_RULE, "[]"},
	           {GW_GROUP_DISCOVER_UPSTREAM, discovery}};
	for (size_t i = 0; i < 4; i++) {
		if (seq[i].g == GW_GROUP_DISCOVER_UPSTREAM && !discover)
			continue;
		struct gwt_change *c =
		    gwt_change_new(seq[i].g, NULL, seq[i].items, err, sizeof err);
		ck_assert_msg(c != NULL, "%s", err);
		ck_assert_int_eq(gwt_apply(h, d, state, gwt_change(c), NULL), 0);
		gwt_change_free(c);
	}
	d->fini(state, gwt_host(h));
	snprintf(path, sizeof path, "%s/out", dir);
	*out = slurp(path, NULL);
	snprintf(path, sizeof path, "%s/writes", dir);
	*writes = slurp(path, NULL);
	gwt_config_free(cfg);
	gwt_host_free(h);
	rm_rf(dir);
	free(dir);
}

START_TEST(a_plugin_that_knows_the_synced_groups_writes_once_at_start)
{
	char *out, *writes;
	enum gw_group with[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE,
	                        GW_GROUP_DISCOVER_UPSTREAM};
	start(with, 4, 1, &out, &writes);
	ck_assert_str_eq(out, "s1 10.0.0.2:8080\n"); /* discovery's, the one that is up */
	ck_assert_str_eq(writes, "write 1 discovery\n");
	free(out);
	free(writes);

	start(with, 3, 0, &out, &writes);            /* DISCOVER_UPSTREAM not synced */
	ck_assert_str_eq(out, "s1 10.0.0.1:8080\n"); /* the handle's */
	ck_assert_str_eq(writes, "write 1 handle\n");
	free(out);
	free(writes);

	/* an older agent cannot say: the plugin writes twice, the first time from the handle */
	start(NULL, 0, 1, &out, &writes);
	ck_assert_str_eq(out, "s1 10.0.0.2:8080\n");
	ck_assert_str_eq(writes, "write 1 handle\nwrite 2 discovery\n");
	free(out);
	free(writes);
}
END_TEST

/* ------------------------------------------------------------ a .so and its instances */

/* The recorder test plugin (recorder.c) as it is built: one line per apply() it was given,
 * told to refuse while a file exists. The kit opens it, starts it from YAML, delivers
 * version after version with the delta from the last accepted one, as the agent does. */
START_TEST(an_instance_is_started_delivered_to_and_stopped_as_the_agent_does)
{
	char *missing = build_path("tests/unit/.libs/no-such-plugin.so");
	ck_assert_ptr_null(gwt_plugin_open(missing, err, sizeof err));
	ck_assert_ptr_nonnull(strstr(err, "no-such-plugin.so"));
	free(missing);
	char *path = build_path("tests/unit/.libs/nosymbol.so");
	ck_assert_ptr_null(gwt_plugin_open(path, err, sizeof err));
	ck_assert_msg(strstr(err, "no gwsync_subscriber() in it"), "%s", err);
	free(path);
	path = build_path("tests/unit/.libs/recorder.so");
	struct gwt_plugin *so = gwt_plugin_open(path, err, sizeof err);
	ck_assert_msg(so != NULL, "%s", err);
	free(path);
	const struct gw_subscriber *rec = gwt_plugin_desc(so);
	ck_assert_str_eq(rec->name, "recorder");

	char *dir = test_tmpdir(), out[600], fail[600], yaml[1400];
	snprintf(out, sizeof out, "%s/out.txt", dir);
	snprintf(fail, sizeof fail, "%s/fail", dir);
	/* a bad option is the agent's message; a refused init() says so with its reason */
	ck_assert_ptr_null(gwt_instance_start(rec, "r", "fail_init: maybe\n", err, sizeof err));
	ck_assert_msg(strstr(err, "fail_init"), "%s", err);
	snprintf(yaml, sizeof yaml, "out: %s\nfail_init: true\n", out);
	ck_assert_ptr_null(gwt_instance_start(rec, "r", yaml, err, sizeof err));
	ck_assert_str_eq(err, "init() failed: told to fail in init");

	snprintf(yaml, sizeof yaml, "out: %s\nfail_if_exists: %s\n", out, fail);
	struct gwt_instance *in = gwt_instance_start(rec, "r", yaml, err, sizeof err);
	ck_assert_msg(in != NULL, "%s", err);
	ck_assert_ptr_nonnull(gwt_instance_host(in));
	ck_assert_ptr_nonnull(gwt_instance_state(in));
	ck_assert_ptr_null(gwt_instance_accepted(in, GW_GROUP_RULE));
	struct gwt_version *v =
	    gwt_version_new(GW_GROUP_RULE, "v1", 1, "[{\"id\":\"a\"}]", err, sizeof err);
	ck_assert_int_eq(gwt_version_group(v), GW_GROUP_RULE);
	ck_assert_int_eq(gwt_instance_deliver(in, v, NULL, err, sizeof err), 0);
	ck_assert_str_eq(gwt_version_md5(gwt_instance_accepted(in, GW_GROUP_RULE)), "v1");
	/* refused: forgotten, its reason in err; the retry's delta is from v1 again */
	close(creat(fail, 0600));
	v = gwt_version_new(GW_GROUP_RULE, "v2", 2, "[{\"id\":\"b\"}]", err, sizeof err);
	ck_assert_int_eq(gwt_instance_deliver(in, v, NULL, err, sizeof err), 1);
	ck_assert_msg(strstr(err, "told to fail by"), "%s", err);
	ck_assert_str_eq(gwt_version_md5(gwt_instance_accepted(in, GW_GROUP_RULE)), "v1");
	unlink(fail);
	v = gwt_version_new(GW_GROUP_RULE, "v3", 3, "[{\"id\":\"b\"}]", err, sizeof err);
	ck_assert_int_eq(gwt_instance_deliver(in, v, NULL, err, sizeof err), 0);
	ck_assert_str_eq(gwt_version_md5(gwt_instance_accepted(in, GW_GROUP_RULE)), "v3");
	gwt_instance_stop(in); /* fini() closes the recorder's file */
	char *lines = slurp(out, NULL);
	ck_assert_ptr_nonnull(strstr(lines, "apply RULE md5=v1 prev=- lmt=1 items=1 added=a"));
	ck_assert_ptr_nonnull(strstr(lines, "apply RULE md5=v2 prev=v1 lmt=2 items=1 added=b "
	                                    "updated= removed=a stale=0 fail"));
	ck_assert_ptr_nonnull(strstr(lines, "apply RULE md5=v3 prev=v1 lmt=3 items=1 added=b "
	                                    "updated= removed=a stale=0 ok"));
	free(lines);
	gwt_instance_stop(NULL);
	gwt_plugin_close(so);
	rm_rf(dir);
	free(dir);
}
END_TEST

/* init(), tick() and fini() are optional (subscriber.h): a plugin with apply() alone is
 * started (its state NULL), delivered to and stopped. */
static int only_apply_calls;

static int only_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
	(void)host;
	ck_assert_ptr_null(state);
	only_apply_calls += (int)c->n_added;
	return 0;
}

START_TEST(a_plugin_with_apply_alone_is_started_delivered_to_and_stopped)
{
	static const struct gw_subscriber desc = {GWSYNC_SUBSCRIBER_INIT, .name = "only_apply",
	                                          .apply = only_apply};
	struct gwt_instance *in = gwt_instance_start(&desc, "o", "", err, sizeof err);
	ck_assert_msg(in != NULL, "%s", err);
	ck_assert_ptr_null(gwt_instance_state(in));
	only_apply_calls = 0;
	ck_assert_int_eq(gwt_instance_deliver(in,
	                                      version(GW_GROUP_RULE, "v1", 1, "[{\"id\":\"a\"}]"),
	                                      NULL, err, sizeof err),
	                 0);
	ck_assert_int_eq(only_apply_calls, 1);
	gwt_instance_stop(in);
}
END_TEST

/* The typedsub test plugin as built twice: reading every typed view (typedsub) and asking
 * for them (typedsub_od, GW_SUB_TYPED_ON_DEMAND). The kit delivers as the agent does: the
 * views made for the first, none for the second, whose host->item_typed() gives them. */
static char *typed_run(const char *so_name, const char *dir)
{
	char *path = build_path(so_name);
	struct gwt_plugin *so = gwt_plugin_open(path, err, sizeof err);
	ck_assert_msg(so != NULL, "%s", err);
	free(path);
	char out[600], yaml[700];
	snprintf(out, sizeof out, "%s/%s.txt", dir, gwt_plugin_desc(so)->name);
	snprintf(yaml, sizeof yaml, "out: %s\n", out);
	unlink(out);
	struct gwt_instance *in =
	    gwt_instance_start(gwt_plugin_desc(so), "t", yaml, err, sizeof err);
	ck_assert_msg(in != NULL, "%s", err);
	struct gwt_version *v = version(GW_GROUP_RULE, "v1", 1,
	                                "[{\"id\":\"r1\",\"selectorId\":\"s1\",\"name\":\"n\"},"
	                                "{\"id\":\"r2\",\"selectorId\":\"s2\",\"name\":\"m\"}]");
	ck_assert_int_eq(gwt_instance_deliver(in, v, NULL, err, sizeof err), 0);
	gwt_instance_stop(in);
	gwt_plugin_close(so);
	return slurp(out, NULL);
}

START_TEST(an_on_demand_plugin_gets_no_typed_view_and_asks_for_it)
{
	char *dir = test_tmpdir();
	char *all = typed_run("tests/unit/.libs/typedsub.so", dir);
	ck_assert_str_eq(all, "apply RULE added=2 typed=2 asked=0 first=s1\n");
	char *asked = typed_run("tests/unit/.libs/typedsub_od.so", dir);
	ck_assert_str_eq(asked, "apply RULE added=2 typed=0 asked=2 first=s1\n");
	free(all);
	free(asked);
	rm_rf(dir);
	free(dir);
}
END_TEST

/* A plugin that declared GW_SUB_LISTS_ON_DEMAND and reads through gw_change_entry(), as the
 * plugin guide says, so it also runs on an agent older than host->change_item: what it
 * read, "KEY,KEY,...;items=N" (N: the change's complete list had its entries). */
static char od_seen[256];

static int od_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
	(void)state;
	od_seen[0] = '\0';
	for (size_t i = 0; i < c->n_added; i++) {
		const struct gw_item *it = gw_change_entry(host, c, GW_LIST_ADDED, i);
		size_t n = strlen(od_seen);
		snprintf(od_seen + n, sizeof od_seen - n, "%s%s", i ? "," : "",
		         it ? it->key : "(null)");
	}
	size_t got = 0;
	for (size_t i = 0; i < c->n_items; i++)
		got += gw_change_entry(host, c, GW_LIST_ITEMS, i) != NULL;
	size_t n = strlen(od_seen);
	snprintf(od_seen + n, sizeof od_seen - n, ";items=%zu", got);
	return 0;
}

/* The kit hands an on-demand plugin empty lists only when its host table has
 * change_item: one made to look like an older agent's (gwt_host_set_size) fills them, as
 * that agent does (it ignores the flag), so the plugin's fallback is tested too. */
START_TEST(an_on_demand_plugin_reads_its_items_from_this_agent_and_an_older_one)
{
	static const struct gw_subscriber desc = {GWSYNC_SUBSCRIBER_INIT, .name = "od",
	                                          .apply = od_apply,
	                                          .flags = GW_SUB_LISTS_ON_DEMAND};
	struct gwt_change *c =
	    gwt_change_new(GW_GROUP_RULE, NULL, "[{\"id\":\"r2\"},{\"id\":\"r1\"},{\"id\":\"r3\"}]",
	                   err, sizeof err);
	ck_assert_msg(c != NULL, "%s", err);
	struct gwt_host *h = gwt_host_new("od", NULL);
	ck_assert_int_eq(gwt_apply(h, &desc, NULL, gwt_change(c), NULL), 0);
	ck_assert_str_eq(od_seen, "r1,r2,r3;items=3");
	gwt_host_set_size(h, offsetof(struct gw_host, change_item));
	ck_assert(!GW_HAS(gwt_host(h), change_item));
	ck_assert_int_eq(gwt_apply(h, &desc, NULL, gwt_change(c), NULL), 0);
	ck_assert_str_eq(od_seen, "r1,r2,r3;items=3");
	gwt_host_free(h);
	gwt_change_free(c);
}
END_TEST

/* A plugin built against the header from before gw_subscriber.flags reads the lists: its
 * description ends before `flags` (whatever follows it in memory is not its), so it is
 * handed the filled lists even when those bytes look like GW_SUB_LISTS_ON_DEMAND. */
static int lists_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
	(void)state;
	(void)host;
	od_seen[0] = '\0';
	for (size_t i = 0; i < c->n_added; i++) {
		size_t n = strlen(od_seen);
		snprintf(od_seen + n, sizeof od_seen - n, "%s%s", i ? "," : "",
		         c->added[i] ? c->added[i]->key : "(null)");
	}
	return 0;
}

START_TEST(a_plugin_from_before_flags_is_handed_the_lists)
{
	static const struct gw_subscriber desc = {.abi = GWSYNC_SUBSCRIBER_ABI,
	                                          .size = offsetof(struct gw_subscriber, flags),
	                                          .name = "old",
	                                          .apply = lists_apply,
	                                          .flags = GW_SUB_LISTS_ON_DEMAND};
	struct gwt_change *c = gwt_change_new(GW_GROUP_RULE, NULL,
	                                      "[{\"id\":\"r2\"},{\"id\":\"r1\"}]", err, sizeof err);
	ck_assert_msg(c != NULL, "%s", err);
	struct gwt_host *h = gwt_host_new("old", NULL);
	ck_assert_int_eq(gwt_apply(h, &desc, NULL, gwt_change(c), NULL), 0);
	ck_assert_str_eq(od_seen, "r1,r2");
	gwt_host_free(h);
	gwt_change_free(c);
}
END_TEST

/* subscriber.h fixes the synced groups from init() on, so a plugin checks them there: one
 * that needs APP_AUTH refuses to start without it. The kit sets them before init(). */
static int needs_app_auth_init(const struct gw_host *host, const struct gw_config *config,
                               void **state)
{
	(void)config;
	(void)state;
	if (!host->group_configured(host, GW_GROUP_APP_AUTH)) {
		host->error(host, "APP_AUTH is not among the synced groups");
		return -1;
	}
	return 0;
}

START_TEST(init_sees_the_synced_groups_given_before_it)
{
	static const struct gw_subscriber desc = {GWSYNC_SUBSCRIBER_INIT, .name = "needs_app_auth",
	                                          .init = needs_app_auth_init, .apply = only_apply};
	enum gw_group without[] = {GW_GROUP_SELECTOR, GW_GROUP_RULE};
	ck_assert_ptr_null(gwt_instance_start_groups(&desc, "n", "", without, 2, err, sizeof err));
	ck_assert_str_eq(err, "init() failed: APP_AUTH is not among the synced groups");
	enum gw_group with[] = {GW_GROUP_APP_AUTH};
	struct gwt_instance *in =
	    gwt_instance_start_groups(&desc, "n", "", with, 1, err, sizeof err);
	ck_assert_msg(in != NULL, "%s", err);
	enum gw_group got[4];
	const struct gw_host *host = gwt_host(gwt_instance_host(in));
	ck_assert_uint_eq(host->configured_groups(host, got, 4), 1);
	ck_assert_int_eq(got[0], GW_GROUP_APP_AUTH);
	gwt_instance_stop(in);
	/* NULL: the default groups, APP_AUTH among them */
	in = gwt_instance_start_groups(&desc, "n", "", NULL, 0, err, sizeof err);
	ck_assert_msg(in != NULL, "%s", err);
	gwt_instance_stop(in);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sdk kit");
	TCase *tc = tcase_create("kit");
	tcase_add_test(tc, versions_carry_their_own_md5_and_time_and_any_two_make_a_change);
	tcase_add_test(tc, a_stale_version_then_the_same_data_confirmed_only);
	tcase_add_test(tc, a_group_the_header_does_not_know);
	tcase_add_test(tc, the_synced_groups_default_set_and_an_older_agent_without_them);
	tcase_add_test(tc, tick_runs_on_a_fake_clock_as_the_dispatcher_drives_it);
	tcase_add_test(tc, a_long_log_message_is_cut_and_says_so);
	tcase_add_test(tc, a_plugin_that_knows_the_synced_groups_writes_once_at_start);
	tcase_add_test(tc, an_instance_is_started_delivered_to_and_stopped_as_the_agent_does);
	tcase_add_test(tc, a_plugin_with_apply_alone_is_started_delivered_to_and_stopped);
	tcase_add_test(tc, an_on_demand_plugin_gets_no_typed_view_and_asks_for_it);
	tcase_add_test(tc, init_sees_the_synced_groups_given_before_it);
	tcase_add_test(tc, an_on_demand_plugin_reads_its_items_from_this_agent_and_an_older_one);
	tcase_add_test(tc, a_plugin_from_before_flags_is_handed_the_lists);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
