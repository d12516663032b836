/*
 * Which pools the result of an edit references (see edit.h), private to model/edit.c: the
 * held version's at the same indices plus the event's, at no cost per item (the cheap
 * settling), or, when they would be too many or hold too much, a look at every item that
 * copies the few into one new pool (the general settling).
 */
#ifndef GW_MODEL_EDIT_POOLS_H
#define GW_MODEL_EDIT_POOLS_H

#include <stddef.h>
#include <stdint.h>

#include "model/groupdata.h"

#define COPY        ((uint16_t)0xFFFF) /* an item whose pool cannot be shared: copied */
#define MAX_VIRTUAL (2 * GD_MAX_POOLS)

/* The pools a result may reference before they are chosen: prev's (same indices), then
 * from's that prev does not hold. */
struct vpools {
	struct gd_pool *s[MAX_VIRTUAL];
	size_t n, n_prev;
	uint16_t from_map[GD_MAX_POOLS]; /* from's pool index -> ours */
};

void edit_vstores_init(struct vpools *v, const struct group_data *prev,
                       const struct group_data *from);
/* The virtual pool of from's item i (COPY when from has no pools). */
uint16_t edit_from_store(const struct vpools *v, const struct group_data *from, size_t i);
/* The general settling: gd's items are in place, item i in virtual pool sidx[i]; choose
 * the pools the version references, copying the items whose pool is not kept into one
 * new pool (*copied then 1). Looks at every item. 0 or -1 (out of memory). */
int edit_settle_general(struct group_data *gd, const struct vpools *v, const uint16_t *sidx,
                        int *copied);
/* The pools of the result when nothing needs settling: prev's at their indices, then
 * those of from's that the new items use. 1 done, 0 not possible here (the general
 * settling does it), -1 out of memory. */
int edit_settle_cheap(struct group_data *gd, const struct group_data *prev, const struct vpools *v,
                      const uint16_t *new_sidx, size_t n_new_items, const size_t *new_at);

#endif
