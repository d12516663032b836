/*
 * Items copied into a pool (see model.h): how an item unchanged since the held version is
 * carried into a new pool without parsing it again (a compaction, an edit's general
 * settling), its strings and PLUGIN's typed fields deep-copied.
 */
#include <string.h>

#include "model/fields.h"
#include "model/model.h"

/* Whether a group's items are parsed with their typed views (model/typed.h): PLUGIN's,
 * whose ids the model reads itself (keys.h key_alias). The others' are made on delivery. */
int model_typed_at_parse(enum gw_group g)
{
	return g == GW_GROUP_PLUGIN;
}

/* Deep copy of a typed struct described by `fields` (strings and nested lists) into the
 * new version's arena: how an item unchanged since the previous version is carried over
 * without parsing it again. */
static int copy_fields(struct arena *a, const struct field *fields, size_t n, void *dst)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		char *slot = (char *)dst + f->off;
		if (f->kind == K_STR || f->kind == K_STR_OR_NUM) {
			const char *src = *(const char **)slot;
			if (src && !(*(const char **)slot = arena_strdup(a, src)))
				return -1;
		} else if (f->kind == K_CONDS || f->kind == K_PARAMS || f->kind == K_PATHS) {
			const struct list_shape *ls = fields_list(f->kind);
			size_t count = *(size_t *)((char *)dst + f->count_off);
			const void *src = *(const void **)slot;
			if (!count)
				continue;
			unsigned char *copy = arena_alloc(a, count * ls->size);
			if (!copy)
				return -1;
			memcpy(copy, src, count * ls->size);
			for (size_t j = 0; j < count; j++)
				if (copy_fields(a, ls->fields, ls->n, copy + j * ls->size) != 0)
					return -1;
			*(void **)slot = copy;
		}
	}
	return 0;
}

/* The contents of `old` (key, name, and for PLUGIN its typed fields) deep-copied into
 * arena a; it->json is left to the caller. Another group's typed view is never read here
 * (the delivering thread may be making it: model/typed.h): the copy gets its own when it
 * is delivered. 0 or -1 (out of memory). */
static int copy_contents(struct arena *a, const struct gw_item *old, struct gw_item *it)
{
	const struct group_shape *sh = fields_group(old->group);
	if (!(it->key = arena_strdup(a, old->key)))
		return -1;
	if (!sh->fields || !model_typed_at_parse(old->group)) {
		it->name = old->name
		               ? (old->name == old->key ? it->key : arena_strdup(a, old->name))
		               : NULL;
		return old->name && !it->name ? -1 : 0;
	}
	void *typed = arena_alloc(a, sh->size);
	if (!typed)
		return -1;
	memcpy(typed, *(void *const *)((const char *)old + sh->item_ptr_off), sh->size);
	if (copy_fields(a, sh->fields, sh->n_fields, typed) != 0)
		return -1;
	*(void **)((char *)it + sh->item_ptr_off) = typed;
	int ni = fields_name_index(old->group);
	it->name = ni >= 0 ? *(const char **)((char *)typed + sh->fields[ni].off) : NULL;
	return 0;
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

/* A new item in a with old's group, JSON length and contents; its raw JSON is `json`. */
struct gw_item *model_copy_item_to(struct arena *a, const struct gw_item *old, const char *json)
{
	struct gw_item *it = json ? model_item_new(a) : NULL;
	if (!it)
		return NULL;
	it->group = old->group;
	it->json = json;
	it->json_len = old->json_len;
	return copy_contents(a, old, it) == 0 ? it : NULL;
}

struct gw_item *model_copy_item(struct arena *a, const struct gw_item *old)
{
	return model_copy_item_to(a, old, arena_strndup(a, old->json, old->json_len));
}
