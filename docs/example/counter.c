/*
 * counter: the complete gwsync subscriber from docs/plugin-guide.md.
 *
 * It counts the items it is told were added, updated and removed, and every `every`
 * changes (default 1) logs the totals. Everything a real plugin needs is here: the one
 * exported entry point, a private state built from the plugin's own options in init(),
 * apply() reading the delta, fini() freeing the state. No globals, no threads, no locks:
 * gwsyncd never calls a plugin from two threads at once. And the four things a plugin
 * usually needs beyond that, each tested in test_counter.c:
 *   - a check of the synced groups in init() (`require`: refuse to start without them);
 *   - typed views on demand (GW_SUB_TYPED_ON_DEMAND): it reads a rule's selectorId
 *     through host->item_typed(), so the agent keeps no view for it otherwise;
 *   - stale data (the agent's snapshot, no admin yet) and the confirmed_only change that
 *     follows when an admin serves the same data: counted as neither, only logged.
 *
 * Build:  cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags gwsync) \
 *            -o counter.so counter.c
 */
#include <gwsync/subscriber.h>
#include <stdlib.h>
#include <string.h>

struct counter {
	int64_t every;
	int64_t changes;
	size_t added, updated, removed;
};

/* Every group named in `require` must be one the agent syncs (host->group_configured(),
 * fixed from init() on): a group that is not synced never arrives, so refuse now, at
 * `gwsyncd --check`, rather than wait for it for ever. 0, or -1 after host->error(). */
static int check_required(const struct gw_host *host, const struct gw_config *config)
{
	const char *name;
	if (!GW_HAS(host, group_configured))
		return 0; /* an older agent cannot say: nothing to check */
	for (size_t i = 0;
	     host->config_list_item(host, config, "require", i, &name) == GW_CONFIG_OK; i++) {
		int g = 0, count = host->group_count(host);
		while (g < count && strcmp(host->group_name(host, (enum gw_group)g), name) != 0)
			g++;
		if (g == count) {
			host->error(host, "require: unknown group '%s'", name);
			return -1;
		}
		if (!host->group_configured(host, (enum gw_group)g)) {
			host->error(host, "require: %s is not among the groups the agent syncs",
			            name);
			return -1;
		}
	}
	return 0;
}

static int counter_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	/* The agent has checked the value against the declaration below and fills in its
	 * default; INVALID cannot happen then, but costs nothing to handle. */
	int64_t every = 1;
	if (host->config_int(host, config, "every", &every) == GW_CONFIG_INVALID)
		return -1;
	if (every < 1) {
		host->error(host, "every: must be at least 1, got %lld", (long long)every);
		return -1;
	}
	if (check_required(host, config) != 0)
		return -1;
	struct counter *c = calloc(1, sizeof *c);
	if (!c) {
		host->error(host, "out of memory");
		return -1;
	}
	c->every = every;
	*state = c;
	return 0;
}

/* A rule's selector, from its typed view: asked for (the items come without one, as this
 * plugin declared GW_SUB_TYPED_ON_DEMAND), valid until apply() returns. */
static void log_rule(const struct gw_host *host, const struct gw_item *it)
{
	const struct gw_item *typed = GW_HAS(host, item_typed) ? host->item_typed(host, it) : it;
	if (typed && typed->rule && typed->rule->selector_id)
		host->log(host, GW_LOG_DEBUG, "rule %s in selector %s", it->key,
		          typed->rule->selector_id);
}

static int counter_apply(void *state, const struct gw_host *host, const struct gw_change *change)
{
	struct counter *c = state;
	if (change->confirmed_only) {
		/* the same data as before, now from an admin: nothing to apply */
		host->log(host, GW_LOG_INFO, "%s %s confirmed by an admin", change->group_name,
		          change->version.md5);
		return 0;
	}
	if (change->stale)
		host->log(host, GW_LOG_INFO, "%s %s is the agent's snapshot, not yet confirmed",
		          change->group_name, change->version.md5);
	if (change->group == GW_GROUP_RULE)
		for (size_t i = 0; i < change->n_added; i++)
			log_rule(host, change->added[i]);
	/* The change is only valid during this call; counting needs nothing kept. */
	c->added += change->n_added;
	c->updated += change->n_updated;
	c->removed += change->n_removed;
	if (++c->changes % c->every == 0)
		host->log(host, GW_LOG_INFO, "%lld changes: +%zu ~%zu -%zu (last: %s %s)",
		          (long long)c->changes, c->added, c->updated, c->removed,
		          change->group_name, change->version.md5);
	return 0; /* non-zero (after host->error()) would reject it: the agent retries later */
}

static void counter_fini(void *state, const struct gw_host *host)
{
	(void)host; /* every callback gets the host table; this one needs nothing from it */
	free(state);
}

/* Declared options: the agent checks `config:` against these (unknown keys, types) before
 * init(), and `gwsyncd --plugin-help counter` prints them. */
static const struct gw_option counter_options[] = {
    {"every", GW_OPT_INT, "1", 0, "log the totals every this many changes"},
    {"require", GW_OPT_LIST, NULL, 0, "groups the agent must sync, or start-up fails"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gw_subscriber counter = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "counter",
    .description = "counts the items added, updated and removed, and logs the totals",
    .options = counter_options,
    .init = counter_init,
    .apply = counter_apply,
    .fini = counter_fini,
    .flags = GW_SUB_TYPED_ON_DEMAND, /* typed views only through host->item_typed() */
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &counter;
}
