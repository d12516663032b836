/*
 * Typed views on demand (see typed.h): the item's text is decoded again by the direct
 * decoder, known valid, straight into its pool, with the key and the name it has and
 * the other strings interned.
 */
#include "model/typed.h"

#include <string.h>

#include "core/jlex.h"
#include "core/jspan.h"
#include "model/fields.h"
#include "model/groups.h"
#include "model/itemdec.h"

/* The item's typed pointer (the view), NULL for a group without typed fields: read by
 * anyone, written only through view_slot by the delivering thread (groupdata.h). */
static void *const *view_of(const struct gw_item *it)
{
	const struct group_shape *sh = fields_group(it->group);
	return sh->fields ? (void *const *)((const char *)it + sh->item_ptr_off) : NULL;
}

static void **view_slot(struct gw_item *it)
{
	return (void **)((char *)it + fields_group(it->group)->item_ptr_off);
}

int model_typed_missing(const struct gw_item *it)
{
	void *const *slot = view_of(it);
	return slot && !*slot;
}

/* What one batch of views needs: the decoder and the intern table. */
struct batch {
	struct itemdec *dec;
	struct intern *in;
	struct gw_err *err;
};

static int make(struct batch *b, struct gw_item *it, struct arena *mem)
{
	int syntax = 0;
	struct item_ctx c = {
	    .mem = mem, .err = b->err, .group = gw_group_name(it->group), .syntax = &syntax};
	c.intern = b->in;
	void *view;
	if (itemdec_typed(b->dec, &c, it, &view) != 0)
		return -1;
	*view_slot(it) = view; /* the delivering thread's: see typed.h */
	return 0;
}

/* Where the views of gd's item i go: its pool's lazy arena (gd's own without pools). */
static struct arena *lazy_of(struct group_data *gd, size_t i)
{
	return gd->n_pools ? &gd->pools[gd->item_pool[i]]->lazy : &gd->lazy;
}

static int fill_all(struct batch *b, struct group_data *gd)
{
	for (size_t i = 0; i < gd->n_items; i++)
		if (model_typed_missing(gd->items[i]) && make(b, gd->items[i], lazy_of(gd, i)) != 0)
			return -1;
	gd->typed_all = 1;
	return 0;
}

/* The item of gd with it's key: where it is. */
static size_t where(const struct group_data *gd, const struct gw_item *it)
{
	int found;
	return group_data_at(gd, group_data_rank(gd, it->key, &found));
}

static int fill_new(struct batch *b, struct group_data *to, const struct gd_delta *d)
{
	for (size_t i = 0; i < d->n_added + d->n_updated; i++) {
		const struct gw_item *it =
		    i < d->n_added ? d->added[i] : d->updated[i - d->n_added].new_item;
		size_t at = where(to, it);
		if (model_typed_missing(to->items[at]) &&
		    make(b, to->items[at], lazy_of(to, at)) != 0)
			return -1;
	}
	to->typed_all = 1;
	return 0;
}

int model_typed_fill(struct group_data *to, struct group_data *from, struct gw_err *err)
{
	if (!to || !fields_group(to->group)->fields ||
	    (to->typed_all && (!from || from->typed_all)))
		return 0;
	struct batch b = {itemdec_new(), intern_new(), err};
	int rc = -1;
	if (!b.dec || !b.in) {
		gw_errf(err, "group %s: out of memory making typed views",
		        gw_group_name(to->group));
		goto out;
	}
	if (from && !from->typed_all && fill_all(&b, from) != 0)
		goto out;
	const struct gd_delta *d = group_data_delta(to, from);
	if (!to->typed_all && (d && to->delta_shares ? fill_new(&b, to, d) : fill_all(&b, to)) != 0)
		goto out;
	rc = 0;
out:
	itemdec_free(b.dec);
	intern_free(b.in);
	return rc;
}

const struct gw_item *model_typed_copy(const struct gw_item *it, struct arena *scratch)
{
	if (!model_typed_missing(it))
		return it;
	struct gw_item *copy = arena_alloc(scratch, sizeof *copy);
	struct itemdec *dec = itemdec_new();
	struct gw_err err;
	struct batch b = {dec, NULL, &err};
	int ok = copy && dec;
	if (ok) {
		*copy = *it;
		ok = make(&b, copy, scratch) == 0;
	}
	itemdec_free(dec);
	return ok ? copy : NULL;
}

const char *model_item_string(const struct gw_item *it, const char *member, char *buf, size_t cap)
{
	const char *end = it->json + it->json_len;
	const char *v = jspan_member(it->json, end, member);
	if (!v || v >= end || *v != '"')
		return NULL;
	int esc = 0;
	const char *q = jlex_string_end(v + 1, end, &esc);
	if (!q || (size_t)(q - v - 2) >= cap)
		return NULL;
	size_t n = esc ? jlex_decode(v + 1, q - 1, buf) : (size_t)(q - v - 2);
	if (!esc)
		memcpy(buf, v + 1, n);
	buf[n] = '\0';
	return buf;
}
