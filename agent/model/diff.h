/*
 * The delta between two versions of one group, as one subscriber sees it: what was added,
 * what changed (same key, different raw JSON) and what was removed since the version it
 * last accepted. Items whose JSON is byte-identical are reported in neither list, so a
 * plugin touches only what changed and never has to clear a cache to stay correct.
 *
 * A version made from another by edits carries the delta from it (groupdata.h): when
 * `from` is that version, the change is the carried lists, costing what changed (the
 * common case of a subscriber, or the snapshot writer, one version behind an event
 * source). Otherwise both versions carry `by_key` (their items sorted by key), so the
 * delta is one merge of two sorted lists: O(n), no hash table. Either version may be NULL,
 * meaning "empty": from NULL everything is added, to NULL everything is removed.
 *
 * The lists are of the versions' own compact items (item.h): a removed item or an update's
 * old item is from's, the others to's. The ABI's struct gw_change is made from this on
 * delivery (abi.h).
 */
#ifndef GW_DIFF_H
#define GW_DIFF_H

#include <gwsync/subscriber.h>

#include "core/error.h"
#include "model/groupdata.h"

struct diff {
	enum gw_group group;
	const struct group_data *from, *to;
	const struct gd_item *const *added; /* key order; never NULL */
	size_t n_added;
	const struct gd_update *updated;
	size_t n_updated;
	const struct gd_item *const *removed;
	size_t n_removed;
	int confirmed_only; /* to confirms from (a snapshot's version) with the same data */
	int carried;        /* the lists are the ones `to` carries from `from` */
	int pending;        /* diff_count: the lists are not made yet (diff_lists) */
	/* the merge's own lists (NULL when carried or pending) */
	const struct gd_item **own_added;
	struct gd_update *own_updated;
	const struct gd_item **own_removed;
};

/*
 * The delta of `group` going from `from` to `to` (either may be NULL). It borrows both
 * versions' memory: keep references to them until diff_free(). Only fails on out of
 * memory.
 */
int diff_build(struct diff *d, enum gw_group group, const struct group_data *from,
               const struct group_data *to, struct gw_err *err);

/*
 * The same with only the counts of the lists when the delta is not carried: the lists stay
 * empty (valid, never NULL) until diff_lists(), so a subscriber that reads the counts alone
 * (GW_SUB_LISTS_ON_DEMAND) costs no array of every added item (8 MiB at a full sync of
 * 1,000,000 items). Cannot fail.
 */
void diff_count(struct diff *d, enum gw_group group, const struct group_data *from,
                const struct group_data *to);

/* Make the lists diff_count() left out (nothing when they are made). 0 or -1 (out of
 * memory: the lists stay empty and a later call tries again). */
int diff_lists(struct diff *d);

/* Free the delta arrays (not the versions). Safe on a zeroed or already freed diff. */
void diff_free(struct diff *d);

#endif
