/*
 * Typed views made when a subscriber reads them, not when a version is parsed. The model
 * checks every typed field of an item when it parses it (a version with one malformed
 * item is still refused whole), but keeps only its key, name and raw JSON (PLUGIN, tens
 * of items whose ids the model reads itself, excepted): the typed view is about half of
 * what an item costs, and the bundled subscribers never read it.
 *
 * A subscriber that reads the typed pointers of every item (ABI 1, or ABI 2 without
 * GW_SUB_TYPED_ON_DEMAND) gets them made before its apply(): into the shared items
 * themselves, once, their strings interned per pool (intern.h), so the versions that
 * share an item share its view; for a version made by edits from the one the subscriber
 * holds, only the items the edits brought. One that asks for them (host->item_typed())
 * gets a copy made for that call.
 *
 * Threads: a typed pointer of an item outside PLUGIN is written here and read by
 * subscribers, both only on the thread that delivers (the dispatcher; gwsync-replay and
 * the testing library have one thread); the model's own threads never read one (they copy
 * an item by its key, name and JSON). The views live in the pool of their item (its
 * `lazy` arena, written only here), so they are freed with it.
 */
#ifndef GW_MODEL_TYPED_H
#define GW_MODEL_TYPED_H

#include "core/arena.h"
#include "core/error.h"
#include "model/groupdata.h"

/* Make the typed view of every item of `to` that has none (a change's old items are
 * `from`'s: made too, if from's are not). `from` (may be NULL) is the version the
 * subscriber holds: when to was made from it by edits, only the new items are looked at.
 * 0, or -1 (err: out of memory). */
int model_typed_fill(struct group_data *to, struct group_data *from, struct gw_err *err);

/* `it` with its typed view: it itself when it has one (or its group has none), else a copy
 * made in `scratch`. NULL on out of memory. */
const struct gw_item *model_typed_copy(const struct gw_item *it, struct arena *scratch);

/* A top-level string member of the item's raw JSON (e.g. "pluginName"), decoded into buf:
 * what the typed view would hold, for the model's own threads, which never read a view.
 * NULL when it is absent, not a string, or longer than cap - 1. */
const char *model_item_string(const struct gw_item *it, const char *member, char *buf, size_t cap);

/* 1 if `it`'s group has typed fields and it has no view of them yet. */
int model_typed_missing(const struct gw_item *it);

#endif
