/*
 * One accepted version of one configuration group: immutable once built, shared by
 * reference count between the poller that fetched it, the store, the dispatcher, the
 * snapshot writer and the status endpoint. Nobody holds a lock while reading it.
 *
 * A version's own memory (the item array, the key index) lives in one arena freed with the
 * last reference, so building and freeing 100,000 items costs a handful of mallocs. What
 * the items point to (strings, typed fields, raw JSON) lives in item stores: refcounted
 * arenas that successive versions share. The model parses only what changed into a new
 * store; an unchanged item of the next version is the same item (a copy of its gw_item
 * pointing into the older store), so one changed rule among 100,000 costs one item, not
 * 100,000 copies. A version holds a reference on every store one of its items lives in,
 * and on no other, so a store is freed with the last version that still uses it.
 * Versions built elsewhere (tests) may put everything in `arena` and have no stores.
 */
#ifndef GW_GROUPDATA_H
#define GW_GROUPDATA_H

#include <gwsync/subscriber.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/arena.h"
#include "model/digest.h"

struct group_data {
	atomic_int refs;
	enum gw_group group;
	char md5[65];
	int64_t last_modify_time;
	char source[256];    /* the admin server URL it came from, or "snapshot" */
	int provisional;     /* loaded from the snapshot: any admin version replaces it */
	int64_t received_us; /* gw_mono_us() when the admin's reply arrived (latency figures) */

	struct gw_item *items; /* n_items, in the admin's order */
	size_t n_items;
	const struct gw_item **item_ptrs; /* &items[i]: gw_change.items (ABI 2 lists pointers) */
	uint32_t *by_key;  /* indices of items sorted by key (strcmp), for diff/lookup */
	size_t json_bytes; /* sum of the items' raw JSON lengths */

	struct arena arena;

	/* The stores this version's items live in (one reference each) and, per item, the
	 * index of its store; n_stores 0: contents in `arena` (not shared). */
	struct gd_store **stores;
	uint8_t *item_store;
	size_t n_stores;
	struct gw_item *heap_items; /* `items` when malloc'd (the model's), freed with it */

	/* Versions of event sources (model/edit.h): the sum of their items' digests, their
	 * identity (model/digest.h), kept so the next version adds and subtracts only the
	 * digests of the items that came and went. Items keep no digest of their own (one is
	 * computed from an item's JSON when it leaves): nothing per item. 0 in versions made
	 * otherwise (fetched, loaded from the snapshot): only event sources need it. */
	int has_digest_sum;
	struct item_digest digest_sum;
};

/* At most this many stores per version: beyond, the model copies every item into one new
 * store (a compaction), which also bounds the memory of replaced items kept by a store. */
#define GD_MAX_STORES 255

/* A refcounted arena of item contents (see above). A store can also own a text (the
 * admin's reply, whose bytes the items of a full parse point into instead of copying
 * them), and depend on another store's text (`text_of`: held as long as this one is). */
struct gd_store {
	atomic_int refs;
	struct arena arena;
	char *text; /* malloc'd, freed with the store; NULL: none */
	size_t text_len;
	struct gd_store *text_of;
};

struct gd_store *gd_store_new(void);
/* A store owning `text` (len bytes, malloc'd; a NUL at text[len]). NULL on out of memory
 * (text is then still the caller's). */
struct gd_store *gd_store_wrap(char *text, size_t len);
/* The text back from a store nobody else holds (refs 1): the store is freed. */
char *gd_store_unwrap(struct gd_store *s);
struct gd_store *gd_store_ref(struct gd_store *s);
void gd_store_unref(struct gd_store *s);
/* Bytes the store keeps alive: its arena, its text and the text it depends on. */
size_t gd_store_bytes(const struct gd_store *s);

/* Make the items whose raw JSON lies in `text` NUL-terminated, as the ABI promises, by
 * writing a NUL on the byte after each (the ',' or ']' the parser has read already). The
 * last step of a parse that pointed items into the text instead of copying them. */
void group_data_seal(struct group_data *gd, const struct gd_store *text);

/* A new, empty version with one reference. NULL on out of memory. */
struct group_data *group_data_new(enum gw_group group);

struct group_data *group_data_ref(struct group_data *gd);
void group_data_unref(struct group_data *gd);

/* Set each item's size and fill item_ptrs (group_data_index does it too). 0 or -1. */
int group_data_link(struct group_data *gd);

enum gd_index {
	GD_INDEX_DISTINCT = 0, /* every key is distinct */
	GD_INDEX_DUPLICATE,    /* *dup is the index of the first duplicate key found */
	GD_INDEX_NO_MEMORY,
};

/* Sort by_key after items are filled (also sets each item's size and item_ptrs). dup may be
 * NULL. */
enum gd_index group_data_index(struct group_data *gd, size_t *dup);

/* Binary search by key; NULL if absent. */
const struct gw_item *group_data_find(const struct group_data *gd, const char *key);

/* Where key is or would go in by_key: the first rank whose key is not below it (0 to
 * n_items); *found set when the item at that rank has the key. */
size_t group_data_rank(const struct group_data *gd, const char *key, int *found);

#endif
