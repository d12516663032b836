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
 */
#ifndef GW_DIFF_H
#define GW_DIFF_H

#include <gwsync/subscriber.h>

#include "core/error.h"
#include "model/groupdata.h"

struct diff {
	struct gw_change change;      /* points into the two versions and the arrays below */
	const struct gw_item **added; /* the merge's own lists (NULL when carried) */
	struct gw_update *updated;
	const struct gw_item **removed;
	int carried; /* the lists are the ones `to` carries from `from` */
	/* diff_count: the lists are not made yet (diff_lists makes them from these) */
	int pending;
	const struct group_data *from, *to;
};

/*
 * Fill d->change for `group` going from `from` to `to` (either may be NULL). The change
 * borrows both versions' memory: keep references to them until diff_free(). Only fails
 * on out of memory.
 */
int diff_build(struct diff *d, enum gw_group group, const struct group_data *from,
               const struct group_data *to, struct gw_err *err);

/*
 * The same with only the counts of the delta lists when the delta is not carried: the
 * lists stay empty (valid, never NULL) until diff_lists(), so a subscriber that reads the
 * counts alone (GW_SUB_LISTS_ON_DEMAND) costs no array of every added item (8 MiB at a
 * full sync of 1,000,000 items). Cannot fail.
 */
void diff_count(struct diff *d, enum gw_group group, const struct group_data *from,
                const struct group_data *to);

/* Make the lists diff_count() left out (nothing when they are made). 0 or -1 (out of
 * memory: the lists stay empty and a later call tries again). */
int diff_lists(struct diff *d);

/* Free the delta arrays (not the versions). Safe on a zeroed or already freed diff. */
void diff_free(struct diff *d);

#endif
