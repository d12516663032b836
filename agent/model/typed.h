/*
 * Typed views made when a subscriber reads them, not when a version is parsed. The model
 * checks every typed field of an item when it parses it (a version with one malformed
 * item is still refused whole), but keeps only its compact item (item.h): the typed view
 * is made into the ABI's gw_item on delivery (abi.h), for a subscriber that reads every
 * item's view (ABI 1, or ABI 2 without GW_SUB_TYPED_ON_DEMAND), PLUGIN's always; one that
 * asks for them (host->item_typed()) gets a copy made for that call.
 *
 * Threads: a gw_item and its view are made and read only on the thread that delivers (the
 * dispatcher; gwsync-replay and the testing library have one thread).
 */
#ifndef GW_MODEL_TYPED_H
#define GW_MODEL_TYPED_H

#include "core/arena.h"
#include "core/error.h"
#include "model/groupdata.h"
#include "model/intern.h"
#include "model/itemdec.h"

/* Make the typed view of gw_item `it` (its key and name set, its view missing) in `mem`,
 * its strings through `in` (may be NULL). 0, or -1 (err: out of memory). */
int model_typed_make(struct itemdec *dec, struct intern *in, struct gw_item *it, struct arena *mem,
                     struct gw_err *err);

/* `it` with its typed view: it itself when it has one (or its group has none), else a copy
 * made in `scratch` (its key and name too: it outlives `it`; its json is `it`'s). NULL on
 * out of memory. */
const struct gw_item *model_typed_copy(const struct gw_item *it, struct arena *scratch);

/* 1 if `it`'s group has typed fields and it has no view of them yet. */
int model_typed_missing(const struct gw_item *it);

#endif
