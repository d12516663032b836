/*
 * A test subscriber that writes down everything it is given, one line per event, to the
 * file named by its `out` option, so tests (in this process or another) can check exactly
 * which changes a subscriber saw and in which order:
 *
 *   begin GROUP MD5
 *   apply GROUP md5=MD5 prev=MD5|- lmt=N items=K added=a,b updated=c removed=d stale=0 ok|fail
 *   tick
 *   fini
 *
 * Options, to make it misbehave on purpose:
 *   out: PATH             where to write (required)
 *   delay: DURATION       sleep this long inside apply() (a slow plugin)
 *   fail_if_exists: PATH  reject every change while PATH exists (a failing plugin)
 *   fail_init: BOOL       make init() fail
 *   tick_every: DURATION  ask for tick() this often (0: never)
 * Built only for `make check` (a check_LTLIBRARIES module); never installed.
 *
 * Built with -DRECORDER_LISTS_ON_DEMAND (recorder_od.la) it declares GW_SUB_LISTS_ON_DEMAND
 * and reads every list through host->change_item(), writing the same lines plus
 *   items KEY,KEY,...      (the complete list, in its order)
 * and "lists-not-empty" or "change_item-past-the-end" when the agent breaks the contract.
 */
#include <gwsync/subscriber.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct recorder {
	const struct gw_host *host;
	FILE *out;
	int64_t delay_ms;
	int64_t tick_every_ms;
	char *fail_path;
};

static void rec_fini(void *state, const struct gw_host *host);

static int rec_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct recorder *r = calloc(1, sizeof *r);
	if (!r)
		return -1;
	r->host = host;
	const char *out = NULL, *fail_path = NULL;
	int fail_init = 0;
	if (host->config_string(host, config, "out", &out) == GW_CONFIG_INVALID ||
	    host->config_string(host, config, "fail_if_exists", &fail_path) == GW_CONFIG_INVALID ||
	    host->config_duration_ms(host, config, "delay", &r->delay_ms) == GW_CONFIG_INVALID ||
	    host->config_duration_ms(host, config, "tick_every", &r->tick_every_ms) ==
	        GW_CONFIG_INVALID ||
	    host->config_bool(host, config, "fail_init", &fail_init) == GW_CONFIG_INVALID) {
		rec_fini(r, host);
		return -1;
	}
	if (!out) {
		host->error(host, "out: required");
		rec_fini(r, host);
		return -1;
	}
	r->out = fopen(out, "a");
	if (!r->out) {
		host->error(host, "cannot open %s", out);
		rec_fini(r, host);
		return -1;
	}
	setvbuf(r->out, NULL, _IOLBF, 0);
	if (fail_path)
		r->fail_path = strdup(fail_path);
	if (fail_init) {
		host->error(host, "told to fail in init");
		fprintf(r->out, "init-failed\n");
		rec_fini(r, host);
		return 1;
	}
	fprintf(r->out, "init %s\n", host->instance);
	*state = r;
	return 0;
}

#ifdef RECORDER_LISTS_ON_DEMAND
#define RECORDER_FLAGS GW_SUB_LISTS_ON_DEMAND
#else
#define RECORDER_FLAGS 0u
#endif

/* Entry i of a list: through host->change_item() when the plugin declared the flag. */
static const struct gw_item *entry(const struct gw_host *host, const struct gw_change *ch,
                                   enum gw_list list, size_t i)
{
	return RECORDER_FLAGS ? host->change_item(host, ch, list, i)
	                      : gw_change_list_entry(ch, list, i);
}

static void keys(FILE *f, const struct gw_host *host, const struct gw_change *ch, const char *label,
                 enum gw_list list, size_t n)
{
	fprintf(f, " %s=", label);
	for (size_t i = 0; i < n; i++) {
		const struct gw_item *it = entry(host, ch, list, i);
		fprintf(f, "%s%s", i ? "," : "", it ? it->key : "(null)");
	}
}

/* The on-demand contract: the lists handed over are empty (never NULL), change_item()
 * stops at each count. */
static void check_on_demand(FILE *f, const struct gw_host *host, const struct gw_change *ch)
{
	if (!ch->items || !ch->added || !ch->removed || !ch->updated ||
	    (ch->n_items && ch->items[0]) || (ch->n_added && ch->added[0]) ||
	    (ch->n_removed && ch->removed[0]) || (ch->n_updated && ch->updated[0].new_item))
		fprintf(f, "lists-not-empty\n");
	if (host->change_item(host, ch, GW_LIST_ITEMS, ch->n_items) ||
	    host->change_item(host, ch, GW_LIST_ADDED, ch->n_added) ||
	    host->change_item(host, ch, GW_LIST_REMOVED, ch->n_removed) ||
	    host->change_item(host, ch, GW_LIST_UPDATED_OLD, ch->n_updated) ||
	    host->change_item(host, ch, GW_LIST_UPDATED_NEW, ch->n_updated))
		fprintf(f, "change_item-past-the-end\n");
	fprintf(f, "items");
	keys(f, host, ch, "keys", GW_LIST_ITEMS, ch->n_items);
	fprintf(f, "\n");
}

static int rec_apply(void *state, const struct gw_host *host, const struct gw_change *ch)
{
	struct recorder *r = state;
	fprintf(r->out, "begin %s %s\n", ch->group_name, ch->version.md5);
	if (r->delay_ms > 0) {
		struct timespec ts = {(time_t)(r->delay_ms / 1000),
		                      (long)(r->delay_ms % 1000) * 1000000};
		nanosleep(&ts, NULL);
	}
	int fail = r->fail_path && access(r->fail_path, F_OK) == 0;

	fprintf(r->out, "apply %s md5=%s prev=%s lmt=%lld items=%zu", ch->group_name,
	        ch->version.md5, ch->previous.md5 ? ch->previous.md5 : "-",
	        (long long)ch->version.last_modify_time, ch->n_items);
	keys(r->out, host, ch, "added", GW_LIST_ADDED, ch->n_added);
	keys(r->out, host, ch, "updated", GW_LIST_UPDATED_NEW, ch->n_updated);
	keys(r->out, host, ch, "removed", GW_LIST_REMOVED, ch->n_removed);
	fprintf(r->out, " stale=%d%s %s\n", ch->stale, ch->confirmed_only ? " confirmed" : "",
	        fail ? "fail" : "ok");
	if (RECORDER_FLAGS)
		check_on_demand(r->out, host, ch);
	if (fail) {
		r->host->error(r->host, "told to fail by %s", r->fail_path);
		return 1;
	}
	return 0;
}

static int64_t rec_tick(void *state, const struct gw_host *host, int64_t now_ms)
{
	struct recorder *r = state;
	if (r->tick_every_ms <= 0)
		return -1;
	fprintf(r->out, "tick\n");
	return now_ms + r->tick_every_ms;
}

static void rec_fini(void *state, const struct gw_host *host)
{
	struct recorder *r = state;
	if (!r)
		return;
	if (r->out) {
		fprintf(r->out, "fini\n");
		fclose(r->out);
	}
	free(r->fail_path);
	free(r);
}

static const struct gw_option rec_options[] = {
    {"out", GW_OPT_PATH, NULL, 1, "where to write"},
    {"delay", GW_OPT_DURATION, NULL, 0, "sleep this long inside apply()"},
    {"fail_if_exists", GW_OPT_PATH, NULL, 0, "reject every change while this file exists"},
    {"fail_init", GW_OPT_BOOL, "false", 0, "make init() fail"},
    {"tick_every", GW_OPT_DURATION, NULL, 0, "ask for tick() this often"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gw_subscriber recorder = {
    GWSYNC_SUBSCRIBER_INIT, .name = "recorder", .options = rec_options, .init = rec_init,
    .apply = rec_apply,     .tick = rec_tick,   .fini = rec_fini,       .flags = RECORDER_FLAGS,
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &recorder;
}
