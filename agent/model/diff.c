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

static size_t count(const struct group_data *gd)
{
	return gd ? gd->n_items : 0;
}

/* The merge of both key indexes: d's own arrays, or with `lists` 0 only the counts. 0 or
 * -1 (out of memory). Versions share unchanged items (groupdata.h): the same text pointer
 * is the same item, a pointer comparison instead of a key comparison and a memcmp. */
static int merge(struct diff *d, int lists, size_t *na_out, size_t *nu_out, size_t *nr_out)
{
	const struct group_data *from = d->from, *to = d->to;
	size_t nf = count(from), nt = count(to);

	/* Worst cases: everything added, everything removed, everything updated. The
	 * "+ 1" keeps malloc from being asked for zero bytes. */
	if (lists) {
		d->own_added = malloc((nt + 1) * sizeof *d->own_added);
		d->own_removed = malloc((nf + 1) * sizeof *d->own_removed);
		d->own_updated = malloc(((nf < nt ? nf : nt) + 1) * sizeof *d->own_updated);
		if (!d->own_added || !d->own_removed || !d->own_updated)
			return -1;
	}

	size_t i = 0, j = 0, na = 0, nu = 0, nr = 0;
	while (i < nf || j < nt) {
		const struct gd_item *a = i < nf ? &from->items[group_data_at(from, i)] : NULL;
		const struct gd_item *b = j < nt ? &to->items[group_data_at(to, j)] : NULL;
		int c = !a ? 1 : !b ? -1 : a->json == b->json ? 0 : gd_keycmp(a, b);
		if (c < 0) {
			if (lists)
				d->own_removed[nr] = a;
			nr++;
			i++;
		} else if (c > 0) {
			if (lists)
				d->own_added[na] = b;
			na++;
			j++;
		} else {
			if (!gd_same_json(a, b)) {
				if (lists)
					d->own_updated[nu] = (struct gd_update){a, b};
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

/* No list is ever NULL, even for an empty group. */
static const struct gd_item *const none[1] = {NULL};
static const struct gd_update no_update[1] = {{NULL, NULL}};

/* diff_build, the lists made (`lists` 1) or only counted. 0 or -1 (out of memory). */
static int build(struct diff *d, enum gw_group group, const struct group_data *from,
                 const struct group_data *to, int lists)
{
	memset(d, 0, sizeof *d);
	d->group = group;
	d->from = from;
	d->to = to;
	d->added = d->removed = none;
	d->updated = no_update;
	const struct gd_delta *carried = group_data_delta(to, from);
	if (carried) { /* to was made from from: the delta came with it */
		d->carried = 1;
		d->added = carried->added;
		d->n_added = carried->n_added;
		d->updated = carried->updated;
		d->n_updated = carried->n_updated;
		d->removed = carried->removed;
		d->n_removed = carried->n_removed;
	} else {
		if (merge(d, lists, &d->n_added, &d->n_updated, &d->n_removed) != 0) {
			diff_free(d);
			return -1;
		}
		if (lists) {
			d->added = d->own_added;
			d->updated = d->own_updated;
			d->removed = d->own_removed;
		}
		d->pending = !lists;
	}
	/* A snapshot's version confirmed by an admin serving the same data. */
	d->confirmed_only = from && to && d->n_added + d->n_updated + d->n_removed == 0 &&
	                    strcmp(from->md5, to->md5) == 0 && from->provisional &&
	                    !to->provisional;
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
	if (merge(d, 1, &na, &nu, &nr) != 0) {
		free(d->own_added);
		free(d->own_updated);
		free(d->own_removed);
		d->own_added = d->own_removed = NULL;
		d->own_updated = NULL;
		return -1; /* still pending: the lists stay the empty ones */
	}
	d->pending = 0;
	d->added = d->own_added;
	d->updated = d->own_updated;
	d->removed = d->own_removed;
	return 0;
}

void diff_free(struct diff *d)
{
	free(d->own_added);
	free(d->own_updated);
	free(d->own_removed);
	d->own_added = d->own_removed = NULL;
	d->own_updated = NULL;
	d->added = d->removed = none;
	d->updated = no_update;
	d->n_added = d->n_updated = d->n_removed = 0;
	d->carried = d->pending = 0;
}
