/*
 * Group version delta (see diff.h). The delta a version carries from `from` when it was
 * made from it; otherwise a merge walk over the two key-sorted index arrays:
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
	return a == b || a->json == b->json ||
	       (a->json_len == b->json_len && memcmp(a->json, b->json, a->json_len) == 0);
}

static size_t count(const struct group_data *gd)
{
	return gd ? gd->n_items : 0;
}

/* The merge of both key indexes: d's own arrays, or with `lists` 0 only the counts. 0 or
 * -1 (out of memory). */
static int merge(struct diff *d, const struct group_data *from, const struct group_data *to,
                 int lists, size_t *na_out, size_t *nu_out, size_t *nr_out)
{
	size_t nf = count(from), nt = count(to);

	/* Worst cases: everything added, everything removed, everything updated. The
	 * "+ 1" keeps malloc from being asked for zero bytes. */
	if (lists) {
		d->added = malloc((nt + 1) * sizeof *d->added);
		d->removed = malloc((nf + 1) * sizeof *d->removed);
		d->updated = malloc(((nf < nt ? nf : nt) + 1) * sizeof *d->updated);
		if (!d->added || !d->removed || !d->updated)
			return -1;
	}

	size_t i = 0, j = 0, na = 0, nu = 0, nr = 0;
	while (i < nf || j < nt) {
		const struct gw_item *a = i < nf ? from->items[group_data_at(from, i)] : NULL;
		const struct gw_item *b = j < nt ? to->items[group_data_at(to, j)] : NULL;
		int c = !a ? 1 : !b ? -1 : a->key == b->key ? 0 : strcmp(a->key, b->key);
		if (c < 0) {
			if (lists)
				d->removed[nr] = a;
			nr++;
			i++;
		} else if (c > 0) {
			if (lists)
				d->added[na] = b;
			na++;
			j++;
		} else {
			if (!same_json(a, b)) {
				if (lists)
					d->updated[nu] = (struct gw_update){a, b};
				nu++;
			}
			i++;
			j++;
		}
	}
	*na_out = na;
	*nu_out = nu;
	*nr_out = nr;
	return 0;
}

/* No list is ever NULL (the ABI promises it), even for an empty group. */
static const struct gw_item *const none[1] = {NULL};
static const struct gw_update no_update[1] = {{NULL, NULL}};

/* diff_build, the lists made (`lists` 1) or only counted. 0 or -1 (out of memory). */
static int build(struct diff *d, enum gw_group group, const struct group_data *from,
                 const struct group_data *to, int lists)
{
	memset(d, 0, sizeof *d);
	size_t na, nu, nr;
	const struct gw_item *const *added = none, *const *removed = none;
	const struct gw_update *updated = no_update;
	const struct gd_delta *carried = group_data_delta(to, from);
	if (carried) { /* to was made from from: the delta came with it */
		d->carried = 1;
		added = carried->added;
		na = carried->n_added;
		updated = carried->updated;
		nu = carried->n_updated;
		removed = carried->removed;
		nr = carried->n_removed;
	} else {
		if (merge(d, from, to, lists, &na, &nu, &nr) != 0) {
			diff_free(d);
			return -1;
		}
		if (lists) {
			added = d->added;
			updated = d->updated;
			removed = d->removed;
		}
		d->pending = !lists;
		d->from = from;
		d->to = to;
	}

	struct gw_change *ch = &d->change;
	ch->size = sizeof *ch;
	ch->group = group;
	ch->group_name = gw_group_name(group);
	ch->items = none;
	ch->previous.last_modify_time = GW_INT_UNSET;
	if (to) {
		ch->version.md5 = to->md5;
		ch->version.last_modify_time = to->last_modify_time;
		if (to->items)
			ch->items = (const struct gw_item *const *)to->items;
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
	ch->added = added;
	ch->n_added = na;
	ch->updated = updated;
	ch->n_updated = nu;
	ch->removed = removed;
	ch->n_removed = nr;
	return 0;
}

int diff_build(struct diff *d, enum gw_group group, const struct group_data *from,
               const struct group_data *to, struct gw_err *err)
{
	if (build(d, group, from, to, 1) != 0)
		return gw_errf(err, "group %s: out of memory computing the change",
		               gw_group_name(group));
	return 0;
}

void diff_count(struct diff *d, enum gw_group group, const struct group_data *from,
                const struct group_data *to)
{
	build(d, group, from, to, 0); /* counting allocates nothing: cannot fail */
}

int diff_lists(struct diff *d)
{
	if (!d->pending)
		return 0;
	size_t na, nu, nr;
	if (merge(d, d->from, d->to, 1, &na, &nu, &nr) != 0) {
		diff_free(d);
		d->pending = 1; /* still not made: the change's lists stay the empty ones */
		return -1;
	}
	d->pending = 0;
	d->change.added = d->added;
	d->change.updated = d->updated;
	d->change.removed = d->removed;
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
	d->carried = 0;
	d->pending = 0;
}
