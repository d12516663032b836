/*
 * The ABI's items (struct gw_item) and changes (struct gw_change), made from the versions'
 * compact items (item.h) on delivery, by the delivering thread only (groupdata.h: the
 * fields it owns), for the subscribers that read them:
 *  - a subscriber that reads a change's lists gets every list made; an item's gw_item is
 *    made once and kept in its pool (`abi`, by its JSON pointer, in the pool's `lazy`
 *    arena), so the versions that share an item share its gw_item, and the complete list
 *    is kept with its version (`abi_items`) and made for the next one from it by position
 *    (a one-rule change costs one gw_item and a copy of the pointer array, as it did when
 *    versions held gw_items);
 *  - one that declared GW_SUB_LISTS_ON_DEMAND gets the counts only, and the items it asks
 *    for (host->change_item) are made in a ring (abi_ring) that keeps the last
 *    GW_CHANGE_ITEMS_KEPT or more, never in the versions: nothing per item stays.
 * Typed views (typed.h) are made into the gw_items of a subscriber that reads every one;
 * PLUGIN's always.
 */
#ifndef GW_MODEL_ABI_H
#define GW_MODEL_ABI_H

#include <gwsync/subscriber.h>

#include "core/arena.h"
#include "core/error.h"
#include "model/diff.h"
#include "model/groupdata.h"
#include "model/itemdec.h"

struct abi_change {
	struct gw_change change;
	const struct gw_item **added; /* own lists (NULL when not made) */
	struct gw_update *updated;
	const struct gw_item **removed;
};

/*
 * The ABI change of diff d; `from` and `to` are d's versions (the deliverer's own
 * references: their ABI fields are written). With `lists` every list is made, with
 * `typed` every item in them has its typed view; without `lists` the counts are set and
 * the lists are empty (never NULL). 0, or -1 (err: out of memory).
 */
int abi_change_make(struct abi_change *ac, const struct diff *d, struct group_data *from,
                    struct group_data *to, int lists, int typed, struct gw_err *err);

/* Free what abi_change_make made (not the versions' kept items). */
void abi_change_free(struct abi_change *ac);

/* Items made one at a time for host->change_item: two generations of arenas, the older
 * freed when the newer has made GW_CHANGE_ITEMS_KEPT items, so the last
 * GW_CHANGE_ITEMS_KEPT made stay valid. Zeroed is empty. */
struct abi_ring {
	struct arena gen[2];
	size_t made; /* in gen[0] */
	struct itemdec *dec;
};

/* A gw_item of group g for `it`, with its typed view when `typed` (PLUGIN's always). NULL on
 * out of memory. */
const struct gw_item *abi_ring_item(struct abi_ring *r, enum gw_group g, const struct gd_item *it,
                                    int typed);

/* Free every item the ring made (they are then invalid); it stays usable. */
void abi_ring_free(struct abi_ring *r);

#endif
