/*
 * The direct decoder of one item: the item's JSON text is walked once and the typed
 * fields of the ABI (fields.h) are filled straight into the version's arena, without the
 * tree jansson would build and free for every item. It gives exactly what the reference
 * filler (tests/unit/itemref.h: jansson, JSON_REJECT_DUPLICATES, then the tables) gives:
 * the same verdict, the same message and the same fields, for any input; fuzz_itemdec
 * checks that.
 */
#ifndef GW_MODEL_ITEMDEC_H
#define GW_MODEL_ITEMDEC_H

#include "model/fields.h"

/* Scratch memory (key and nesting stacks) reused from item to item of one parse. */
struct itemdec;

struct itemdec *itemdec_new(void);
void itemdec_free(struct itemdec *d);

/* Item `raw` (len bytes: any text; an item is an object) of group g into *it (zeroed by the
 * caller), its contents in c->mem; with c->untyped its typed fields are checked (the same
 * verdicts) but not made: only its key, name and raw JSON. 0, or -1 with c->err set (and *c->syntax
 * 1 when the text is not JSON: jansson is then asked where, so the message is the reference's). */
int itemdec_item(struct itemdec *d, struct item_ctx *c, enum gw_group g, const char *raw,
                 size_t len, struct gw_item *it);

/* Where an item's key is (itemdec_check): `str`, NUL-terminated (len bytes; the decoder's,
 * valid until its next call), and when `plain` (one field without escapes) also in the
 * item's text at `at`. */
struct itemdec_key {
	const char *str;
	size_t len;
	int plain;
	const char *at;
};

/* Item `raw` checked as itemdec_item checks it (the same verdicts and messages), nothing
 * made: its key in *k. 0, or -1 with c->err set (as itemdec_item). c->key is set to the
 * key (the decoder's: valid until its next call). */
int itemdec_check(struct itemdec *d, struct item_ctx *c, enum gw_group g, const char *raw,
                  size_t len, struct itemdec_key *k);

/* The typed view of item `it` (decoded before: its text is valid, its key and name set),
 * made in c->mem (strings through c->intern when there is one): *typed, NULL for a group
 * with no typed fields. The view points at it->key and it->name for those fields. 0, or -1
 * with c->err set (out of memory). */
int itemdec_typed(struct itemdec *d, struct item_ctx *c, const struct gw_item *it, void **typed);

#endif
