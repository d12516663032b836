/*
 * The next version of a group built from the held one plus an event, keyed by the model's
 * key, for the sources that receive events instead of whole versions (WebSocket):
 * patch(previous, upserts, deletes). An event carries no md5 and no lastModifyTime, so the
 * new version is stamped here: its md5 is the identity of its item set (digest.h: the
 * same for the same items whatever order or path they came by, updated per changed item),
 * and its lastModifyTime is max(now, previous + 1), strictly increasing.
 *
 * Items keep their place: a replaced item stays where it was, new ones are appended in the
 * event's order, removed ones drop out. An upsert whose plugin id is that of a held plugin
 * under another name replaces it (a rename, keys.h key_alias). Items are keyed by the
 * model's own key (model.h); the patch never decides what a key is. The work is that of
 * model/edit.h: what changed, plus copying the held arrays.
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
 * the items prev holds (no change: nothing to offer). -1 (err names the group and why) on
 * out of memory.
 */
int model_patch(const struct patch *p, struct group_data **out, struct gw_err *err);

/*
 * The admin's JSON array of `group` items at [text, text + len) as an unstamped version
 * (md5 "", lastModifyTime 0): the items of one event (model_parse_array). Malformed text, a
 * malformed item or two items with one key refuse the whole array, err naming the group,
 * the item and why. Items byte-identical to prev's (may be NULL) are shared, not parsed.
 */
int model_parse_items(enum gw_group group, const char *text, size_t len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err);

/* Stamp a version made from prev (may be NULL): lastModifyTime max(now_ms, prev's + 1),
 * the source, provisional 0. */
void model_stamp(struct group_data *gd, const struct group_data *prev, const char *source,
                 int64_t now_ms);

#endif
