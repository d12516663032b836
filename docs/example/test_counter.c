/*
 * The counter plugin's unit test: it calls the plugin's callbacks directly, with a config
 * built from YAML text and changes built from two item lists by the gwsync testing library
 * (gwsync/testing.h), so it checks the plugin, not a re-implementation of the agent. Then
 * it runs instances of the plugin as the agent runs one (gwt_instance_*): started with the
 * groups the agent syncs (its check of them in init()), delivered version after version
 * (the typed views it asks for, as the agent gives them to an on-demand plugin), and the
 * agent's snapshot data (stale) followed by an admin confirming it (confirmed_only).
 *
 * Build: cc test_counter.c counter.c $(pkg-config --cflags --libs gwsync-testing)
 */
#include <gwsync/testing.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static const char v1[] = "[{\"id\":\"a\",\"name\":\"first\"},{\"id\":\"b\",\"name\":\"second\"}]";
static const char v2[] =
    "[{\"id\":\"b\",\"name\":\"second, changed\"},{\"id\":\"c\",\"name\":\"third\"}]";

/* The agent checks config: against the declared options before init(): a typo is refused. */
static void options_are_declared(const struct gw_subscriber *d)
{
	char err[512] = "";
	struct gwt_config *cfg = gwt_config_parse("evry: 2\n", err, sizeof err);
	CHECK(cfg != NULL);
	CHECK(gwt_config_check(cfg, d->options, err, sizeof err) == -1);
	CHECK(strstr(err, "test.yaml:1:1") && strstr(err, "did you mean 'every'"));
	gwt_config_free(cfg);
}

/* every: 2 -> the totals are logged after the second change: 3 added, 1 updated, 1 removed. */
static void counts_and_logs(const struct gw_subscriber *d)
{
	char err[512] = "";
	struct gwt_config *cfg = gwt_config_parse("every: 2\n", err, sizeof err);
	struct gwt_host *h = gwt_host_new("counting", d->options);
	void *state = NULL;
	CHECK(d->init(gwt_host(h), gwt_config(cfg), &state) == 0);

	struct gwt_change *c1 = gwt_change_new(GW_GROUP_META_DATA, NULL, v1, err, sizeof err);
	struct gwt_change *c2 = gwt_change_new(GW_GROUP_META_DATA, v1, v2, err, sizeof err);
	CHECK(c1 && c2);
	if (!c1 || !c2)
		fprintf(stderr, "gwt_change_new: %s\n", err);
	if (c1 && c2) {
		CHECK(gwt_change(c1)->n_added == 2 && gwt_change(c1)->previous.md5 == NULL);
		CHECK(d->apply(state, gwt_host(h), gwt_change(c1)) == 0);
		CHECK(strcmp(gwt_host_log(h), "") == 0); /* not yet: every 2 */
		CHECK(d->apply(state, gwt_host(h), gwt_change(c2)) == 0);
		CHECK(strstr(gwt_host_log(h), "2 changes: +3 ~1 -1") != NULL);
	}
	d->fini(state, gwt_host(h));
	gwt_change_free(c1);
	gwt_change_free(c2);
	gwt_host_free(h);
	gwt_config_free(cfg);
}

/* The declared default (every: 1) applies when the key is absent; 0 is refused by init(). */
static void default_and_bad_value(const struct gw_subscriber *d)
{
	char err[512] = "";
	struct gwt_config *none = gwt_config_parse("", err, sizeof err);
	struct gwt_host *h = gwt_host_new("counting", d->options);
	void *state = NULL;
	CHECK(d->init(gwt_host(h), gwt_config(none), &state) == 0);
	struct gwt_change *c = gwt_change_new(GW_GROUP_META_DATA, NULL, v1, err, sizeof err);
	CHECK(c && d->apply(state, gwt_host(h), gwt_change(c)) == 0);
	CHECK(strstr(gwt_host_log(h), "1 changes: +2 ~0 -0") != NULL);
	d->fini(state, gwt_host(h));
	gwt_change_free(c);

	struct gwt_config *zero = gwt_config_parse("every: 0\n", err, sizeof err);
	CHECK(d->init(gwt_host(h), gwt_config(zero), &state) != 0);
	CHECK(strstr(gwt_host_error(h), "at least 1") != NULL);
	gwt_config_free(zero);
	gwt_config_free(none);
	gwt_host_free(h);
}

/* `require`: init() refuses to start when a group it needs is not synced. The agent fixes
 * the synced groups from init() on, so the kit sets them before it. */
static void refuses_without_the_groups_it_requires(const struct gw_subscriber *d)
{
	char err[512] = "";
	enum gw_group rules_only[] = {GW_GROUP_SELECTOR, GW_GROUP_RULE};
	struct gwt_instance *in = gwt_instance_start_groups(d, "counting", "require: [APP_AUTH]\n",
	                                                    rules_only, 2, err, sizeof err);
	CHECK(in == NULL);
	CHECK(strcmp(err, "init() failed: require: APP_AUTH is not among the groups the agent "
	                  "syncs") == 0);
	enum gw_group with[] = {GW_GROUP_RULE, GW_GROUP_APP_AUTH};
	in = gwt_instance_start_groups(d, "counting", "require: [APP_AUTH]\n", with, 2, err,
	                               sizeof err);
	CHECK(in != NULL);
	gwt_instance_stop(in);
	CHECK(gwt_instance_start(d, "counting", "require: [APP_AUTHH]\n", err, sizeof err) == NULL);
	CHECK(strstr(err, "unknown group 'APP_AUTHH'") != NULL);
}

/* GW_SUB_TYPED_ON_DEMAND: the items come without their typed view, as the agent delivers
 * them; the plugin asks host->item_typed() for a rule's selectorId. */
static void asks_for_the_typed_views_it_reads(const struct gw_subscriber *d)
{
	char err[512] = "";
	struct gwt_instance *in = gwt_instance_start(d, "counting", "", err, sizeof err);
	CHECK(in != NULL);
	if (!in)
		return;
	struct gwt_version *v = gwt_version_new(
	    GW_GROUP_RULE, "r1", 1, "[{\"id\":\"r1\",\"selectorId\":\"s1\",\"name\":\"/a\"}]", err,
	    sizeof err);
	CHECK(gwt_instance_deliver(in, v, NULL, err, sizeof err) == 0);
	CHECK(strstr(gwt_host_log(gwt_instance_host(in)), "rule r1 in selector s1") != NULL);
	gwt_instance_stop(in);
}

/* The agent's snapshot (no admin yet) is delivered stale; an admin serving the same data
 * then sends confirmed_only, which is no change to count. */
static void stale_data_then_confirmed(const struct gw_subscriber *d)
{
	char err[512] = "";
	struct gwt_instance *in = gwt_instance_start(d, "counting", "", err, sizeof err);
	CHECK(in != NULL);
	if (!in)
		return;
	struct gwt_host *h = gwt_instance_host(in);
	struct gwt_version *snap =
	    gwt_version_new(GW_GROUP_META_DATA, "m1", 1, v1, err, sizeof err);
	gwt_version_set_stale(snap, 1);
	CHECK(gwt_instance_deliver(in, snap, NULL, err, sizeof err) == 0);
	CHECK(strstr(gwt_host_log(h), "META_DATA m1 is the agent's snapshot") != NULL);
	CHECK(strstr(gwt_host_log(h), "1 changes: +2 ~0 -0") != NULL);
	gwt_host_clear(h);
	struct gwt_version *same =
	    gwt_version_new(GW_GROUP_META_DATA, "m1", 1, v1, err, sizeof err);
	CHECK(gwt_instance_deliver(in, same, NULL, err, sizeof err) == 0);
	CHECK(strstr(gwt_host_log(h), "META_DATA m1 confirmed by an admin") != NULL);
	CHECK(strstr(gwt_host_log(h), "changes:") == NULL); /* not counted */
	gwt_instance_stop(in);
}

int main(void)
{
	const struct gw_subscriber *d = gwsync_subscriber();
	options_are_declared(d);
	counts_and_logs(d);
	default_and_bad_value(d);
	refuses_without_the_groups_it_requires(d);
	asks_for_the_typed_views_it_reads(d);
	stale_data_then_confirmed(d);
	if (failures)
		fprintf(stderr, "test_counter: %d check(s) failed\n", failures);
	else
		printf("test_counter: all checks passed\n");
	return failures ? 1 : 0;
}
