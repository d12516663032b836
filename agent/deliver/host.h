/*
 * The host table a plugin is given (struct gw_host of the ABI), in one place so the agent's
 * loader, gwsync-replay and the testing library hand plugins the very same functions.
 * host->priv points to a struct host_ctx: the instance's log, its declared options (for
 * the getters' defaults) and the message of the last host->error() call.
 */
#ifndef GW_HOST_H
#define GW_HOST_H

#include <gwsync/subscriber.h>

#include "core/arena.h"
#include "core/log.h"

struct host_ctx {
	const char *instance;
	struct gw_log *log;
	const struct gw_option *options; /* declared options or NULL */
	char error[512];                 /* the last host->error() message of the current call */
	int in_init;                     /* inside init(): an ERROR log line also sets `error` */
	struct arena
	    scratch; /* item_typed()'s copies: freed when the call returns (host_call_done) */
};

/* Fill `h` (every ABI-2 member) for `ctx`, which must outlive it. */
void host_table_init(struct gw_host *h, struct host_ctx *ctx);

/* After a callback returns: free what the host made for it (item_typed()'s copies). */
void host_call_done(struct host_ctx *ctx);

/* The context behind a host table filled by host_table_init(). */
static inline struct host_ctx *host_ctx_of(const struct gw_host *h)
{
	return h->priv;
}

#endif
