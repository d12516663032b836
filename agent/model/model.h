/*
 * The admin's JSON (jansson) -> immutable group versions (groupdata.h) with typed items of
 * the plugin ABI. A group version with any malformed item is refused whole, so the
 * gateway never holds half of a version; the error names the group, the item (its index
 * and key) and the field.
 */
#ifndef GW_MODEL_H
#define GW_MODEL_H

#include <gwsync/subscriber.h>
#include <stddef.h>

#include "core/error.h"
#include "model/groupdata.h"

/*
 * Parse a reply of GET /configs/fetch: {"code":200,"message":..,"data":{GROUP:ConfigData}}.
 * Every group in want[] must be present in data; each becomes out[group] (one reference
 * each; other slots NULL). `source` (the server URL) is recorded in each version.
 * On error nothing is returned (all slots NULL) and err says which group and why.
 */
int model_parse_fetch(const char *body, size_t len, const enum gw_group *want, size_t n_want,
                      const char *source, struct group_data *out[GW_GROUP_COUNT],
                      struct gw_err *err);

/*
 * The same, carrying over unchanged items: an item whose raw text is byte-identical to the
 * item with the same key in prev[group] (the version held now; may be NULL) is copied
 * instead of parsed, so one changed rule among 10,000 costs one parse, not 10,000.
 */
int model_parse_fetch_reuse(const char *body, size_t len, const enum gw_group *want, size_t n_want,
                            const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                            struct group_data *out[GW_GROUP_COUNT], struct gw_err *err);

/*
 * Parse one ConfigData object {"md5":..,"lastModifyTime":..,"data":[..]} of `group`
 * (a "group" member, if present, must match). Used for snapshot files.
 */
int model_parse_group(enum gw_group group, const char *text, size_t len, const char *source,
                      struct group_data **out, struct gw_err *err);

/*
 * Check the common envelope {"code":200,"data":...} of any admin reply and return the
 * parsed root (caller json_decref()s) with *data pointing into it. A non-200 code gives
 * "admin code N: message". Used for login and listener replies.
 */
struct json_t;
int model_parse_envelope(const char *body, size_t len, struct json_t **root, struct json_t **data,
                         struct gw_err *err);

#endif
