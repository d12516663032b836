/*
 * The host table a plugin is given (struct gw_host of the ABI), in one place so the agent's
 * loader, gwsync-replay and the testing library hand plugins the very same functions.
 * host->priv points to a struct host_ctx: the instance's log, its declared options (for
 * the getters' defaults), the groups the agent syncs and the message of the last
 * host->error() call.
 */
#ifndef GW_HOST_H
#define GW_HOST_H

#include <gwsync/subscriber.h>

#include "core/arena.h"
#include "core/log.h"
#include "model/abi.h"
#include "model/diff.h"

struct host_ctx {
	const char *instance;
	char config_key[48]; /* "subscribers[0].config": the getters' messages name keys as
	                      * the configuration's own do; "" outside the agent */
	int config_bare;     /* the config is a file of its own (gwsync-replay -c): its keys are
	                      * named alone */
	struct gw_log *log;
	const struct gw_option *options; /* declared options or NULL */
	char error[512];                 /* the last host->error() message of the current call */
	int in_init;                     /* inside init(): an ERROR log line also sets `error` */
	struct arena
	    scratch; /* item_typed()'s copies: freed when the call returns (host_call_done) */
	/* The groups the agent syncs, in the configured order (host->group_configured and
	 * host->configured_groups): a copy, so the table never points into a configuration
	 * that might be freed before it. */
	enum gw_group groups[GW_GROUP_COUNT];
	size_t n_groups;
	/* The change being applied, and what the plugin was handed: `full` itself, or
	 * `hidden`, the same with its lists empty, for a plugin that declared
	 * GW_SUB_LISTS_ON_DEMAND (host->change_item then reads full's lists, or `lazy`). Set
	 * by host_change_begin() for one apply(). */
	const struct gw_change *full;
	const struct gw_change *shown;
	struct gw_change hidden;
	struct diff *lazy;    /* the delta `full` shows, when its lists were not made: then
	                       * host->change_item reads it (its lists made by diff_lists at
	                       * the first entry asked of one) and makes the items in `ring` */
	struct abi_ring ring; /* the items host->change_item made: freed when the call returns */
	int typed;            /* they carry their typed views (no GW_SUB_TYPED_ON_DEMAND) */
};

/* Fill `h` (every ABI-2 member) for `ctx`, which must outlive it. */
void host_table_init(struct gw_host *h, struct host_ctx *ctx);

/* Before apply(): what to hand the plugin for `change` (which must live until
 * host_call_done): the change itself, or with `lists_on_demand` (the plugin declared
 * GW_SUB_LISTS_ON_DEMAND) a copy whose lists are empty, read through host->change_item:
 * from `change`'s lists, or with `lazy` (then change has none) from that delta. */
const struct gw_change *host_change_begin(struct host_ctx *ctx, const struct gw_change *change,
                                          int lists_on_demand, struct diff *lazy);

/* After a callback returns: free what the host made for it (item_typed()'s copies, the
 * items change_item() made) and forget the change host_change_begin() set. */
void host_call_done(struct host_ctx *ctx);

/* Set the groups the agent syncs (duplicates and unknown groups are dropped). */
void host_set_groups(struct host_ctx *ctx, const enum gw_group *groups, size_t n);

/* The context behind a host table filled by host_table_init(). */
static inline struct host_ctx *host_ctx_of(const struct gw_host *h)
{
	return h->priv;
}

#endif
