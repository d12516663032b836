/*
 * Group version delta (see diff.h). A merge walk over the two key-sorted index arrays:
 * equal keys are compared by their raw JSON, the smaller key of a mismatch is an
 * addition or a removal. Keys are unique within a version (the model refuses
 * duplicates); should two equal keys ever meet, they pair up one to one and the excess
 * is reported as added or removed, which is still a correct instruction list.
 */
#include "model/diff.h"
#include "model/groups.h"

#include <stdlib.h>
#include <string.h>

/* Versions share unchanged items (groupdata.h): the same text pointer is the same item, and
 * the merge then costs a pointer comparison per item instead of a strcmp and a memcmp. */
static int same_json(const struct gw_item *a, const struct gw_item *b)
{
	return a->json == b->json ||
	       (a->json_len == b->json_len && memcmp(a->json, b->json, a->json_len) == 0);
}

static size_t count(const struct group_data *gd)
{
	return gd ? gd->n_items : 0;
}

int diff_build(struct diff *d, enum gw_group group, const struct group_data *from,
               const struct group_data *to, struct gw_err *err)
{
	memset(d, 0, sizeof *d);
	size_t nf = count(from), nt = count(to);

	/* Worst cases: everything added, everything removed, everything updated. The
	 * "+ 1" keeps malloc from being asked for zero bytes. */
	d->added = malloc((nt + 1) * sizeof *d->added);
	d->removed = malloc((nf + 1) * sizeof *d->removed);
	d->updated = malloc(((nf < nt ? nf : nt) + 1) * sizeof *d->updated);
	if (!d->added || !d->removed || !d->updated) {
		diff_free(d);
		return gw_errf(err, "group %s: out of memory computing the change",
		               gw_group_name(group));
	}

	size_t i = 0, j = 0, na = 0, nu = 0, nr = 0;
	while (i < nf || j < nt) {
		const struct gw_item *a = i < nf ? &from->items[from->by_key[i]] : NULL;
		const struct gw_item *b = j < nt ? &to->items[to->by_key[j]] : NULL;
		int c = !a ? 1 : !b ? -1 : a->key == b->key ? 0 : strcmp(a->key, b->key);
		if (c < 0) {
			d->removed[nr++] = a;
			i++;
		} else if (c > 0) {
			d->added[na++] = b;
			j++;
		} else {
			if (!same_json(a, b))
				d->updated[nu++] = (struct gw_update){a, b};
			i++;
			j++;
		}
	}

	/* No list is ever NULL (the ABI promises it), even for an empty group. */
	static const struct gw_item *const none[1] = {NULL};
	struct gw_change *ch = &d->change;
	ch->size = sizeof *ch;
	ch->group = group;
	ch->group_name = gw_group_name(group);
	ch->items = none;
	ch->previous.last_modify_time = GW_INT_UNSET;
	if (to) {
		ch->version.md5 = to->md5;
		ch->version.last_modify_time = to->last_modify_time;
		if (to->item_ptrs)
			ch->items = to->item_ptrs;
		ch->n_items = to->n_items;
		ch->stale = to->provisional;
	}
	if (from) {
		ch->previous.md5 = from->md5;
		ch->previous.last_modify_time = from->last_modify_time;
	}
	/* A snapshot's version confirmed by an admin serving the same data. */
	ch->confirmed_only = from && to && na + nu + nr == 0 && strcmp(from->md5, to->md5) == 0 &&
	                     from->provisional && !to->provisional;
	ch->added = d->added;
	ch->n_added = na;
	ch->updated = d->updated;
	ch->n_updated = nu;
	ch->removed = d->removed;
	ch->n_removed = nr;
	return 0;
}

void diff_free(struct diff *d)
{
	free(d->added);
	free(d->updated);
	free(d->removed);
	d->added = NULL;
	d->updated = NULL;
	d->removed = NULL;
}
