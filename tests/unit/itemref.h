/*
 * The reference filler of one item: jansson parses the item's text into a tree
 * (JSON_REJECT_DUPLICATES) and the tree is converted by the tables of fields.h. This was
 * the agent's only path; the agent now runs the direct decoder (itemdec.h), and this one
 * stays, with the tests and out of the agent's library, as the definition of what that
 * decoder must give: fuzz_itemdec and check_itemdec compare the two on every input
 * (verdict, message, every field).
 */
#ifndef GW_MODEL_ITEMREF_H
#define GW_MODEL_ITEMREF_H

#include "model/fields.h"

/* Item `raw` (len bytes: any text; an item is an object) of group g into *it (zeroed by the
 * caller), its contents in c->mem. 0, or -1 with c->err set (and *c->syntax 1 when the text is not
 * JSON). */
int itemref_item(struct item_ctx *c, enum gw_group g, const char *raw, size_t len,
                 struct gw_item *it);

#endif
