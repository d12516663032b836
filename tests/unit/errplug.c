/*
 * A test plugin for the host->error() rules and the contract of a plugin without init():
 * no init() (so its state must be NULL), no declared options, and apply() behaving by
 * group:
 *   PLUGIN    host->error() twice, then 1        (the last message is the reason)
 *   SELECTOR  host->error(), then 0              (accepted; the message is a warning)
 *   RULE      return 7 without host->error()     ("apply() returned 7")
 *   APP_AUTH  checks state == NULL, the host's size, GW_HAS(), group_name() of a group
 *             beyond the agent's, logv through a wrapper: 0 if all hold, else 1
 * tick() and fini() call host->error() (logged as warnings). Built only for `make check`.
 */
#include <gwsync/subscriber.h>
#include <stdarg.h>
#include <string.h>

static void say(const struct gw_host *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct gw_host *h, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	h->logv(h, GW_LOG_WARN, fmt, ap);
	va_end(ap);
}

static int ep_apply(void *state, const struct gw_host *h, const struct gw_change *ch)
{
	switch (ch->group) {
	case GW_GROUP_PLUGIN:
		h->error(h, "first reason");
		h->error(h, "second reason");
		return 1;
	case GW_GROUP_SELECTOR:
		h->error(h, "a complaint without consequence");
		return 0;
	case GW_GROUP_RULE:
		return 7;
	case GW_GROUP_APP_AUTH:
		if (state != NULL || h->size < sizeof(struct gw_host) || !GW_HAS(h, group_count) ||
		    h->group_name(h, (enum gw_group)99) != NULL ||
		    strcmp(h->group_name(h, GW_GROUP_RULE), "RULE") != 0 ||
		    h->group_count(h) < GW_GROUP_COUNT)
			return 1;
		say(h, "logv says %d", 42);
		return 0;
	default:
		return 0;
	}
}

static int64_t ep_tick(void *state, const struct gw_host *h, int64_t now_ms)
{
	h->error(h, "tick trouble");
	return -1;
}

static void ep_fini(void *state, const struct gw_host *h)
{
	h->error(h, "fini trouble");
}

static const struct gw_subscriber errplug = {
    GWSYNC_SUBSCRIBER_INIT, .name = "errplug", .apply = ep_apply, .tick = ep_tick, .fini = ep_fini,
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &errplug;
}
