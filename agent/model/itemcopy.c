/*
 * The ABI's item (struct gw_item) as the agent makes it on delivery (model/abi.h): a zeroed
 * struct packed in an arena, and which groups always carry their typed view.
 */
#include <string.h>

#include "model/model.h"

/* PLUGIN's items always carry their typed view: tens of items, and ABI 2 promised them to
 * every plugin (GW_SUB_TYPED_ON_DEMAND included: docs/plugin-guide.md). The others' are
 * made for a subscriber that reads them (model/abi.h). */
int model_typed_at_parse(enum gw_group g)
{
	return g == GW_GROUP_PLUGIN;
}

struct gw_item *model_item_new(struct arena *a)
{
	struct gw_item *it = arena_alloc_align(a, sizeof *it, _Alignof(struct gw_item));
	if (it) {
		memset(it, 0, sizeof *it);
		it->size = sizeof *it;
	}
	return it;
}
