/*
 * The pools an edit's result references (see edit_pools.h): the cheap settling, which
 * costs nothing per item, and the general one, which looks at every item and is paid once
 * in many changes.
 */
#include "model/edit_pools.h"

#include "model/model.h"

void edit_vstores_init(struct vpools *v, const struct group_data *prev,
                       const struct group_data *from)
{
	v->n = 0;
	for (size_t i = 0; prev && i < prev->n_pools; i++)
		v->s[v->n++] = prev->pools[i];
	size_t np = v->n_prev = v->n;
	for (size_t i = 0; from && i < from->n_pools; i++) {
		size_t k = 0;
		while (k < np && v->s[k] != from->pools[i])
			k++;
		if (k == np)
			v->s[k = v->n++] = from->pools[i];
		v->from_map[i] = (uint16_t)k;
	}
}

uint16_t edit_from_store(const struct vpools *v, const struct group_data *from, size_t i)
{
	return from->n_pools ? v->from_map[from->item_pool[i]] : COPY;
}

/* Bytes held by pools (each counted whole). */
static size_t stores_bytes(const struct vpools *v, const uint8_t *used)
{
	size_t held = 0;
	for (size_t s = 0; s < v->n; s++)
		if (!used || used[s])
			held += gd_pool_bytes(v->s[s]);
	return held;
}

static int too_much(size_t held, size_t json)
{
	return held > 4 * json + (1u << 20);
}

/*
 * The general settling: gd's items are in place, item i in virtual pool sidx[i]; choose
 * the pools the version references (gd->pools, gd->item_pool), copying into one new
 * pool the items whose pool is not kept (see edit.h). Looks at every item. 0 or -1 (out
 * of memory).
 */
int edit_settle_general(struct group_data *gd, const struct vpools *v, const uint16_t *sidx,
                        int *copied)
{
	size_t n = gd->n_items, ncopy = 0, used = 0, top = MAX_VIRTUAL;
	uint32_t count[MAX_VIRTUAL] = {0};
	uint8_t in_use[MAX_VIRTUAL] = {0};
	for (size_t i = 0; i < n; i++) {
		if (sidx[i] == COPY)
			ncopy++;
		else
			count[sidx[i]]++;
	}
	for (size_t s = 0; s < v->n; s++) {
		if (!count[s])
			continue;
		used++;
		in_use[s] = 1;
		if (top == MAX_VIRTUAL || count[s] > count[top])
			top = s;
	}
	int all = too_much(stores_bytes(v, in_use), gd->json_bytes);
	int few = used + (ncopy ? 1 : 0) > GD_MAX_POOLS;
	uint8_t fin[MAX_VIRTUAL];
	int keep[MAX_VIRTUAL] = {0};
	int copying = ncopy > 0;
	gd->pools = arena_alloc(&gd->arena, GD_MAX_POOLS * sizeof *gd->pools);
	if (!gd->item_pool)
		gd->item_pool = arena_alloc(&gd->arena, n ? n : 1);
	if (!gd->pools || !gd->item_pool)
		return -1;
	for (size_t s = 0; s < v->n; s++) {
		if (!count[s])
			continue;
		keep[s] = !all && (!few || s == top);
		if (!keep[s]) {
			copying = 1;
			continue;
		}
		fin[s] = (uint8_t)gd->n_pools;
		gd->pools[gd->n_pools++] = gd_pool_ref(v->s[s]);
	}
	struct gd_pool *fresh = NULL;
	uint8_t fresh_idx = 0;
	*copied = copying;
	if (copying) {
		if (!(fresh = gd_pool_new()))
			return -1;
		fresh_idx = (uint8_t)gd->n_pools;
		gd->pools[gd->n_pools++] = fresh; /* the version owns this reference */
	}
	for (size_t i = 0; i < n; i++) {
		if (sidx[i] != COPY && keep[sidx[i]]) {
			gd->item_pool[i] = fin[sidx[i]];
			continue;
		}
		struct gd_item copy;
		if (gd_item_copy(&copy, &fresh->arena, &gd->items[i], NULL) != 0)
			return -1;
		gd->items[i] = copy;
		gd->item_pool[i] = fresh_idx;
	}
	return 0;
}

/*
 * The pools of the result when nothing needs settling: prev's at their indices, then
 * those of from's that the new items use. 1 done, 0 not possible here (too many pools,
 * too much held, or an item to copy: the general settling does it), -1 out of memory.
 */
int edit_settle_cheap(struct group_data *gd, const struct group_data *prev, const struct vpools *v,
                      const uint16_t *new_sidx, size_t n_new_items, const size_t *new_at)
{
	if (!prev || !prev->n_pools)
		return 0;
	int extra[MAX_VIRTUAL] = {0};
	size_t n_st = prev->n_pools;
	for (size_t i = 0; i < n_new_items; i++) {
		if (new_sidx[i] == COPY)
			return 0;
		if (new_sidx[i] >= v->n_prev && !extra[new_sidx[i]])
			extra[new_sidx[i]] = (int)n_st++ + 1; /* final index + 1 */
	}
	if (n_st > GD_MAX_POOLS)
		return 0;
	size_t held = 0;
	for (size_t s = 0; s < v->n; s++)
		if (s < v->n_prev || extra[s])
			held += gd_pool_bytes(v->s[s]);
	if (too_much(held, gd->json_bytes))
		return 0;
	gd->pools = arena_alloc(&gd->arena, GD_MAX_POOLS * sizeof *gd->pools);
	if (!gd->pools)
		return -1;
	for (size_t s = 0; s < v->n; s++)
		if (s < v->n_prev || extra[s])
			gd->pools[s < v->n_prev ? s : (size_t)extra[s] - 1] = gd_pool_ref(v->s[s]);
	gd->n_pools = n_st;
	for (size_t i = 0; i < n_new_items; i++) {
		uint16_t s = new_sidx[i];
		gd->item_pool[new_at[i]] = (uint8_t)(s < v->n_prev ? s : (size_t)extra[s] - 1);
	}
	return 1;
}
