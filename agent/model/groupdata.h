/*
 * One accepted version of one configuration group: immutable once built, shared by
 * reference count between the poller that fetched it, the store, the dispatcher, the
 * snapshot writer and the status endpoint. Nobody holds a lock while reading it.
 *
 * A version is a list of compact items (model/item.h: 16 bytes each, held by value): an
 * item is where its raw JSON is and where its key is in it. The JSON lives in item pools,
 * refcounted arenas that successive versions share (or in the admin's reply a pool keeps).
 * The model parses only what changed into a new pool; an unchanged item of the next
 * version is the same item (the same JSON pointer), so one changed rule among 100,000
 * costs one item and a copy of the item array, never 100,000 parses. The ABI's gw_items
 * are not held here: they are made on delivery (model/abi.h). A version holds a reference on every
 * pool one of its items lives in, and on no other, so a pool is freed with the last version that
 * still uses it. A version's own memory (the pointer list, the key index) lives in its arena, or
 * for a list the model grew while parsing, in `heap_items`. Versions built elsewhere (tests) may
 * put everything in `arena` and have no pools.
 *
 * Immutable means: once a version is in the store, nothing writes it, with one documented
 * exception, owned by the dispatcher: the ABI's items and their typed views (model/abi.h)
 * are made on delivery, by the delivering thread only, into `abi_items`, `abi` and `lazy`
 * below (and a pool's `abi` and `lazy`). Nobody else reads or writes those fields, so no
 * lock is needed and nobody casts const away: the dispatcher holds its versions by plain
 * pointer (references it took), everyone else through const.
 *
 * A version made from the held one by edits (model/edit.h) carries the delta from it
 * (`delta`), so whoever still holds that predecessor gets what changed without merging two
 * key indexes (diff.h).
 */
#ifndef GW_GROUPDATA_H
#define GW_GROUPDATA_H

#include <gwsync/subscriber.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/htab.h"
#include "model/digest.h"
#include "model/item.h"

/* An item present before and after a change whose JSON differs. */
struct gd_update {
	const struct gd_item *old_item;
	const struct gd_item *new_item;
};

/* The delta a version carries from the one it was made from (see the top). `pred` is only
 * compared, never followed: with `pred_born` it names the predecessor (an address alone
 * could be that of a later version). The removed items and the old side of the updates
 * are the predecessor's: valid while whoever compares holds it. Lists in key order. */
struct gd_delta {
	const struct group_data *pred; /* NULL: no delta carried */
	int64_t pred_born;
	const struct gd_item **added;
	size_t n_added;
	struct gd_update *updated;
	size_t n_updated;
	const struct gd_item **removed;
	size_t n_removed;
};

struct group_data {
	atomic_int refs;
	enum gw_group group;
	char md5[65];
	int64_t last_modify_time;
	char server[256];    /* the admin server URL it came from, or "snapshot" */
	int provisional;     /* loaded from the snapshot: any admin version replaces it */
	int64_t received_us; /* gw_mono_us() when the admin's reply arrived (latency figures) */

	int64_t born; /* CLOCK_MONOTONIC ns at creation: with the address, who it is */

	struct gd_item *items; /* n_items items, in the admin's order: gw_change.items */
	size_t n_items;
	uint32_t *by_key;     /* positions of items sorted by key (strcmp), for diff/lookup; NULL
	                       * when the items are in key order already (an admin's group
	                       * usually is): rank r is then position r (group_data_at) */
	struct gd_keys *keys; /* what by_key points into (a reference), when made by
	                       * group_data_new_index; shared with the versions whose keys
	                       * are at the same positions */
	size_t json_bytes;    /* sum of the items' raw JSON lengths */

	struct arena arena;

	/* The pools this version's items live in (one reference each) and, per item, the
	 * index of its pool; n_pools 0: contents in `arena` (not shared). */
	struct gd_pool **pools;
	uint8_t *item_pool;
	size_t n_pools;
	struct gd_item *heap_items; /* `items` when malloc'd (the model's), freed with it */
	uint8_t *heap_pool;         /* `item_pool` when calloc'd (all zero: one pool) */

	/* Versions of event sources (model/edit.h): the sum of their items' digests, their
	 * identity (model/digest.h), kept so the next version adds and subtracts only the
	 * digests of the items that came and went. Items keep no digest of their own (one is
	 * computed from an item's JSON when it leaves): nothing per item. 0 in versions made
	 * otherwise (fetched, loaded from the snapshot): only event sources need it. */
	int has_digest_sum;
	struct item_digest digest_sum;

	struct gd_delta delta; /* from the version it was made from; its arrays in `arena` */
	int delta_shares;      /* every item not in `delta` is the predecessor's own */

	/* The dispatcher's (see the top), touched only by the delivering thread
	 * (model/abi.h): the ABI's complete list (n_items gw_items, made at the first delivery
	 * to a subscriber that reads lists; NULL before), whether every one has its typed
	 * view, and for a version without pools, its items' gw_items (`abi`, by JSON pointer)
	 * and where they go. */
	struct gw_item **abi_items;
	int abi_typed;
	struct htab abi;
	struct arena lazy;
};

/* A key index (by_key) as a refcounted block: a version made by replacing items in place
 * under their keys (a one-rule change) has its predecessor's keys at the same positions, so
 * it takes a reference instead of copying 4 bytes per item (400 KB at 100,000 rules). */
struct gd_keys {
	atomic_int refs;
	uint32_t pos[];
};

/* At most this many pools per version: beyond, the model copies every item into one new
 * pool (a compaction), which also bounds the memory of replaced items kept by a pool. */
#define GD_MAX_POOLS 255

/* A refcounted arena of item contents (see above). A pool can also own a text (the
 * admin's reply, whose bytes the items of a full parse point into instead of copying
 * them), and depend on another pool's text (`text_of`: held as long as this one is). */
struct gd_pool {
	atomic_int refs;
	struct arena arena;
	/* gw_items and their typed views made on delivery (model/abi.h): that thread's; `abi`
	 * finds an item's by its JSON pointer */
	struct arena lazy;
	struct htab abi;
	char *text; /* malloc'd, freed with the pool; NULL: none */
	size_t text_len;
	struct gd_pool *text_of;
};

struct gd_pool *gd_pool_new(void);
/* A pool owning `text` (len bytes, malloc'd; a NUL at text[len]). NULL on out of memory
 * (text is then still the caller's). */
struct gd_pool *gd_pool_wrap(char *text, size_t len);
/* The text back from a pool nobody else holds (refs 1): the pool is freed. */
char *gd_pool_unwrap(struct gd_pool *s);
struct gd_pool *gd_pool_ref(struct gd_pool *s);
void gd_pool_unref(struct gd_pool *s);
/* Bytes the pool keeps alive: its arena, its text and the text it depends on (not the
 * typed views made on delivery: those are the delivering thread's to count, lazy.total). */
size_t gd_pool_bytes(const struct gd_pool *s);

/* Make the items whose raw JSON lies in `text` NUL-terminated, as the ABI promises, by
 * writing a NUL on the byte after each (the ',' or ']' the parser has read already). The
 * last step of a parse that pointed items into the text instead of copying them. */
void group_data_seal(struct group_data *gd, const struct gd_pool *text);

/* A new, empty version with one reference. NULL on out of memory. */
struct group_data *group_data_new(enum gw_group group);

struct group_data *group_data_ref(struct group_data *gd);
void group_data_unref(struct group_data *gd);

enum gd_index {
	GD_INDEX_DISTINCT = 0, /* every key is distinct */
	GD_INDEX_DUPLICATE,    /* *dup is the index of the first duplicate key found */
	GD_INDEX_NO_MEMORY,
};

/* A new key index of n positions for gd (gd->by_key and gd->keys set; its contents the
 * caller's to write). NULL on out of memory. */
uint32_t *group_data_new_index(struct group_data *gd, size_t n);

/* gd's key index is from's (the same keys at the same positions): shared, or copied when
 * from's is not a gd_keys block (a version made by hand); none when from has none. 0 or -1
 * (out of memory). */
int group_data_share_index(struct group_data *gd, const struct group_data *from);

/* Sort by_key after items are filled (none made when they are in key order: by_key stays
 * NULL). dup may be NULL. */
enum gd_index group_data_index(struct group_data *gd, size_t *dup);

/* The delta `to` carries from `from` (both non-NULL), or NULL when to was not made from
 * from (or carries none): the caller then merges the key indexes. */
const struct gd_delta *group_data_delta(const struct group_data *to, const struct group_data *from);

/* The position of the item of rank r (0 .. n_items - 1) in key order. */
static inline size_t group_data_at(const struct group_data *gd, size_t r)
{
	return gd->by_key ? gd->by_key[r] : r;
}

/* Binary search by key; NULL if absent. */
const struct gd_item *group_data_find(const struct group_data *gd, const char *key);

/* Where key is or would go in by_key: the first rank whose key is not below it (0 to
 * n_items); *found set when the item at that rank has the key. */
size_t group_data_rank(const struct group_data *gd, const char *key, int *found);

/* The same for the key of item `it` (of any version). */
size_t group_data_rank_item(const struct group_data *gd, const struct gd_item *it, int *found);

#endif
