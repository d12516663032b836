/*
 * One accepted version of one configuration group: immutable once built, shared by
 * reference count between the poller that fetched it, the store, the dispatcher, the
 * snapshot writer and the status endpoint. Nobody holds a lock while reading it.
 *
 * All of a version's memory (items, strings, raw JSON) lives in one arena freed with the
 * last reference, so building and freeing 100,000 items costs a handful of mallocs.
 */
#ifndef GW_GROUPDATA_H
#define GW_GROUPDATA_H

#include <gwsync/subscriber.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/arena.h"

struct group_data {
	atomic_int refs;
	enum gw_group group;
	char md5[65];
	int64_t last_modify_time;
	char source[256];    /* the admin server URL it came from, or "snapshot" */
	int provisional;     /* loaded from the snapshot: any admin version replaces it */
	int64_t received_us; /* gw_mono_us() when the admin's reply arrived (latency figures) */

	struct gw_item *items; /* n_items, in the admin's order */
	size_t n_items;
	const struct gw_item **item_ptrs; /* &items[i]: gw_change.items (ABI 2 lists pointers) */
	uint32_t *by_key;  /* indices of items sorted by key (strcmp), for diff/lookup */
	size_t json_bytes; /* sum of the items' raw JSON lengths */

	struct arena arena;
};

/* A new, empty version with one reference. NULL on out of memory. */
struct group_data *group_data_new(enum gw_group group);

struct group_data *group_data_ref(struct group_data *gd);
void group_data_unref(struct group_data *gd);

/* Set each item's size and fill item_ptrs (group_data_index does it too). 0 or -1. */
int group_data_link(struct group_data *gd);

/* Sort by_key after items are filled (also sets each item's size and item_ptrs). Returns the index
 * of the first duplicate key found
 * (>= 0) or -1 if all keys are distinct; -2 on out of memory. */
long group_data_index(struct group_data *gd);

/* Binary search by key; NULL if absent. */
const struct gw_item *group_data_find(const struct group_data *gd, const char *key);

#endif
