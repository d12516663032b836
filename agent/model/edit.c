/*
 * Positional edits of a held version into the next one (see edit.h). One walk copies the
 * held arrays in runs between the edit positions (items, digests, store indices, and where
 * each held position lands), the stores are then chosen (shared, or the few items left in
 * small stores copied into one), and the key index is the held one with the changed keys
 * merged in at their ranks.
 */
#include "model/edit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/digest.h"
#include "model/groups.h"
#include "model/keys.h"
#include "model/model.h"

#define COPY        ((uint16_t)0xFFFF) /* an item whose store cannot be shared: copied */
#define MAX_VIRTUAL (2 * GD_MAX_STORES)

/* The stores a result may reference before they are chosen: prev's (same indices), then
 * from's that prev does not hold. */
struct vstores {
	struct gd_store *s[MAX_VIRTUAL];
	size_t n;
	uint16_t from_map[GD_MAX_STORES]; /* from's store index -> ours */
};

static void vstores_init(struct vstores *v, const struct group_data *prev,
                         const struct group_data *from)
{
	v->n = 0;
	for (size_t i = 0; prev && i < prev->n_stores; i++)
		v->s[v->n++] = prev->stores[i];
	size_t np = v->n;
	for (size_t i = 0; from && i < from->n_stores; i++) {
		size_t k = 0;
		while (k < np && v->s[k] != from->stores[i])
			k++;
		if (k == np)
			v->s[k = v->n++] = from->stores[i];
		v->from_map[i] = (uint16_t)k;
	}
}

static uint16_t from_store(const struct vstores *v, const struct group_data *from, size_t i)
{
	return from->n_stores ? v->from_map[from->item_store[i]] : COPY;
}

static int oom(struct gw_err *err, enum gw_group g)
{
	return gw_errf(err, "group %s: out of memory", gw_group_name(g));
}

/*
 * gd's items are in place, item i in virtual store sidx[i]: choose the stores the version
 * references (gd->stores, gd->item_store), copying into one new store the items whose
 * store is not kept (see edit.h). 0 or -1 (out of memory).
 */
static int settle_stores(struct group_data *gd, const struct vstores *v, const uint16_t *sidx)
{
	size_t n = gd->n_items, ncopy = 0, used = 0, held = 0, top = MAX_VIRTUAL;
	uint32_t count[MAX_VIRTUAL] = {0};
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
		held += gd_store_bytes(v->s[s]);
		if (top == MAX_VIRTUAL || count[s] > count[top])
			top = s;
	}
	int all = held > 4 * gd->json_bytes + (1u << 20);
	int few = used + (ncopy ? 1 : 0) > GD_MAX_STORES;
	uint8_t fin[MAX_VIRTUAL];
	int keep[MAX_VIRTUAL] = {0};
	int copying = ncopy > 0;
	gd->stores = arena_alloc(&gd->arena, GD_MAX_STORES * sizeof *gd->stores);
	gd->item_store = arena_alloc(&gd->arena, n ? n : 1);
	if (!gd->stores || !gd->item_store)
		return -1;
	for (size_t s = 0; s < v->n; s++) {
		if (!count[s])
			continue;
		keep[s] = !all && (!few || s == top);
		if (!keep[s]) {
			copying = 1;
			continue;
		}
		fin[s] = (uint8_t)gd->n_stores;
		gd->stores[gd->n_stores++] = gd_store_ref(v->s[s]);
	}
	struct gd_store *fresh = NULL;
	uint8_t fresh_idx = 0;
	if (copying) {
		if (!(fresh = gd_store_new()))
			return -1;
		fresh_idx = (uint8_t)gd->n_stores;
		gd->stores[gd->n_stores++] = fresh; /* the version owns this reference */
	}
	for (size_t i = 0; i < n; i++) {
		if (sidx[i] != COPY && keep[sidx[i]]) {
			gd->item_store[i] = fin[sidx[i]];
			continue;
		}
		struct gw_item old = gd->items[i];
		if (model_copy_item(&fresh->arena, &old, &gd->items[i]) != 0)
			return -1;
		gd->item_store[i] = fresh_idx;
	}
	return 0;
}

/* gd->item_ptrs for items that carry their size already (every version's do: they were
 * linked when made; an edited item is given its own), so the held items are not touched
 * again, only pointed at. 0 or -1. */
static int point_at_items(struct group_data *gd)
{
	size_t n = gd->n_items;
	gd->item_ptrs = arena_alloc(&gd->arena, (n ? n : 1) * sizeof *gd->item_ptrs);
	if (!gd->item_ptrs)
		return -1;
	for (size_t i = 0; i < n; i++)
		gd->item_ptrs[i] = &gd->items[i];
	return 0;
}

/* A key that enters the index: an inserted item, or a replaced one whose key changed. */
struct added {
	const char *key;
	uint32_t idx;  /* in the result */
	size_t rank;   /* where it goes among prev's keys */
	size_t before; /* the order edits named it (a stable sort) */
};

static int cmp_added(const void *a, const void *b)
{
	const struct added *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->before > y->before) - (x->before < y->before);
}

static int dup_key(struct gw_err *err, enum gw_group g, const char *key)
{
	char shown[300];
	return gw_errf(err, "group %s: duplicate key '%s' (two items of the new version hold it)",
	               gw_group_name(g), key_display(g, key, shown, sizeof shown));
}

/*
 * gd->by_key from prev's: prev's entries in their order (without those in `gone`, at
 * their new positions `remap`; both NULL: unchanged) with the added keys merged in at the
 * ranks a binary search in prev finds. 0, or -1 (err: out of memory or a duplicate key).
 */
static int index_merge(struct group_data *gd, const struct group_data *prev, const int32_t *remap,
                       const uint8_t *gone, struct added *added, size_t na, struct gw_err *err)
{
	size_t n = gd->n_items, n_prev = prev ? prev->n_items : 0;
	uint32_t *bk = arena_alloc(&gd->arena, (n ? n : 1) * sizeof *bk);
	if (!bk)
		return oom(err, gd->group);
	gd->by_key = bk;
	for (size_t j = 0; j < na; j++) {
		int found;
		added[j].rank = group_data_rank(prev, added[j].key, &found);
		if (found && !(gone && gone[prev->by_key[added[j].rank]]))
			return dup_key(err, gd->group, added[j].key);
	}
	if (na > 1)
		qsort(added, na, sizeof *added, cmp_added);
	for (size_t j = 1; j < na; j++)
		if (added[j].rank == added[j - 1].rank &&
		    strcmp(added[j].key, added[j - 1].key) == 0)
			return dup_key(err, gd->group, added[j].key);
	size_t j = 0, k = 0;
	if (!remap && !gone) { /* positions unchanged: copy runs between the insertions */
		size_t m = 0;
		for (; j < na; j++) {
			size_t r = added[j].rank;
			if (r > m)
				memcpy(&bk[k], &prev->by_key[m], (r - m) * sizeof *bk);
			k += r - m;
			m = r;
			bk[k++] = added[j].idx;
		}
		if (n_prev > m)
			memcpy(&bk[k], &prev->by_key[m], (n_prev - m) * sizeof *bk);
		k += n_prev - m;
	} else {
		for (size_t m = 0; m < n_prev; m++) {
			while (j < na && added[j].rank == m)
				bk[k++] = added[j++].idx;
			uint32_t p = prev->by_key[m];
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
static int account(struct digester *dg, struct item_digest *sum, const struct gw_item *it, int sign)
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
		if (ed->op != EDIT_REMOVE && (!from || !ed->item || ed->item < from->items ||
		                              ed->item >= from->items + from->n_items))
			return 0;
	}
	return 1;
}

int model_edit(const struct group_data *prev, const struct group_data *from,
               const struct edit *edits, size_t n_edits, struct group_data **out,
               struct gw_err *err)
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
	struct group_data *gd = group_data_new(g);
	struct digester *dg = digester_new();
	uint16_t *sidx = malloc((n_new ? n_new : 1) * sizeof *sidx);
	int32_t *remap = shift ? malloc((n_prev ? n_prev : 1) * sizeof *remap) : NULL;
	uint8_t *gone = NULL;
	struct added *added = malloc((n_edits ? n_edits : 1) * sizeof *added);
	struct vstores *vs = malloc(sizeof *vs);
	size_t na = 0;
	if (!gd || !dg || !sidx || (shift && !remap) || !added || !vs)
		goto fail;
	gd->items = gd->heap_items = malloc((n_new ? n_new : 1) * sizeof *gd->items);
	if (!gd->items)
		goto fail;
	gd->n_items = n_new;
	vstores_init(vs, prev, from);
	struct item_digest sum;
	if (held_sum(prev, dg, &sum) != 0)
		goto fail;
	size_t json = prev ? prev->json_bytes : 0, pos = 0, k = 0;
	if (prev && prev->n_items && !json) /* a version made by hand (tests) */
		for (size_t i = 0; i < n_prev; i++)
			json += prev->items[i].json_len;
	for (size_t e = 0; e <= n_edits; e++) {
		size_t upto = e < n_edits ? edits[e].at : n_prev;
		if (upto > pos) { /* the held items up to the next edit, as they are */
			size_t run = upto - pos;
			memcpy(&gd->items[k], &prev->items[pos], run * sizeof *gd->items);
			for (size_t i = 0; i < run; i++)
				sidx[k + i] = prev->n_stores ? prev->item_store[pos + i] : COPY;
			for (size_t i = 0; remap && i < run; i++)
				remap[pos + i] = (int32_t)(k + i);
			k += run;
			pos = upto;
		}
		if (e == n_edits)
			break;
		const struct edit *ed = &edits[e];
		int leaves = ed->op == EDIT_REMOVE || (ed->op == EDIT_REPLACE &&
		                                       strcmp(prev->items[pos].key, ed->item->key));
		if (leaves && !gone && !(gone = calloc(n_prev, 1)))
			goto fail;
		if (ed->op != EDIT_INSERT) { /* the held item at pos leaves or is replaced */
			if (account(dg, &sum, &prev->items[pos], -1) != 0)
				goto fail;
			json -= prev->items[pos].json_len;
			if (remap)
				remap[pos] = ed->op == EDIT_REMOVE ? -1 : (int32_t)k;
			if (leaves)
				gone[pos] = 1;
			pos++;
		}
		if (ed->op == EDIT_REMOVE)
			continue;
		const struct gw_item *it = ed->item;
		gd->items[k] = *it;
		gd->items[k].size = sizeof gd->items[k];
		sidx[k] = from_store(vs, from, (size_t)(it - from->items));
		if (account(dg, &sum, it, 1) != 0)
			goto fail;
		json += it->json_len;
		if (ed->op == EDIT_INSERT || leaves) {
			added[na] = (struct added){it->key, (uint32_t)k, 0, na};
			na++;
		}
		k++;
	}
	gd->json_bytes = json;
	gd->digest_sum = sum;
	gd->has_digest_sum = 1;
	if (settle_stores(gd, vs, sidx) != 0 || point_at_items(gd) != 0)
		goto fail;
	if (index_merge(gd, prev, remap, gone, added, na, err) != 0)
		goto out;
	if (digest_identity(dg, &sum, n_new, gd->md5) != 0)
		goto fail;
	*out = gd;
	gd = NULL;
	rc = 0;
	goto out;
fail:
	oom(err, g);
out:
	group_data_unref(gd);
	digester_free(dg);
	free(sidx);
	free(remap);
	free(gone);
	free(added);
	free(vs);
	return rc;
}

/* The same item text: shared (one pointer) or byte-identical. */
static int same_json(const struct gw_item *a, const struct gw_item *b)
{
	return a->json == b->json ||
	       (a->json_len == b->json_len && memcmp(a->json, b->json, a->json_len) == 0);
}

int model_whole(enum gw_group group, const struct group_data *prev, const struct group_data *from,
                struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	size_t n = from ? from->n_items : 0;
	int rc = -1;
	struct group_data *gd = group_data_new(group);
	struct digester *dg = digester_new();
	uint16_t *sidx = malloc((n ? n : 1) * sizeof *sidx);
	struct vstores *vs = malloc(sizeof *vs);
	if (!gd || !dg || !sidx || !vs)
		goto fail;
	gd->items = gd->heap_items = malloc((n ? n : 1) * sizeof *gd->items);
	if (!gd->items)
		goto fail;
	gd->n_items = n;
	vstores_init(vs, NULL, from);
	for (size_t i = 0; i < n; i++) {
		gd->items[i] = from->items[i];
		sidx[i] = from_store(vs, from, i);
	}
	gd->json_bytes = from ? from->json_bytes : 0;
	/* the identity: the held one's, less what left and plus what came, found by walking
	 * both key orders (an item shared with the held version is one pointer: no hashing);
	 * from scratch when the held version has none */
	struct item_digest sum = {0, 0};
	if (prev && prev->has_digest_sum && (!n || from->by_key)) {
		sum = prev->digest_sum;
		size_t i = 0, j = 0, np = prev->n_items;
		while (i < n || j < np) {
			const struct gw_item *a = i < n ? &from->items[from->by_key[i]] : NULL;
			const struct gw_item *b = j < np ? &prev->items[prev->by_key[j]] : NULL;
			int c = !a ? 1 : !b ? -1 : a->key == b->key ? 0 : strcmp(a->key, b->key);
			if (c == 0 && same_json(a, b)) {
				i++;
				j++;
				continue;
			}
			if (c <= 0 && account(dg, &sum, a, 1) != 0)
				goto fail;
			if (c >= 0 && account(dg, &sum, b, -1) != 0)
				goto fail;
			i += c <= 0;
			j += c >= 0;
		}
	} else {
		for (size_t i = 0; i < n; i++)
			if (account(dg, &sum, &gd->items[i], 1) != 0)
				goto fail;
	}
	gd->digest_sum = sum;
	gd->has_digest_sum = 1;
	if (settle_stores(gd, vs, sidx) != 0)
		goto fail;
	if (from && from->by_key) {
		if (point_at_items(gd) != 0 ||
		    !(gd->by_key = arena_alloc(&gd->arena, (n ? n : 1) * sizeof *gd->by_key)))
			goto fail;
		memcpy(gd->by_key, from->by_key, n * sizeof *gd->by_key);
	} else {
		size_t dup;
		enum gd_index ix = group_data_index(gd, &dup);
		if (ix == GD_INDEX_NO_MEMORY)
			goto fail;
		if (ix == GD_INDEX_DUPLICATE) {
			dup_key(err, group, gd->items[dup].key);
			goto out;
		}
	}
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
		const struct gw_item *x = &a->items[a->by_key[i]], *y = &b->items[b->by_key[i]];
		if ((x->key != y->key && strcmp(x->key, y->key) != 0) || !same_json(x, y))
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
