/*
 * The model's versions as a subscriber sees them, for the model's tests: the items of the
 * ABI (struct gw_item, with their typed views) that the dispatcher makes on delivery
 * (model/abi.h), and an item's key as a C string.
 */
#ifndef GW_TEST_ABIVIEW_H
#define GW_TEST_ABIVIEW_H

#include <stddef.h>

#include "model/groupdata.h"

/* Every item of gd made as a subscriber that reads typed views gets it (kept with gd, in
 * gd->abi_items). Returns gd. */
struct group_data *abi_typed(struct group_data *gd);

/* Item i of gd as that subscriber gets it. */
const struct gw_item *abi_item(struct group_data *gd, size_t i);

/* The key of `it`, NUL-terminated (one of 8 buffers used in turn: valid for 8 calls). */
const char *item_key(const struct gd_item *it);

#endif
