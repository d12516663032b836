/*
 * The ABI's items and changes made on delivery (see abi.h). An item's gw_item is decoded
 * again from its JSON by the direct decoder (known valid: nothing is refused here but
 * memory), its key and name copied into the arena it lives in.
 */
#include "model/abi.h"

#include <stdlib.h>
#include <string.h>

#include "model/fields.h"
#include "model/groups.h"
#include "model/intern.h"
#include "model/model.h"
#include "model/typed.h"

/* An item's gw_item in its pool's table, found by the item's JSON pointer. */
struct abi_entry {
	struct htab_link link;
	const char *json;
	struct gw_item item;
};

static int entry_is(const struct htab_link *e, const void *key, size_t len)
{
	(void)len;
	return ((const struct abi_entry *)(const void *)e)->json == *(const char *const *)key;
}

/* What one delivery's items need: the decoder and the intern table of their views. */
struct batch {
	struct itemdec *dec;
	struct intern *in;
	struct gw_err *err;
};

/* A gw_item for `it` of group g into out, its strings in mem: the item's own key, its
 * display name read from its JSON (the field the typed view names it by, keyed groups'
 * "name" otherwise), PLUGIN's typed view. 0 or -1 (err set). */
static int make(struct itemdec *dec, struct intern *in, enum gw_group g, const struct gd_item *it,
                struct arena *mem, struct gw_err *err, struct gw_item *out)
{
	memset(out, 0, sizeof *out);
	out->size = sizeof *out;
	out->group = g;
	out->json = it->json;
	out->json_len = it->json_len;
	const struct group_shape *sh = fields_group(g);
	const char *field = sh->fields ? sh->name : "name";
	size_t raw;
	const char *v = gd_item_member(it, field, &raw);
	char *name = v ? arena_alloc_align(mem, raw + 1, 1) : NULL;
	if (!(out->key = gd_key_dup(it, mem)) || (v && !name))
		return gw_errf(err, "group %s: out of memory", gw_group_name(g));
	out->name = name ? gd_item_decode(v, raw, name) : NULL;
	if (out->name && strcmp(out->name, out->key) == 0)
		out->name = out->key; /* the name is the key (PLUGIN, APP_AUTH): held once */
	return model_typed_at_parse(g) ? model_typed_make(dec, in, out, mem, err) : 0;
}

/* The gw_item of gd's item i: the one its pool keeps, or made there now; with `typed`
 * with its view. NULL on out of memory (b->err set). */
static struct gw_item *item_at(struct batch *b, struct group_data *gd, size_t i, int typed)
{
	const struct gd_item *it = &gd->items[i];
	struct gd_pool *p = gd->n_pools ? gd->pools[gd->item_pool[i]] : NULL;
	struct htab *t = p ? &p->abi : &gd->abi;
	struct arena *mem = p ? &p->lazy : &gd->lazy;
	uint64_t h = htab_hash(&it->json, sizeof it->json);
	struct htab_link **at = htab_find(t, h, entry_is, &it->json, sizeof it->json);
	struct abi_entry *e = at && *at ? (struct abi_entry *)(void *)*at : NULL;
	if (!e) {
		e = htab_reserve(t) == 0
		        ? arena_alloc_align(mem, sizeof *e, _Alignof(struct abi_entry))
		        : NULL;
		if (!e) {
			gw_errf(b->err, "group %s: out of memory", gw_group_name(gd->group));
			return NULL;
		}
		if (make(b->dec, b->in, gd->group, it, mem, b->err, &e->item) != 0)
			return NULL;
		e->json = it->json;
		htab_insert(t, htab_find(t, h, entry_is, &it->json, sizeof it->json), &e->link, h);
	}
	if (typed && model_typed_missing(&e->item) &&
	    model_typed_make(b->dec, b->in, &e->item, mem, b->err) != 0)
		return NULL;
	return &e->item;
}

/* The gw_item of `it`, an item of gd's list. */
static struct gw_item *item_of(struct batch *b, struct group_data *gd, const struct gd_item *it,
                               int typed)
{
	size_t at;
	if (!gd || !gd_item_in(it, gd->items, gd->n_items, &at)) {
		gw_errf(b->err, "internal error: a delta item outside its version");
		return NULL;
	}
	return item_at(b, gd, at, typed);
}

/* to's complete list, kept with it: from's gw_items where to holds from's items at the
 * same or the next position (a version made by a few edits of the one before), the pools'
 * own otherwise. Reused from from only when both have pools: then the item is in a pool
 * to holds too, with its gw_item. 0 or -1. */
static int complete_list(struct batch *b, struct group_data *to, struct group_data *from, int typed)
{
	size_t n = to->n_items;
	if (!to->abi_items) {
		struct gw_item **v = malloc((n ? n : 1) * sizeof *v);
		if (!v) {
			gw_errf(b->err, "group %s: out of memory", gw_group_name(to->group));
			return -1;
		}
		int reuse = from && from->abi_items && from->n_pools && to->n_pools;
		size_t np = reuse ? from->n_items : 0, j = 0;
		for (size_t i = 0; i < n; i++) {
			const char *json = to->items[i].json;
			if (j < np && from->items[j].json == json) {
				v[i] = from->abi_items[j++];
			} else if (j + 1 < np && from->items[j + 1].json == json) {
				v[i] = from->abi_items[j + 1]; /* from's item j was removed */
				j += 2;
			} else {
				if (!(v[i] = item_at(b, to, i, 0))) {
					free(v);
					return -1;
				}
				if (j + 1 < np && i + 1 < n &&
				    from->items[j + 1].json == to->items[i + 1].json)
					j++; /* from's item j was replaced by this one */
			}
		}
		to->abi_items = v;
		to->abi_typed = 0;
	}
	if (typed && !to->abi_typed) {
		for (size_t i = 0; i < n; i++) {
			struct gw_item *gi = to->abi_items[i];
			if (model_typed_missing(gi) && !item_at(b, to, i, 1))
				return -1;
		}
		to->abi_typed = 1;
	}
	return 0;
}

static const struct gw_item *const none[1] = {NULL};
static const struct gw_update no_update[1] = {{NULL, NULL}};

/* The delta lists as gw_items. 0 or -1. */
static int delta_lists(struct abi_change *ac, struct batch *b, const struct diff *d,
                       struct group_data *from, struct group_data *to, int typed)
{
	ac->added = malloc((d->n_added + 1) * sizeof *ac->added);
	ac->removed = malloc((d->n_removed + 1) * sizeof *ac->removed);
	ac->updated = malloc((d->n_updated + 1) * sizeof *ac->updated);
	if (!ac->added || !ac->removed || !ac->updated) {
		gw_errf(b->err, "group %s: out of memory", gw_group_name(d->group));
		return -1;
	}
	for (size_t i = 0; i < d->n_added; i++)
		if (!(ac->added[i] = item_of(b, to, d->added[i], typed)))
			return -1;
	for (size_t i = 0; i < d->n_removed; i++)
		if (!(ac->removed[i] = item_of(b, from, d->removed[i], typed)))
			return -1;
	for (size_t i = 0; i < d->n_updated; i++) {
		ac->updated[i].old_item = item_of(b, from, d->updated[i].old_item, typed);
		ac->updated[i].new_item = item_of(b, to, d->updated[i].new_item, typed);
		if (!ac->updated[i].old_item || !ac->updated[i].new_item)
			return -1;
	}
	return 0;
}

int abi_change_make(struct abi_change *ac, const struct diff *d, struct group_data *from,
                    struct group_data *to, int lists, int typed, struct gw_err *err)
{
	memset(ac, 0, sizeof *ac);
	struct gw_change *ch = &ac->change;
	ch->size = sizeof *ch;
	ch->group = d->group;
	ch->group_name = gw_group_name(d->group);
	ch->items = ch->added = ch->removed = none;
	ch->updated = no_update;
	ch->previous.last_modify_time = GW_INT_UNSET;
	if (to) {
		ch->version.md5 = to->md5;
		ch->version.last_modify_time = to->last_modify_time;
		ch->n_items = to->n_items;
		ch->stale = to->provisional;
	}
	if (from) {
		ch->previous.md5 = from->md5;
		ch->previous.last_modify_time = from->last_modify_time;
	}
	ch->confirmed_only = d->confirmed_only;
	ch->n_added = d->n_added;
	ch->n_updated = d->n_updated;
	ch->n_removed = d->n_removed;
	if (!lists)
		return 0;
	typed = typed && fields_group(d->group)->fields;
	struct batch b = {itemdec_new(), typed ? intern_new() : NULL, err};
	int rc = -1;
	if (!b.dec || (typed && !b.in)) {
		gw_errf(err, "group %s: out of memory", gw_group_name(d->group));
		goto out;
	}
	if ((to && complete_list(&b, to, from, typed) != 0) ||
	    delta_lists(ac, &b, d, from, to, typed) != 0)
		goto out;
	if (to)
		ch->items = (const struct gw_item *const *)to->abi_items;
	ch->added = ac->added;
	ch->updated = ac->updated;
	ch->removed = ac->removed;
	rc = 0;
out:
	itemdec_free(b.dec);
	intern_free(b.in);
	if (rc != 0)
		abi_change_free(ac);
	return rc;
}

void abi_change_free(struct abi_change *ac)
{
	free(ac->added);
	free(ac->updated);
	free(ac->removed);
	ac->added = ac->removed = NULL;
	ac->updated = NULL;
}

const struct gw_item *abi_ring_item(struct abi_ring *r, enum gw_group g, const struct gd_item *it,
                                    int typed)
{
	if (!r->dec && !(r->dec = itemdec_new()))
		return NULL;
	if (r->made >= GW_CHANGE_ITEMS_KEPT) { /* the older generation goes */
		arena_free(&r->gen[1]);
		r->gen[1] = r->gen[0];
		arena_init(&r->gen[0]);
		r->made = 0;
	}
	struct gw_item *out = model_item_new(&r->gen[0]);
	struct gw_err err;
	if (!out || make(r->dec, NULL, g, it, &r->gen[0], &err, out) != 0 ||
	    (typed && model_typed_missing(out) &&
	     model_typed_make(r->dec, NULL, out, &r->gen[0], &err) != 0))
		return NULL;
	r->made++;
	return out;
}

void abi_ring_free(struct abi_ring *r)
{
	arena_free(&r->gen[0]);
	arena_free(&r->gen[1]);
	itemdec_free(r->dec);
	r->dec = NULL;
	r->made = 0;
}
