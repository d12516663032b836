/*
 * The admin's JSON -> immutable group versions (groupdata.h) of compact items (item.h),
 * every item checked as the plugin ABI's typed views would hold it. A group version with any
 * malformed item is refused whole, so the gateway never holds half of a version; the error names
 * the group, the item (its index and key) and the field.
 */
#ifndef GW_MODEL_H
#define GW_MODEL_H

#include <gwsync/subscriber.h>
#include <stddef.h>

#include "core/error.h"
#include "model/groupdata.h"

/*
 * Parse the data object of a fetch reply, {GROUP: ConfigData, ...} (the envelope around it
 * is the source's business). Every group in want[] must be present; each becomes
 * out[group] (one reference each; other slots NULL). `source` (the server URL) is recorded
 * in each version. An item whose raw text is byte-identical to the item with the same key
 * in prev[group] (the version held now; prev or its slots may be NULL) is shared with it
 * instead of parsed (groupdata.h), so one changed rule among 10,000 costs one parse and a
 * memcmp of the rest, not 10,000 parses or copies.
 * On error nothing is returned (all slots NULL), err says which group and why, and
 * *syntax says whether the text is not JSON at all (1) or JSON of the wrong shape (0).
 */
int model_parse_groups(const char *data, size_t len, const enum gw_group *want, size_t n_want,
                       const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                       struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err);

/*
 * The same for a data object that text may follow (a member of a larger document, such as
 * the reply's envelope): it starts at `data` (whitespace first is fine) and ends before
 * `end`; *stop is the byte after it. The reply is then read once, not first skipped over
 * and then parsed. `owner` (may be NULL) is a pool owning the whole text
 * (gd_pool_wrap): a group with nothing held to share from then points its items' raw
 * JSON into that text instead of copying it, and holds the pool. Those items are not
 * NUL-terminated until group_data_seal(out[g], owner), which writes into the text: call
 * it once the whole text has been read, before anyone else sees the versions.
 */
int model_parse_groups_at(const char *data, const char *end, const char **stop,
                          struct gd_pool *owner, const enum gw_group *want, size_t n_want,
                          const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                          struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err);

/*
 * Parse one ConfigData object {"md5":..,"lastModifyTime":..,"data":[..]} of `group`
 * (a "group" member, if present, must match). Used for snapshot files.
 */
int model_parse_group(enum gw_group group, const char *text, size_t len, const char *source,
                      struct group_data **out, struct gw_err *err);

/*
 * A bare JSON array of `group` items at [text, text + len) (whitespace around it is fine)
 * as an unstamped version (md5 "", lastModifyTime 0): the items of one event. Items
 * byte-identical to the item with the same key in prev (may be NULL) are shared with it,
 * not parsed. A malformed item, text that is not one array, or two items with one key
 * refuse the whole array, err naming the group, the item and why.
 */
int model_parse_array(enum gw_group group, const char *text, size_t len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err);

/* A new zeroed ABI item in arena a (its size set), packed at the struct's own alignment. */
struct gw_item *model_item_new(struct arena *a);

/* Whether a group's ABI items always carry their typed view: PLUGIN's (itemcopy.c); the
 * others' are made for a subscriber that reads them (model/abi.h). */
int model_typed_at_parse(enum gw_group g);

/*
 * Where the syntax error in `text` is: "PREFIXinvalid JSON at line L column C: what", from
 * jansson. Returns -1; leaves err as it was if jansson finds no error.
 */
int model_syntax_error(const char *text, size_t len, const char *prefix, struct gw_err *err);

#endif
