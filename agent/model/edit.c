/*
 * Positional edits of a held version into the next one (see edit.h). One walk copies the
 * held arrays in runs between the edit positions (item pointers, pool indices, and where
 * each held position lands), the pools are then chosen, and the key index is the held one
 * with the changed keys merged in at their ranks, or, when no key moved (texts replaced
 * under their keys: the usual one-item change), the held one itself, shared by reference
 * (groupdata.h gd_keys). The delta from the held version is what
 * the edits say, sorted by key: it is carried with the new version (groupdata.h).
 *
 * Pools, in the common case, cost nothing per item: the result references the held
 * version's pools at the same indices (so its pool indices are copied as they are) plus
 * the event's own. A pool none of the result's items use any more stays referenced until
 * the next general settling, which happens when the pools would be too many or hold too
 * much (edit.h): that one looks at every item, so it is paid once in many changes.
 */
#include "model/edit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/digest.h"
#include "model/edit_pools.h"
#include "model/groups.h"
#include "model/keys.h"
#include "model/model.h"

static int oom(struct gw_err *err, enum gw_group g)
{
	return gw_errf(err, "group %s: out of memory", gw_group_name(g));
}

/* A key that enters the index: an inserted item, or a replaced one whose key changed. */
struct added {
	const struct gd_item *key; /* the item (in from) whose key it is */
	uint32_t idx;              /* in the result */
	size_t rank;               /* where it goes among prev's keys */
	size_t before;             /* the order edits named it (a stable sort) */
};

static int cmp_added(const void *a, const void *b)
{
	const struct added *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	int c = gd_keycmp(x->key, y->key);
	return c ? c : (x->before > y->before) - (x->before < y->before);
}

static int dup_key(struct gw_err *err, enum gw_group g, const struct gd_item *it)
{
	char key[300], shown[300];
	gd_key_str(it, key, sizeof key);
	return gw_errf(err, "group %s: duplicate key '%s' (two items of the new version hold it)",
	               gw_group_name(g), key_display(g, key, shown, sizeof shown));
}

/* Runs of prev's index (its identity when prev is in key order) into bk. */
static void copy_ranks(uint32_t *bk, const struct group_data *prev, size_t from, size_t n)
{
	if (prev->by_key)
		memcpy(bk, &prev->by_key[from], n * sizeof *bk);
	else
		for (size_t i = 0; i < n; i++)
			bk[i] = (uint32_t)(from + i);
}

/*
 * gd->by_key from prev's: prev's entries in their order (without those in `gone`, at
 * their new positions `remap`; both NULL: unchanged) with the added keys merged in at the
 * ranks a binary search in prev finds. When the result is in key order as prev was (the
 * keys replaced in place, or new ones appended that sort after every held key) it needs
 * none: by_key stays NULL and nothing is copied. 0, or -1 (err: out of memory or a
 * duplicate key).
 */
static int index_merge(struct group_data *gd, const struct group_data *prev, const int32_t *remap,
                       const uint8_t *gone, struct added *added, size_t na, struct gw_err *err)
{
	size_t n = gd->n_items, n_prev = prev ? prev->n_items : 0;
	for (size_t j = 0; j < na; j++) {
		int found;
		added[j].rank = group_data_rank_item(prev, added[j].key, &found);
		if (found && !(gone && gone[group_data_at(prev, added[j].rank)]))
			return dup_key(err, gd->group, added[j].key);
	}
	if (na > 1)
		qsort(added, na, sizeof *added, cmp_added);
	for (size_t j = 1; j < na; j++)
		if (added[j].rank == added[j - 1].rank &&
		    gd_keycmp(added[j].key, added[j - 1].key) == 0)
			return dup_key(err, gd->group, added[j].key);
	int in_order = (!prev || !prev->by_key) && !remap && !gone;
	for (size_t j = 0; in_order && j < na; j++) /* appended at the end, in key order */
		in_order = added[j].rank == n_prev && added[j].idx == n_prev + j;
	gd->by_key = NULL;
	if (in_order)
		return 0;
	if (!remap && !gone && !na) /* every key where it was: prev's index is this one */
		return group_data_share_index(gd, prev) != 0 ? oom(err, gd->group) : 0;
	uint32_t *bk = group_data_new_index(gd, n);
	if (!bk)
		return oom(err, gd->group);
	size_t j = 0, k = 0;
	if (!remap && !gone) { /* positions unchanged: copy runs between the insertions */
		size_t m = 0;
		for (; j < na; j++) {
			size_t r = added[j].rank;
			if (r > m)
				copy_ranks(&bk[k], prev, m, r - m);
			k += r - m;
			m = r;
			bk[k++] = added[j].idx;
		}
		if (n_prev > m)
			copy_ranks(&bk[k], prev, m, n_prev - m);
		k += n_prev - m;
	} else {
		for (size_t m = 0; m < n_prev; m++) {
			while (j < na && added[j].rank == m)
				bk[k++] = added[j++].idx;
			uint32_t p = (uint32_t)group_data_at(prev, m);
			if (gone && gone[p])
				continue;
			bk[k++] = remap ? (uint32_t)remap[p] : p;
		}
		while (j < na)
			bk[k++] = added[j++].idx;
	}
	if (k != n)
		return gw_errf(err, "group %s: internal error: key index of %zu items for %zu",
		               gw_group_name(gd->group), k, n);
	return 0;
}

/* The sum of prev's item digests: kept with it, or computed once (a version from the
 * snapshot). 0 or -1. */
static int held_sum(const struct group_data *prev, struct digester *dg, struct item_digest *sum)
{
	memset(sum, 0, sizeof *sum);
	if (!prev || prev->has_digest_sum) {
		if (prev)
			*sum = prev->digest_sum;
		return 0;
	}
	struct item_digest d;
	for (size_t i = 0; i < prev->n_items; i++) {
		if (digest_item(dg, prev->items[i].json, prev->items[i].json_len, &d) != 0)
			return -1;
		digest_add(sum, &d);
	}
	return 0;
}

/* sum += sign * the digest of item it. 0 or -1. */
static int account(struct digester *dg, struct item_digest *sum, const struct gd_item *it, int sign)
{
	struct item_digest d;
	if (digest_item(dg, it->json, it->json_len, &d) != 0)
		return -1;
	if (sign > 0)
		digest_add(sum, &d);
	else
		digest_sub(sum, &d);
	return 0;
}

/* ---------------------------------------------------------------- the carried delta */

/* An item that leaves or enters with an edit (entering ones by their index in the result,
 * since settling may still copy them). */
struct moved {
	const struct gd_item *it;
	size_t idx;
};

static int cmp_moved(const void *a, const void *b)
{
	const struct moved *x = a, *y = b;
	return gd_keycmp(x->it, y->it);
}

/* gd->delta from prev: what left and what entered, paired by key (an item that leaves and
 * comes back under its key with other text is an update, with the same text nothing). 0
 * or -1 (out of memory). */
static int carry_delta(struct group_data *gd, const struct group_data *prev, struct moved *out,
                       size_t n_out, struct moved *in, size_t n_in)
{
	for (size_t i = 0; i < n_in; i++)
		in[i].it = &gd->items[in[i].idx];
	if (n_out > 1)
		qsort(out, n_out, sizeof *out, cmp_moved);
	if (n_in > 1)
		qsort(in, n_in, sizeof *in, cmp_moved);
	struct gd_delta *d = &gd->delta;
	size_t cap_a = n_in ? n_in : 1, cap_r = n_out ? n_out : 1;
	size_t cap_u = (n_in < n_out ? n_in : n_out) + 1;
	d->added = arena_alloc(&gd->arena, cap_a * sizeof *d->added);
	d->removed = arena_alloc(&gd->arena, cap_r * sizeof *d->removed);
	d->updated = arena_alloc(&gd->arena, cap_u * sizeof *d->updated);
	if (!d->added || !d->removed || !d->updated)
		return -1;
	size_t i = 0, j = 0;
	while (i < n_out || j < n_in) {
		int c = i == n_out ? 1 : j == n_in ? -1 : gd_keycmp(out[i].it, in[j].it);
		if (c < 0) {
			d->removed[d->n_removed++] = out[i++].it;
		} else if (c > 0) {
			d->added[d->n_added++] = in[j++].it;
		} else {
			if (!gd_same_json(out[i].it, in[j].it))
				d->updated[d->n_updated++] =
				    (struct gd_update){out[i].it, in[j].it};
			i++;
			j++;
		}
	}
	d->pred = prev;
	d->pred_born = prev->born;
	return 0;
}

/* ---------------------------------------------------------------- model_edit */

/* Edits in the order model_edit wants, each naming a position of prev and an item of from. */
static int edits_valid(const struct group_data *prev, const struct group_data *from,
                       const struct edit *edits, size_t n_edits)
{
	size_t n_prev = prev ? prev->n_items : 0, last = 0;
	int taken = 0; /* a replace or remove already at `last` */
	for (size_t e = 0; e < n_edits; e++) {
		const struct edit *ed = &edits[e];
		if (ed->at < last || (ed->at > n_prev) ||
		    (ed->op != EDIT_INSERT && ed->at == n_prev))
			return 0;
		if (ed->at > last)
			taken = 0;
		last = ed->at;
		if (taken)
			return 0; /* nothing after a replace or remove at one position */
		if (ed->op != EDIT_INSERT)
			taken = 1;
		if (ed->op != EDIT_REMOVE) {
			/* an item of from: one of its list's */
			size_t at;
			if (!from || !ed->item ||
			    !gd_item_in(ed->item, from->items, from->n_items, &at))
				return 0;
		}
	}
	return 1;
}

/* Where item `it` of from is in from (it is one: edits_valid checked). */
static size_t from_index(const struct group_data *from, const struct gd_item *it)
{
	return (size_t)(it - from->items);
}

/* The result of the edits, built in one pass over them. One piece: the pass keeps a dozen
 * running positions and arrays (item pointers, the key index merge, the pools, the delta,
 * the digest) that every step reads and advances together; split, they would travel as
 * one struct through every part, which is this function again. */
static int edit_build(const struct group_data *prev, const struct group_data *from,
                      const struct edit *edits, size_t n_edits, const char *md5,
                      struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	if (!prev && !from)
		return gw_errf(err, "internal error: an edit of nothing");
	enum gw_group g = prev ? prev->group : from->group;
	if (!edits_valid(prev, from, edits, n_edits))
		return gw_errf(err, "group %s: internal error: edits out of order",
		               gw_group_name(g));
	size_t n_prev = prev ? prev->n_items : 0, n_new = n_prev;
	int shift = 0, rc = -1;
	for (size_t e = 0; e < n_edits; e++) {
		if (edits[e].op == EDIT_INSERT)
			n_new++;
		else if (edits[e].op == EDIT_REMOVE)
			n_new--;
		shift = shift || edits[e].op == EDIT_REMOVE ||
		        (edits[e].op == EDIT_INSERT && edits[e].at < n_prev);
	}
	size_t ne = n_edits ? n_edits : 1;
	struct group_data *gd = group_data_new(g);
	struct digester *dg = md5 ? NULL : digester_new();
	int32_t *remap = shift ? malloc((n_prev ? n_prev : 1) * sizeof *remap) : NULL;
	uint8_t *gone = NULL;
	struct added *added = malloc(ne * sizeof *added);
	struct moved *leaving = malloc(ne * sizeof *leaving);
	struct moved *entering = malloc(ne * sizeof *entering);
	uint16_t *new_sidx = malloc(ne * sizeof *new_sidx);
	size_t *new_at = malloc(ne * sizeof *new_at);
	struct vpools *vs = malloc(sizeof *vs);
	uint16_t *sidx = NULL;
	size_t na = 0, nl = 0, nn = 0;
	if (!gd || (!md5 && !dg) || (shift && !remap) || !added || !leaving || !entering ||
	    !new_sidx || !new_at || !vs)
		goto fail;
	gd->items = gd->heap_items = malloc((n_new ? n_new : 1) * sizeof *gd->items);
	gd->item_pool = arena_alloc(&gd->arena, n_new ? n_new : 1);
	if (!gd->items || !gd->item_pool)
		goto fail;
	gd->n_items = n_new;
	edit_vstores_init(vs, prev, from);
	struct item_digest sum = {0, 0};
	if (!md5 && held_sum(prev, dg, &sum) != 0)
		goto fail;
	size_t json = prev ? prev->json_bytes : 0, pos = 0, k = 0;
	if (prev && prev->n_items && !json) /* a version made by hand (tests) */
		for (size_t i = 0; i < n_prev; i++)
			json += prev->items[i].json_len;
	int prev_stores = prev && prev->n_pools;
	for (size_t e = 0; e <= n_edits; e++) {
		size_t upto = e < n_edits ? edits[e].at : n_prev;
		if (upto > pos) { /* the held items up to the next edit, as they are */
			size_t run = upto - pos;
			memcpy(&gd->items[k], &prev->items[pos], run * sizeof *gd->items);
			if (prev_stores)
				memcpy(&gd->item_pool[k], &prev->item_pool[pos], run);
			for (size_t i = 0; remap && i < run; i++)
				remap[pos + i] = (int32_t)(k + i);
			k += run;
			pos = upto;
		}
		if (e == n_edits)
			break;
		const struct edit *ed = &edits[e];
		int leaves = ed->op == EDIT_REMOVE || (ed->op == EDIT_REPLACE &&
		                                       gd_keycmp(&prev->items[pos], ed->item) != 0);
		if (leaves && !gone && !(gone = calloc(n_prev, 1)))
			goto fail;
		if (ed->op != EDIT_INSERT) { /* the held item at pos leaves or is replaced */
			const struct gd_item *old = &prev->items[pos];
			if (!md5 && account(dg, &sum, old, -1) != 0)
				goto fail;
			json -= old->json_len;
			leaving[nl++] = (struct moved){old, pos};
			if (remap)
				remap[pos] = ed->op == EDIT_REMOVE ? -1 : (int32_t)k;
			if (leaves)
				gone[pos] = 1;
			pos++;
		}
		if (ed->op == EDIT_REMOVE)
			continue;
		size_t fi = from_index(from, ed->item);
		const struct gd_item *it = &from->items[fi]; /* from's: shared, not written */
		gd->items[k] = *it;
		new_sidx[nn] = edit_from_store(vs, from, fi);
		new_at[nn++] = k;
		entering[nn - 1] = (struct moved){it, k};
		if (!md5 && account(dg, &sum, it, 1) != 0)
			goto fail;
		json += it->json_len;
		if (ed->op == EDIT_INSERT || leaves) {
			added[na] = (struct added){it, (uint32_t)k, 0, na};
			na++;
		}
		k++;
	}
	gd->json_bytes = json;
	int cheap = edit_settle_cheap(gd, prev, vs, new_sidx, nn, new_at);
	if (cheap < 0)
		goto fail;
	if (!cheap) {
		/* every item's virtual pool, for the general settling */
		if (!(sidx = malloc((n_new ? n_new : 1) * sizeof *sidx)))
			goto fail;
		for (size_t i = 0; i < n_new; i++)
			sidx[i] = prev_stores ? gd->item_pool[i] : COPY;
		for (size_t i = 0; i < nn; i++)
			sidx[new_at[i]] = new_sidx[i];
		int copied;
		if (edit_settle_general(gd, vs, sidx, &copied) != 0)
			goto fail;
		cheap = !copied;
	}
	gd->delta_shares = cheap; /* nothing copied: every item kept is prev's own */
	if (index_merge(gd, prev, remap, gone, added, na, err) != 0)
		goto out;
	if (prev && carry_delta(gd, prev, leaving, nl, entering, nn) != 0)
		goto fail;
	if (md5) {
		memcpy(gd->md5, md5, sizeof gd->md5);
	} else {
		gd->digest_sum = sum;
		gd->has_digest_sum = 1;
		if (digest_identity(dg, &sum, n_new, gd->md5) != 0)
			goto fail;
	}
	*out = gd;
	gd = NULL;
	rc = 0;
	goto out;
fail:
	oom(err, g);
out:
	group_data_unref(gd);
	digester_free(dg);
	free(remap);
	free(gone);
	free(added);
	free(leaving);
	free(entering);
	free(new_sidx);
	free(new_at);
	free(vs);
	free(sidx);
	return rc;
}

int model_edit(const struct group_data *prev, const struct group_data *from,
               const struct edit *edits, size_t n_edits, struct group_data **out,
               struct gw_err *err)
{
	return edit_build(prev, from, edits, n_edits, NULL, out, err);
}

int model_edit_as(const struct group_data *prev, const struct group_data *from,
                  const struct edit *edits, size_t n_edits, const char *md5,
                  struct group_data **out, struct gw_err *err)
{
	char tag[65];
	snprintf(tag, sizeof tag, "%s", md5);
	return edit_build(prev, from, edits, n_edits, tag, out, err);
}

/* ---------------------------------------------------------------- model_whole */

/* The delta from prev to gd (a full list) by walking both key orders; with `sum` (prev's
 * digest sum, or NULL) adjusted by the items that differ. 0 or -1. */
static int whole_delta(struct group_data *gd, const struct group_data *prev, struct digester *dg,
                       struct item_digest *sum)
{
	struct gd_delta *d = &gd->delta;
	size_t n = gd->n_items, np = prev->n_items;
	for (int pass = 0; pass < 2; pass++) {
		size_t i = 0, j = 0, na = 0, nu = 0, nr = 0;
		while (i < n || j < np) {
			const struct gd_item *a = i < n ? &gd->items[group_data_at(gd, i)] : NULL;
			const struct gd_item *b =
			    j < np ? &prev->items[group_data_at(prev, j)] : NULL;
			int c = !a ? 1 : !b ? -1 : gd_keycmp(a, b);
			if (c == 0 && gd_same_json(a, b)) {
				i++;
				j++;
				continue;
			}
			if (c < 0) {
				if (pass)
					d->added[na] = a;
				na++;
			} else if (c > 0) {
				if (pass)
					d->removed[nr] = b;
				nr++;
			} else {
				if (pass)
					d->updated[nu] = (struct gd_update){b, a};
				nu++;
			}
			if (pass && sum && c <= 0 && account(dg, sum, a, 1) != 0)
				return -1;
			if (pass && sum && c >= 0 && account(dg, sum, b, -1) != 0)
				return -1;
			i += c <= 0;
			j += c >= 0;
		}
		if (!pass) {
			d->added = arena_alloc(&gd->arena, (na ? na : 1) * sizeof *d->added);
			d->removed = arena_alloc(&gd->arena, (nr ? nr : 1) * sizeof *d->removed);
			d->updated = arena_alloc(&gd->arena, (nu ? nu : 1) * sizeof *d->updated);
			if (!d->added || !d->removed || !d->updated)
				return -1;
		} else {
			d->n_added = na;
			d->n_updated = nu;
			d->n_removed = nr;
		}
	}
	d->pred = prev;
	d->pred_born = prev->born;
	return 0;
}

int model_whole(enum gw_group group, const struct group_data *prev, const struct group_data *from,
                struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	size_t n = from ? from->n_items : 0;
	int rc = -1;
	struct group_data *gd = group_data_new(group);
	struct digester *dg = digester_new();
	uint16_t *sidx = calloc(n ? n : 1, sizeof *sidx);
	struct vpools *vs = malloc(sizeof *vs);
	if (!gd || !dg || !sidx || !vs)
		goto fail;
	gd->items = gd->heap_items = malloc((n ? n : 1) * sizeof *gd->items);
	if (!gd->items)
		goto fail;
	gd->n_items = n;
	edit_vstores_init(vs, NULL, from);
	if (n)
		memcpy(gd->items, from->items, n * sizeof *gd->items);
	for (size_t i = 0; i < n; i++)
		sidx[i] = edit_from_store(vs, from, i);
	gd->json_bytes = from ? from->json_bytes : 0;
	int copied;
	if (edit_settle_general(gd, vs, sidx, &copied) != 0)
		goto fail;
	if (from) { /* the same order as from: its index, or none when it needs none */
		if (group_data_share_index(gd, from) != 0)
			goto fail;
	} else {
		size_t dup;
		enum gd_index ix = group_data_index(gd, &dup);
		if (ix == GD_INDEX_NO_MEMORY)
			goto fail;
		if (ix == GD_INDEX_DUPLICATE) {
			dup_key(err, group, &gd->items[dup]);
			goto out;
		}
	}
	/* the delta and the identity: the held one's, less what left and plus what came,
	 * found by walking both key orders (an item shared with the held version is one
	 * pointer: no hashing); from scratch when the held version has none */
	struct item_digest sum = {0, 0};
	int adjust = prev && prev->has_digest_sum;
	if (adjust)
		sum = prev->digest_sum;
	if (prev && whole_delta(gd, prev, dg, adjust ? &sum : NULL) != 0)
		goto fail;
	if (!adjust)
		for (size_t i = 0; i < n; i++)
			if (account(dg, &sum, &gd->items[i], 1) != 0)
				goto fail;
	gd->digest_sum = sum;
	gd->has_digest_sum = 1;
	if (digest_identity(dg, &sum, n, gd->md5) != 0)
		goto fail;
	*out = gd;
	gd = NULL;
	rc = 0;
	goto out;
fail:
	oom(err, group);
out:
	group_data_unref(gd);
	digester_free(dg);
	free(sidx);
	free(vs);
	return rc;
}

int model_same_items(const struct group_data *a, const struct group_data *b)
{
	size_t na = a ? a->n_items : 0, nb = b ? b->n_items : 0;
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++) {
		const struct gd_item *x = &a->items[group_data_at(a, i)];
		const struct gd_item *y = &b->items[group_data_at(b, i)];
		if (gd_keycmp(x, y) != 0 || !gd_same_json(x, y))
			return 0;
	}
	return 1;
}

int model_identity(const struct group_data *gd, char out[33])
{
	struct digester *dg = digester_new();
	struct item_digest sum = {0, 0}, d;
	int rc = dg ? 0 : -1;
	for (size_t i = 0; rc == 0 && gd && i < gd->n_items; i++) {
		rc = digest_item(dg, gd->items[i].json, gd->items[i].json_len, &d);
		digest_add(&sum, &d);
	}
	if (rc == 0)
		rc = digest_identity(dg, &sum, gd ? gd->n_items : 0, out);
	digester_free(dg);
	return rc;
}
