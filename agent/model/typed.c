/*
 * Typed views on demand (see typed.h): the item's text is decoded again by the direct
 * decoder, known valid, with the key and the name it has and the other strings interned.
 */
#include "model/typed.h"

#include <string.h>

#include "model/fields.h"
#include "model/groups.h"

/* The item's typed pointer (the view), NULL for a group without typed fields. */
static void *const *view_of(const struct gw_item *it)
{
	const struct group_shape *sh = fields_group(it->group);
	return sh->fields ? (void *const *)((const char *)it + sh->item_ptr_off) : NULL;
}

int model_typed_missing(const struct gw_item *it)
{
	void *const *slot = view_of(it);
	return slot && !*slot;
}

int model_typed_make(struct itemdec *dec, struct intern *in, struct gw_item *it, struct arena *mem,
                     struct gw_err *err)
{
	int syntax = 0;
	struct item_ctx c = {
	    .mem = mem, .err = err, .group = gw_group_name(it->group), .syntax = &syntax};
	c.intern = in;
	void *view;
	if (itemdec_typed(dec, &c, it, &view) != 0)
		return -1;
	*(void **)((char *)it + fields_group(it->group)->item_ptr_off) = view;
	return 0;
}

const struct gw_item *model_typed_copy(const struct gw_item *it, struct arena *scratch)
{
	if (!model_typed_missing(it))
		return it;
	struct gw_item *copy = arena_alloc(scratch, sizeof *copy);
	struct itemdec *dec = itemdec_new();
	struct gw_err err;
	int ok = copy && dec;
	if (ok) {
		/* the key and name copied too: `it` may be one of host->change_item's, which go
		 * after GW_CHANGE_ITEMS_KEPT more are asked, and the copy lives until the call
		 * returns (the view may point at them) */
		*copy = *it;
		copy->key = arena_strdup(scratch, it->key);
		copy->name = it->name == it->key ? copy->key
		             : it->name          ? arena_strdup(scratch, it->name)
		                                 : NULL;
		ok = copy->key && (copy->name || !it->name) &&
		     model_typed_make(dec, NULL, copy, scratch, &err) == 0;
	}
	itemdec_free(dec);
	return ok ? copy : NULL;
}
