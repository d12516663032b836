/*
 * The `subscribers:` list of the configuration: each entry's keys (name, library, config,
 * groups) and, once the source section is read, the check that every group a subscriber
 * takes is one the agent syncs. Apart from config.c because a subscriber's keys are the
 * plugin author's side of the file, not the agent's own settings.
 */
#ifndef GW_CONFIG_SUBSCRIBERS_H
#define GW_CONFIG_SUBSCRIBERS_H

#include "config/config_walk.h"

/* The loader of the top-level `subscribers:` key (a list of maps). */
int cfg_load_subscribers(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base);

/* After the source section: every subscriber's `groups:` are synced groups. 0, or -1. */
int cfg_check_subscriber_groups(struct loader *ld);

#endif
