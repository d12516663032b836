/*
 * The host table (see host.h): logging tagged with the instance name, error capture, the
 * config getters with the plugin's declared defaults, the clock, the group names and the
 * groups the agent syncs.
 */
#include "deliver/host.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "deliver/plugin_config.h"
#include "model/groups.h"
#include "model/typed.h"

#ifdef HAVE_CONFIG_H
#include <config.h> /* the build's PACKAGE_VERSION (angle brackets: not agent/config.h) */
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

static void host_logv(const struct gw_host *host, enum gw_log_level level, const char *fmt,
                      va_list ap)
{
	struct host_ctx *c = host_ctx_of(host);
	if (level < GW_LOG_ERROR)
		level = GW_LOG_ERROR;
	if (level > GW_LOG_DEBUG)
		level = GW_LOG_DEBUG;
	/* An error logged during init() (the config getters report bad values this way) is
	 * the start-up error's reason unless the plugin calls host->error() itself. */
	if (c->in_init && level == GW_LOG_ERROR && !c->error[0]) {
		va_list copy;
		va_copy(copy, ap);
		vsnprintf(c->error, sizeof c->error, fmt, copy);
		va_end(copy);
	}
	if (!gw_log_enabled(c->log, level))
		return;
	gw_vlogf(c->log, level, c->instance, fmt, ap);
}

static void host_log(const struct gw_host *host, enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	host_logv(host, level, fmt, ap);
	va_end(ap);
}

static void host_errorv(const struct gw_host *host, const char *fmt, va_list ap)
{
	struct host_ctx *c = host_ctx_of(host);
	vsnprintf(c->error, sizeof c->error, fmt, ap); /* the last call wins */
}

static void host_error(const struct gw_host *host, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	host_errorv(host, fmt, ap);
	va_end(ap);
}

#define OPTS(host) (host_ctx_of(host)->options)

static enum gw_config_result get_string(const struct gw_host *host, const struct gw_config *config,
                                        const char *key, const char **out)
{
	return plugin_config_string(host, OPTS(host), config, key, out);
}

static enum gw_config_result get_int(const struct gw_host *host, const struct gw_config *config,
                                     const char *key, int64_t *out)
{
	return plugin_config_int(host, OPTS(host), config, key, out);
}

static enum gw_config_result get_bool(const struct gw_host *host, const struct gw_config *config,
                                      const char *key, int *out)
{
	return plugin_config_bool(host, OPTS(host), config, key, out);
}

static enum gw_config_result get_duration(const struct gw_host *host,
                                          const struct gw_config *config, const char *key,
                                          int64_t *out)
{
	return plugin_config_duration_ms(host, OPTS(host), config, key, out);
}

static enum gw_config_result get_mode(const struct gw_host *host, const struct gw_config *config,
                                      const char *key, unsigned *out)
{
	return plugin_config_mode(host, OPTS(host), config, key, out);
}

static enum gw_config_result get_size(const struct gw_host *host, const struct gw_config *config,
                                      const char *key, int64_t *out)
{
	return plugin_config_size(host, OPTS(host), config, key, out);
}

static enum gw_config_result get_list_item(const struct gw_host *host,
                                           const struct gw_config *config, const char *key,
                                           size_t i, const char **out)
{
	return plugin_config_list_item(host, OPTS(host), config, key, i, out);
}

static int64_t host_now_ms(const struct gw_host *host)
{
	(void)host;
	return gw_mono_ms();
}

static const char *host_group_name(const struct gw_host *host, enum gw_group g)
{
	(void)host;
	return gw_group_name(g);
}

static int host_group_count(const struct gw_host *host)
{
	(void)host;
	return GW_GROUP_COUNT;
}

static const struct gw_item *host_item_typed(const struct gw_host *host, const struct gw_item *item)
{
	return item ? model_typed_copy(item, &host_ctx_of(host)->scratch) : NULL;
}

/* The empty lists a GW_SUB_LISTS_ON_DEMAND plugin is handed (never NULL, as the ABI
 * promises; never dereferenced). */
static const struct gw_item *const no_items[1] = {NULL};
static const struct gw_update no_updates[1] = {{NULL, NULL}};

const struct gw_change *host_change_begin(struct host_ctx *ctx, const struct gw_change *change,
                                          int lists_on_demand, struct diff *lazy)
{
	ctx->full = ctx->shown = change;
	ctx->lazy = lazy;
	if (!lists_on_demand)
		return change;
	ctx->hidden = *change;
	ctx->hidden.items = ctx->hidden.added = ctx->hidden.removed = no_items;
	ctx->hidden.updated = no_updates;
	return ctx->shown = &ctx->hidden;
}

/* Entry i of a delta's list, as an item of the ABI made in the ring. */
static const struct gw_item *delta_item(struct host_ctx *c, enum gw_list list, size_t i)
{
	struct diff *d = c->lazy;
	const struct gd_item *it = NULL;
	if (list == GW_LIST_ITEMS) {
		if (d->to && i < d->to->n_items)
			it = &d->to->items[i];
	} else if (diff_lists(d) == 0) {
		if (list == GW_LIST_ADDED && i < d->n_added)
			it = d->added[i];
		else if (list == GW_LIST_REMOVED && i < d->n_removed)
			it = d->removed[i];
		else if (list == GW_LIST_UPDATED_OLD && i < d->n_updated)
			it = d->updated[i].old_item;
		else if (list == GW_LIST_UPDATED_NEW && i < d->n_updated)
			it = d->updated[i].new_item;
	}
	return it ? abi_ring_item(&c->ring, d->group, it, c->typed) : NULL;
}

/* Entry i of a list of the change being applied: for the copy with empty lists a
 * GW_SUB_LISTS_ON_DEMAND plugin was handed, made from the delta it stands for (the ring
 * keeps the last GW_CHANGE_ITEMS_KEPT, abi.h), or from the lists of the change it hides;
 * for any other change (a test calling apply() itself), from its own lists. */
static const struct gw_item *host_change_item(const struct gw_host *host,
                                              const struct gw_change *change, enum gw_list list,
                                              size_t i)
{
	struct host_ctx *c = host_ctx_of(host);
	if (change == &c->hidden) {
		if (c->full && c->lazy)
			return delta_item(c, list, i);
		change = c->full; /* NULL once apply() has returned */
	}
	return change ? gw_change_list_entry(change, list, i) : NULL;
}

void host_call_done(struct host_ctx *ctx)
{
	arena_free(&ctx->scratch);
	abi_ring_free(&ctx->ring);
	ctx->full = ctx->shown = NULL;
	ctx->lazy = NULL;
}

static int host_group_configured(const struct gw_host *host, enum gw_group g)
{
	const struct host_ctx *c = host_ctx_of(host);
	for (size_t i = 0; i < c->n_groups; i++)
		if (c->groups[i] == g)
			return 1;
	return 0;
}

static size_t host_configured_groups(const struct gw_host *host, enum gw_group *out, size_t cap)
{
	const struct host_ctx *c = host_ctx_of(host);
	for (size_t i = 0; out && i < c->n_groups && i < cap; i++)
		out[i] = c->groups[i];
	return c->n_groups;
}

void host_set_groups(struct host_ctx *ctx, const enum gw_group *groups, size_t n)
{
	ctx->n_groups = 0;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned)groups[i] >= GW_GROUP_COUNT)
			continue;
		size_t j = 0;
		while (j < ctx->n_groups && ctx->groups[j] != groups[i])
			j++;
		if (j == ctx->n_groups)
			ctx->groups[ctx->n_groups++] = groups[i];
	}
}

void host_table_init(struct gw_host *h, struct host_ctx *ctx)
{
	h->size = sizeof *h;
	h->abi = GWSYNC_SUBSCRIBER_ABI;
	h->agent_version = PACKAGE_VERSION;
	h->instance = ctx->instance;
	h->priv = ctx;
	h->log = host_log;
	h->logv = host_logv;
	h->error = host_error;
	h->errorv = host_errorv;
	h->config_string = get_string;
	h->config_int = get_int;
	h->config_bool = get_bool;
	h->config_duration_ms = get_duration;
	h->config_mode = get_mode;
	h->config_size = get_size;
	h->config_list_item = get_list_item;
	h->now_ms = host_now_ms;
	h->group_name = host_group_name;
	h->group_count = host_group_count;
	h->item_typed = host_item_typed;
	arena_init(&ctx->scratch);
	h->group_configured = host_group_configured;
	h->configured_groups = host_configured_groups;
	h->change_item = host_change_item;
	ctx->full = ctx->shown = NULL;
	ctx->lazy = NULL;
	memset(&ctx->ring, 0, sizeof ctx->ring);
}
