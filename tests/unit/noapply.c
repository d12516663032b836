/* A test plugin with a current ABI but no apply() callback: the loader must refuse it. */
#include <gwsync/subscriber.h>

static const struct gw_subscriber incomplete = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "incomplete",
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &incomplete;
}
