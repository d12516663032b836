/*
 * The jansson filler (itemref.h): a tree per item, then one generic walk of the item's
 * table. Simple and obviously right, which is why it is the reference; its cost (a
 * malloc and a free for every value of every item) is why the agent no longer runs it.
 */
#include "itemref.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "model/keys.h"

static int fill(struct item_ctx *c, const json_t *obj, const struct field *fields, size_t n,
                void *dst);

/* A list of nested objects (conditions, params, paths) into an arena array. */
static int fill_list(struct item_ctx *c, const json_t *arr, const struct field *f, void *dst)
{
	const struct list_shape *ls = fields_list(f->kind);
	if (!json_is_array(arr))
		return item_err_field(c, f->json, "array", item_json_type(arr));
	size_t n = json_array_size(arr);
	unsigned char *items = n ? arena_calloc(c->mem, n * ls->size) : NULL;
	if (n && !items)
		return item_err_oom(c);
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(arr, i);
		if (!json_is_object(e))
			return item_err_field(c, f->json, "array of objects", item_json_type(e));
		if (fill(c, e, ls->fields, ls->n, items + i * ls->size) != 0)
			return -1;
	}
	*(void **)((char *)dst + f->off) = items;
	*(size_t *)((char *)dst + f->count_off) = n;
	return 0;
}

static int fill(struct item_ctx *c, const json_t *obj, const struct field *fields, size_t n,
                void *dst)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		const json_t *v = json_object_get(obj, f->json);
		char *slot = (char *)dst + f->off;
		int null = !v || json_is_null(v);
		switch (f->kind) {
		case K_STR:
		case K_STR_OR_NUM: {
			const char *s = NULL;
			char num[32];
			if (null)
				break;
			if (json_is_string(v)) {
				s = json_string_value(v);
			} else if (f->kind == K_STR_OR_NUM && json_is_integer(v)) {
				snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
				         json_integer_value(v));
				s = num;
			} else {
				return item_err_field(c, f->json, "string", item_json_type(v));
			}
			char *copy = arena_strndup(
			    c->mem, s, json_is_string(v) ? json_string_length(v) : strlen(s));
			if (!copy)
				return item_err_oom(c);
			*(const char **)slot = copy;
			break;
		}
		case K_INT:
			if (null)
				*(int64_t *)slot = GW_INT_UNSET;
			else if (json_is_integer(v))
				*(int64_t *)slot = json_integer_value(v);
			else
				return item_err_field(c, f->json, "integer", item_json_type(v));
			break;
		case K_BOOL:
			if (null)
				*(enum gw_bool *)slot = GW_UNSET;
			else if (json_is_boolean(v))
				*(enum gw_bool *)slot = json_is_true(v) ? GW_TRUE : GW_FALSE;
			else
				return item_err_field(c, f->json, "boolean", item_json_type(v));
			break;
		default:
			if (!null && fill_list(c, v, f, dst) != 0)
				return -1;
			break;
		}
	}
	return 0;
}

static int convert(struct item_ctx *c, enum gw_group g, const json_t *obj, const char *raw,
                   size_t raw_len, struct gw_item *it)
{
	const struct group_shape *sh = fields_group(g);
	if (!json_is_object(obj))
		return item_err_not_object(c, item_json_type(obj));
	if (item_set_json(c, g, raw, raw_len, it) != 0)
		return -1;

	const char *missing;
	const char *key = key_of(g, obj, c->mem, &missing);
	if (!key && missing)
		return item_err_missing_key(c, g, missing);
	it->key = key && key_single_field(g) ? arena_strdup(c->mem, key) : key;
	if (!it->key)
		return item_err_oom(c);
	c->key = it->key;

	if (!sh->fields) {
		const json_t *nm = json_object_get(obj, "name");
		if (json_is_string(nm))
			it->name = arena_strdup(c->mem, json_string_value(nm));
		return 0;
	}
	void *typed = arena_calloc(c->mem, sh->size);
	if (!typed)
		return item_err_oom(c);
	if (fill(c, obj, sh->fields, sh->n_fields, typed) != 0)
		return -1;
	*(void **)((char *)it + sh->item_ptr_off) = typed;
	/* the display name is one of the typed fields; find its copy */
	int ni = fields_name_index(g);
	if (ni >= 0)
		it->name = *(const char **)((char *)typed + sh->fields[ni].off);
	return 0;
}

int itemref_item(struct item_ctx *c, enum gw_group g, const char *raw, size_t len,
                 struct gw_item *it)
{
	/* jansson drops one NUL byte right after a number or a literal ("true\0,"): the item
	 * would keep a NUL inside its text, which the ABI promises NUL-terminated. The one
	 * place this reference is stricter than jansson. */
	json_t *obj =
	    memchr(raw, '\0', len) ? NULL : json_loadb(raw, len, JSON_REJECT_DUPLICATES, NULL);
	if (!obj)
		return item_err_not_json(c, raw, len);
	int rc = convert(c, g, obj, raw, len, it);
	json_decref(obj);
	return rc;
}
