/*
 * counter: the complete minimal gwsync subscriber from docs/plugin-guide.md.
 *
 * It counts the items it is told were added, updated and removed, and every `every`
 * changes (default 1) logs the totals. Everything a real plugin needs is here: the one
 * exported entry point, a private state built from the plugin's own options in init(),
 * apply() reading the delta, fini() freeing the state. No globals, no threads, no locks:
 * gwsyncd never calls a plugin from two threads at once.
 *
 * Build:  cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags gwsync) \
 *            -o counter.so counter.c
 */
#include <gwsync/subscriber.h>
#include <stdlib.h>

struct counter {
	int64_t every;
	int64_t changes;
	size_t added, updated, removed;
};

static int counter_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct counter *c = calloc(1, sizeof *c);
	if (!c) {
		host->error(host, "out of memory");
		return -1;
	}
	/* The agent has checked the value against the declaration below and fills in its
	 * default; INVALID cannot happen then, but costs nothing to handle. */
	if (host->config_int(host, config, "every", &c->every) == GW_CONFIG_INVALID) {
		free(c);
		return -1;
	}
	if (c->every < 1) {
		host->error(host, "every: must be at least 1, got %lld", (long long)c->every);
		free(c);
		return -1;
	}
	*state = c;
	return 0;
}

static int counter_apply(void *state, const struct gw_host *host, const struct gw_change *change)
{
	struct counter *c = state;
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
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &counter;
}
