/*
 * The groups' names inside the agent. The public header no longer carries an inline
 * table (it would be compiled into plugins and go stale when the agent learns a group);
 * plugins ask the host (gw_host.group_name), the agent asks this.
 */
#ifndef GW_GROUPS_H
#define GW_GROUPS_H

#include <gwsync/subscriber.h>

/* "PLUGIN", "SELECTOR", ...; NULL if out of range. */
static inline const char *gw_group_name(enum gw_group g)
{
	static const char *const names[GW_GROUP_COUNT] = {"PLUGIN",
	                                                  "SELECTOR",
	                                                  "RULE",
	                                                  "APP_AUTH",
	                                                  "META_DATA",
	                                                  "PROXY_SELECTOR",
	                                                  "DISCOVER_UPSTREAM",
	                                                  "AI_PROXY_API_KEY"};
	return (unsigned)g < GW_GROUP_COUNT ? names[g] : NULL;
}

#endif
