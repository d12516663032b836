/*
 * A test plugin built for another ABI version: the loader must refuse it before reading
 * anything else of its description (and before calling any of its callbacks).
 */
#include <gwsync/subscriber.h>
#include <stdlib.h>

static int never_apply(void *state, const struct gw_host *host, const struct gw_change *change)
{
	(void)state;
	(void)change;
	abort(); /* reaching this means the ABI check did not stop the plugin */
}

static const struct gw_subscriber future = {
    .abi = GWSYNC_SUBSCRIBER_ABI + 41,
    .size = sizeof(struct gw_subscriber),
    .name = "from-the-future",
    .apply = never_apply,
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &future;
}
