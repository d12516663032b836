/*
 * The change history as GET /history shows it (docs/operations.md), and as the status page
 * and `gwsyncd --status` read it: the view of the store's history (store/history.h) that an
 * operator asks for, by group, age and number.
 */
#ifndef GW_OPS_HISTORY_JSON_H
#define GW_OPS_HISTORY_JSON_H

#include <jansson.h>

#include "store/history.h"

/*
 * The history as JSON:
 *   {"size": N, "subscribers": [names], "groups": {"RULE": [entries, newest first]}}
 * only groups whose bit (1 << group) is in `groups` (in the order of `order`, n_order of
 * them), only entries accepted at or after `since_ms`, at most `limit` entries in all
 * (the newest; 0: no limit). Counts not known yet are null. NULL on out of memory.
 */
json_t *history_json(struct history *h, const enum gw_group *order, size_t n_order, unsigned groups,
                     int64_t since_ms, size_t limit);

#endif
