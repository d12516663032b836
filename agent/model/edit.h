/*
 * The next version of a group made from the held one and what changed, for the event
 * sources (WebSocket through patch.h, ZooKeeper and etcd through the kv mirror) and the
 * snapshot's journal: a one-item change among 100,000 must cost about one item, so nothing
 * here writes the group as JSON or parses it again, hashes every item, sorts every key or
 * copies an item.
 *
 * The changes are positional edits of the held version's item list: insert an item before
 * a position, replace the item at a position, remove it. The result shares every item it
 * keeps with the held version (the same pointer; the items live in refcounted pools,
 * groupdata.h) and takes the new items from `from`, the parsed items of the event, whose
 * pools it shares too. What is linear in the group is plain copying of arrays (the item
 * pointers, their pool indices, the key index), never parsing, hashing or comparing keys:
 * the key index is the held one with the few changed keys merged in at the ranks a binary
 * search finds, and the identity (digest.h) is the held one's sum minus the digests of the
 * items that left plus those of the items that came, each computed from its JSON then (an
 * item keeps no digest: nothing is added per item). The result carries the delta from the
 * held version (groupdata.h: what left, came and changed, in key order), built from the
 * edits alone.
 *
 * Pools: a version may reference at most GD_MAX_POOLS, and a pool keeps the memory of
 * items that later versions replaced. Usually the result references the held version's
 * pools as they are plus the event's (nothing per item). When that would be too many
 * pools, every item outside the pool most items live in (the full sync's, usually) is
 * copied into one new pool; and when its pools hold more than 4x its items' JSON (plus
 * 1 MiB), every item is copied into one new pool. Both look at every item and copy what
 * accumulated over many changes, so they cost a bounded amount per change on average.
 */
#ifndef GW_MODEL_EDIT_H
#define GW_MODEL_EDIT_H

#include <gwsync/subscriber.h>
#include <stddef.h>

#include "core/error.h"
#include "model/groupdata.h"

enum edit_op {
	EDIT_INSERT = 0, /* item goes before position `at` (n_items: at the end) */
	EDIT_REPLACE,    /* item replaces the one at `at` (its key may differ) */
	EDIT_REMOVE,     /* the item at `at` leaves */
};

struct edit {
	size_t at; /* a position in prev */
	enum edit_op op;
	const struct gd_item *item; /* INSERT, REPLACE: an item of `from`'s list */
};

/*
 * prev (NULL: empty) with `edits` applied, as a new unstamped version of prev's group (or
 * from's when prev is NULL): md5 is its identity, lastModifyTime 0, source "". The edits
 * are sorted by `at`; at one position the inserts come first, in their order, then at most
 * one replace or remove. Keys stay unique: an item whose key another item of the result
 * keeps is refused (err "duplicate key"). 0 with *out (one reference), or -1 (err names
 * the group and why).
 */
int model_edit(const struct group_data *prev, const struct group_data *from,
               const struct edit *edits, size_t n_edits, struct group_data **out,
               struct gw_err *err);

/* The same, with `md5` as the new version's tag instead of its identity (nothing hashed,
 * no digest sum kept): replaying a journal whose records name each version's tag. */
int model_edit_as(const struct group_data *prev, const struct group_data *from,
                  const struct edit *edits, size_t n_edits, const char *md5,
                  struct group_data **out, struct gw_err *err);

/* A full list: exactly from's items in from's order (from NULL: none) as a new unstamped
 * version of `group`, sharing from's pools; its identity is prev's (the held version, may
 * be NULL) adjusted by the items that differ, found by walking both key orders (an item
 * shared with prev is one pointer: no hashing), or computed from every item without one;
 * the walk also gives the delta from prev it carries. 0 or -1 (out of memory). */
int model_whole(enum gw_group group, const struct group_data *prev, const struct group_data *from,
                struct group_data **out, struct gw_err *err);

/* 1 if a and b hold the same items (same keys, byte-identical raw JSON) in any order; NULL
 * is empty. Linear: for full lists only. */
int model_same_items(const struct group_data *a, const struct group_data *b);

/* The identity of gd's items (NULL: none) computed from scratch: what model_edit and
 * model_whole reach step by step. 0, or -1 if the digest library failed. */
int model_identity(const struct group_data *gd, char out[33]);

#endif
