/*
 * The change history's file and document form (history.h is the history itself).
 *
 * history_save() writes STATE_DIR/history (the /history document with its "format" and
 * "version", replaced atomically, mode 0600) after each pass of the snapshot writer and at
 * stop; history_load() reads it back at start. A file that is not what history_save()
 * writes is refused whole, with a log line, and the history starts empty: never a reason
 * to stop. The document form is the one GET /history shows (ops/history_json.h).
 */
#ifndef GW_HISTORY_FILE_H
#define GW_HISTORY_FILE_H

#include <jansson.h>

#include "core/error.h"
#include "store/history.h"

#define HISTORY_FILE           "history"
#define HISTORY_FILE_MAX       (64 * 1024 * 1024)
#define HISTORY_FORMAT         "gwsync-history"
#define HISTORY_FORMAT_VERSION 1

/* One entry as the document has it (a new reference, NULL on out of memory). */
json_t *history_entry_json(const struct history *h, const struct history_entry *e);

/* The document of entries copied by history_copy() (`copy`, per[k] of order[k]):
 *   {"size": N, "subscribers": [names], "groups": {"RULE": [entries, newest first]}}
 * a list for every group of `order` whose bit is in `groups`, entries accepted before `cut`
 * left out and none past the first `limit` kept (0: no limit). NULL on out of memory. */
json_t *history_doc(const struct history *h, const void *copy, const size_t *per,
                    const enum gw_group *order, size_t n_order, unsigned groups, int64_t cut,
                    size_t limit);

/* Write dir/history now (settling first). 0, or -1 with err. */
int history_save(struct history *h, const char *dir, struct gw_err *err);

/* Read dir/history into an empty history: 0 loaded (or no file: 1), -1 refused with
 * err saying why (the history stays empty). Entries of groups not in `groups` (n of them) and
 * outcomes of subscribers not configured now are dropped. */
int history_load(struct history *h, const char *dir, const enum gw_group *groups, size_t n,
                 struct gw_err *err);

#endif
