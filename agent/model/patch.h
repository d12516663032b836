/*
 * The next version of a group built from the held one plus an event, for the sources that
 * receive events instead of whole versions (WebSocket; ZooKeeper and etcd later):
 * patch(previous, upserts, deletes). An event carries no md5 and no lastModifyTime, so the
 * new version is stamped here: its md5 is the md5 of its canonical item list (the items'
 * raw JSON in key order, "[" a "," b "]"), the same for the same items whatever order or
 * path they came by, and its lastModifyTime is max(now, previous + 1), strictly increasing.
 *
 * Items keep their place: a replaced item stays where it was, new ones are appended in the
 * event's order, removed ones drop out. Items are keyed by the model's own key (model.h);
 * the patch never decides what a key is.
 */
#ifndef GW_PATCH_H
#define GW_PATCH_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/groupdata.h"

struct patch {
	enum gw_group group;
	const struct group_data *prev;    /* the held version; NULL: nothing held */
	const struct group_data *upserts; /* insert or replace by key; NULL: none */
	const char *const *deletes;       /* keys to remove; a key also upserted stays */
	size_t n_deletes;
	int replace;        /* the result is exactly `upserts`, in its order (a full list) */
	int force;          /* make a version even if nothing changed (prev is provisional) */
	const char *source; /* recorded in the version: the server URL */
	int64_t now_ms;     /* wall clock for the stamp */
};

/*
 * 0 with *out the new version (one reference), or *out NULL when the result holds exactly
 * the items prev holds (no change: nothing to offer). -1 (err names the group and why) if
 * an item cannot be parsed or on out of memory.
 */
int model_patch(const struct patch *p, struct group_data **out, struct gw_err *err);

/*
 * The admin's JSON array of `group` items at [text, text + len) as an unstamped version
 * (md5 "", lastModifyTime 0): the items of one event. Malformed text, a malformed item or
 * two items with one key refuse the whole array, err naming the group, the item and why.
 * Items byte-identical to prev's (may be NULL) are copied instead of parsed.
 */
int model_parse_items(enum gw_group group, const char *text, size_t len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err);

/* The md5 (32 lower-case hex digits) of gd's canonical item list; gd NULL: of "[]". */
void model_canonical_md5(const struct group_data *gd, char out[33]);

#endif
