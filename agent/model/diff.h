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
};

/*
 * Fill d->change for `group` going from `from` to `to` (either may be NULL). The change
 * borrows both versions' memory: keep references to them until diff_free(). Only fails
 * on out of memory.
 */
int diff_build(struct diff *d, enum gw_group group, const struct group_data *from,
               const struct group_data *to, struct gw_err *err);

/* Free the delta arrays (not the versions). Safe on a zeroed or already freed diff. */
void diff_free(struct diff *d);

#endif
