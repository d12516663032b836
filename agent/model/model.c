/*
 * Admin JSON -> typed, immutable group versions (see model.h).
 *
 * Field conversion is table-driven: each item struct of the ABI is described once by a
 * table of (JSON name, kind, offset), and one generic filler walks it. Adding a field the
 * admin grows later is one table row. Strictness: a field that is null or missing takes
 * its "unset" value; a field of the wrong type refuses the whole group version, naming
 * group, item and field, because a gateway must never run on half a version.
 *
 * Each item's raw JSON text is cut from the original body (jspan.h), not re-serialised,
 * so subscribers see exactly what the admin sent.
 */
#include "model/model.h"

#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jspan.h"
#include "model/groups.h"
#include "model/keys.h"

enum kind { K_STR, K_STR_OR_NUM, K_INT, K_BOOL, K_CONDS, K_PARAMS, K_PATHS };

struct field {
	const char *json;
	enum kind kind;
	size_t off;
	size_t count_off; /* lists only: where the element count goes */
};

#define F(type, json, kind, member)                                                                \
	{                                                                                          \
		json, kind, offsetof(type, member), 0                                              \
	}
#define L(type, json, kind, member, count)                                                         \
	{                                                                                          \
		json, kind, offsetof(type, member), offsetof(type, count)                          \
	}

static const struct field condition_fields[] = {
    F(struct gw_condition, "paramType", K_STR, param_type),
    F(struct gw_condition, "operator", K_STR, op),
    F(struct gw_condition, "paramName", K_STR, param_name),
    F(struct gw_condition, "paramValue", K_STR, param_value),
};

static const struct field param_fields[] = {
    F(struct gw_auth_param, "appName", K_STR, app_name),
    F(struct gw_auth_param, "appParam", K_STR, app_param),
};

static const struct field path_fields[] = {
    F(struct gw_auth_path, "appName", K_STR, app_name),
    F(struct gw_auth_path, "path", K_STR, path),
    F(struct gw_auth_path, "enabled", K_BOOL, enabled),
};

static const struct field plugin_fields[] = {
    F(struct gw_plugin_data, "id", K_STR, id),
    F(struct gw_plugin_data, "name", K_STR, name),
    F(struct gw_plugin_data, "config", K_STR, config),
    F(struct gw_plugin_data, "role", K_STR_OR_NUM, role),
    F(struct gw_plugin_data, "pluginJar", K_STR, plugin_jar),
    F(struct gw_plugin_data, "namespaceId", K_STR, namespace_id),
    F(struct gw_plugin_data, "sort", K_INT, sort),
    F(struct gw_plugin_data, "enabled", K_BOOL, enabled),
};

static const struct field selector_fields[] = {
    F(struct gw_selector_data, "id", K_STR, id),
    F(struct gw_selector_data, "pluginId", K_STR, plugin_id),
    F(struct gw_selector_data, "pluginName", K_STR, plugin_name),
    F(struct gw_selector_data, "name", K_STR, name),
    F(struct gw_selector_data, "handle", K_STR, handle),
    F(struct gw_selector_data, "namespaceId", K_STR, namespace_id),
    F(struct gw_selector_data, "matchMode", K_INT, match_mode),
    F(struct gw_selector_data, "type", K_INT, type),
    F(struct gw_selector_data, "sort", K_INT, sort),
    F(struct gw_selector_data, "enabled", K_BOOL, enabled),
    F(struct gw_selector_data, "logged", K_BOOL, logged),
    F(struct gw_selector_data, "continued", K_BOOL, continued),
    F(struct gw_selector_data, "matchRestful", K_BOOL, match_restful),
    L(struct gw_selector_data, "conditionList", K_CONDS, conditions, n_conditions),
    L(struct gw_selector_data, "beforeConditionList", K_CONDS, before_conditions,
      n_before_conditions),
};

static const struct field rule_fields[] = {
    F(struct gw_rule_data, "id", K_STR, id),
    F(struct gw_rule_data, "name", K_STR, name),
    F(struct gw_rule_data, "pluginName", K_STR, plugin_name),
    F(struct gw_rule_data, "selectorId", K_STR, selector_id),
    F(struct gw_rule_data, "handle", K_STR, handle),
    F(struct gw_rule_data, "namespaceId", K_STR, namespace_id),
    F(struct gw_rule_data, "matchMode", K_INT, match_mode),
    F(struct gw_rule_data, "sort", K_INT, sort),
    F(struct gw_rule_data, "enabled", K_BOOL, enabled),
    F(struct gw_rule_data, "loged", K_BOOL, logged),
    F(struct gw_rule_data, "matchRestful", K_BOOL, match_restful),
    L(struct gw_rule_data, "conditionDataList", K_CONDS, conditions, n_conditions),
    L(struct gw_rule_data, "beforeConditionDataList", K_CONDS, before_conditions,
      n_before_conditions),
};

static const struct field app_auth_fields[] = {
    F(struct gw_app_auth_data, "appKey", K_STR, app_key),
    F(struct gw_app_auth_data, "appSecret", K_STR, app_secret),
    F(struct gw_app_auth_data, "namespaceId", K_STR, namespace_id),
    F(struct gw_app_auth_data, "enabled", K_BOOL, enabled),
    F(struct gw_app_auth_data, "open", K_BOOL, open),
    L(struct gw_app_auth_data, "paramDataList", K_PARAMS, params, n_params),
    L(struct gw_app_auth_data, "pathDataList", K_PATHS, paths, n_paths),
};

static const struct field meta_fields[] = {
    F(struct gw_meta_data, "id", K_STR, id),
    F(struct gw_meta_data, "appName", K_STR, app_name),
    F(struct gw_meta_data, "contextPath", K_STR, context_path),
    F(struct gw_meta_data, "path", K_STR, path),
    F(struct gw_meta_data, "rpcType", K_STR, rpc_type),
    F(struct gw_meta_data, "serviceName", K_STR, service_name),
    F(struct gw_meta_data, "methodName", K_STR, method_name),
    F(struct gw_meta_data, "parameterTypes", K_STR, parameter_types),
    F(struct gw_meta_data, "rpcExt", K_STR, rpc_ext),
    F(struct gw_meta_data, "namespaceId", K_STR, namespace_id),
    F(struct gw_meta_data, "enabled", K_BOOL, enabled),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* How each group maps onto the ABI. Newer groups have no table: key + raw JSON only. */
static const struct group_shape {
	const struct field *fields;
	size_t n_fields;
	size_t size;         /* of the typed struct */
	size_t item_ptr_off; /* where in struct gw_item the typed pointer goes */
	const char *name;    /* a display name field (the key is model/keys.c's) */
} shapes[GW_GROUP_COUNT] = {
    [GW_GROUP_PLUGIN] = {plugin_fields, N(plugin_fields), sizeof(struct gw_plugin_data),
                         offsetof(struct gw_item, plugin), "name"},
    [GW_GROUP_SELECTOR] = {selector_fields, N(selector_fields), sizeof(struct gw_selector_data),
                           offsetof(struct gw_item, selector), "name"},
    [GW_GROUP_RULE] = {rule_fields, N(rule_fields), sizeof(struct gw_rule_data),
                       offsetof(struct gw_item, rule), "name"},
    [GW_GROUP_APP_AUTH] = {app_auth_fields, N(app_auth_fields), sizeof(struct gw_app_auth_data),
                           offsetof(struct gw_item, app_auth), "appKey"},
    [GW_GROUP_META_DATA] = {meta_fields, N(meta_fields), sizeof(struct gw_meta_data),
                            offsetof(struct gw_item, meta), "path"},
};

struct pctx {
	struct group_data *gd;
	struct arena *mem; /* where new item contents go: the version's own store */
	int adopt;         /* items' raw JSON points into the reply's text (no copy) */
	struct gw_err *err;
	const char *group;
	size_t index;
	const char *key; /* the item's key once known, for messages */
	int *syntax;     /* set to 1 when the failure is text that is not JSON */
};

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_INTEGER:
		return "integer";
	case JSON_REAL:
		return "number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "boolean";
	default:
		return "null";
	}
}

static int field_error(struct pctx *c, const char *field, const char *want, const json_t *got)
{
	if (c->key)
		return gw_errf(c->err,
		               "group %s item %zu (key '%s'): field '%s': expected %s, got %s",
		               c->group, c->index, c->key, field, want, type_name(got));
	return gw_errf(c->err, "group %s item %zu: field '%s': expected %s, got %s", c->group,
	               c->index, field, want, type_name(got));
}

static int fill(struct pctx *c, const json_t *obj, const struct field *fields, size_t n, void *dst);

/* The element shapes of the nested lists, indexed by kind. */
static const struct list_shape {
	const struct field *fields;
	size_t n, size;
} list_shapes[] = {
    [K_CONDS] = {condition_fields, N(condition_fields), sizeof(struct gw_condition)},
    [K_PARAMS] = {param_fields, N(param_fields), sizeof(struct gw_auth_param)},
    [K_PATHS] = {path_fields, N(path_fields), sizeof(struct gw_auth_path)},
};

/* A list of nested objects (conditions, params, paths) into an arena array. */
static int fill_list(struct pctx *c, const json_t *arr, const struct field *f, void *dst)
{
	const struct list_shape *ls = &list_shapes[f->kind];
	if (!json_is_array(arr))
		return field_error(c, f->json, "array", arr);
	size_t n = json_array_size(arr);
	unsigned char *items = n ? arena_calloc(c->mem, n * ls->size) : NULL;
	if (n && !items)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(arr, i);
		if (!json_is_object(e))
			return field_error(c, f->json, "array of objects", e);
		if (fill(c, e, ls->fields, ls->n, items + i * ls->size) != 0)
			return -1;
	}
	*(void **)((char *)dst + f->off) = items;
	*(size_t *)((char *)dst + f->count_off) = n;
	return 0;
}

static int fill(struct pctx *c, const json_t *obj, const struct field *fields, size_t n, void *dst)
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
				return field_error(c, f->json, "string", v);
			}
			char *copy = arena_strndup(
			    c->mem, s, json_is_string(v) ? json_string_length(v) : strlen(s));
			if (!copy)
				return gw_errf(c->err, "group %s: out of memory", c->group);
			*(const char **)slot = copy;
			break;
		}
		case K_INT:
			if (null)
				*(int64_t *)slot = GW_INT_UNSET;
			else if (json_is_integer(v))
				*(int64_t *)slot = json_integer_value(v);
			else
				return field_error(c, f->json, "integer", v);
			break;
		case K_BOOL:
			if (null)
				*(enum gw_bool *)slot = GW_UNSET;
			else if (json_is_boolean(v))
				*(enum gw_bool *)slot = json_is_true(v) ? GW_TRUE : GW_FALSE;
			else
				return field_error(c, f->json, "boolean", v);
			break;
		default:
			if (!null && fill_list(c, v, f, dst) != 0)
				return -1;
			break;
		}
	}
	return 0;
}

static int convert_item(struct pctx *c, enum gw_group g, const json_t *obj, const char *raw,
                        size_t raw_len, struct gw_item *it)
{
	const struct group_shape *sh = &shapes[g];
	if (!json_is_object(obj))
		return gw_errf(c->err, "group %s item %zu: expected an object, got %s", c->group,
		               c->index, type_name(obj));
	it->group = g;
	it->json = c->adopt ? raw : arena_strndup(c->mem, raw, raw_len);
	if (!it->json)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	it->json_len = raw_len;
	c->gd->json_bytes += raw_len;

	const char *missing;
	const char *key = key_of(g, obj, c->mem, &missing);
	if (!key && missing)
		return gw_errf(c->err, "group %s item %zu: missing key field '%s' (its key is %s)",
		               c->group, c->index, missing, key_describe(g));
	it->key = key && key_single_field(g) ? arena_strdup(c->mem, key) : key;
	if (!it->key)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	c->key = it->key;

	if (!sh->fields) {
		const json_t *nm = json_object_get(obj, "name");
		if (json_is_string(nm))
			it->name = arena_strdup(c->mem, json_string_value(nm));
		return 0;
	}
	void *typed = arena_calloc(c->mem, sh->size);
	if (!typed)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	if (fill(c, obj, sh->fields, sh->n_fields, typed) != 0)
		return -1;
	*(void **)((char *)it + sh->item_ptr_off) = typed;
	/* the display name is one of the typed fields; find its copy */
	for (size_t i = 0; i < sh->n_fields; i++)
		if (strcmp(sh->fields[i].json, sh->name) == 0)
			it->name = *(const char **)((char *)typed + sh->fields[i].off);
	return 0;
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
			const struct list_shape *ls = &list_shapes[f->kind];
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

static int copy_item(struct pctx *c, const struct gw_item *old, const char *raw, struct gw_item *it)
{
	const struct group_shape *sh = &shapes[old->group];
	struct arena *a = c->mem;
	*it = *old;
	it->json = c->adopt ? raw : arena_strndup(a, old->json, old->json_len);
	if (!it->json)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	c->gd->json_bytes += old->json_len;
	it->key = arena_strdup(a, old->key);
	if (!it->key)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	if (!sh->fields) {
		it->name = old->name ? arena_strdup(a, old->name) : NULL;
		return 0;
	}
	void *typed = arena_alloc(a, sh->size);
	if (!typed)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	memcpy(typed, *(void *const *)((const char *)old + sh->item_ptr_off), sh->size);
	if (copy_fields(a, sh->fields, sh->n_fields, typed) != 0)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	*(void **)((char *)it + sh->item_ptr_off) = typed;
	it->name = NULL;
	for (size_t i = 0; i < sh->n_fields; i++)
		if (strcmp(sh->fields[i].json, sh->name) == 0)
			it->name = *(const char **)((char *)typed + sh->fields[i].off);
	return 0;
}

/* The previous version's item with the same key, found without parsing (only plain
 * string keys; anything unusual returns NULL and takes the full path). */
static const struct gw_item *same_key_item(const struct group_data *prev, enum gw_group g,
                                           const char *raw, size_t len)
{
	const char *field = key_single_field(g);
	if (!prev || !field)
		return NULL;
	const char *v = jspan_member(raw, raw + len, field);
	if (!v || v >= raw + len || *v != '"')
		return NULL;
	const char *q = memchr(v + 1, '"', (size_t)(raw + len - v - 1));
	if (!q || memchr(v + 1, '\\', (size_t)(q - v - 1)))
		return NULL;
	char key[256];
	size_t klen = (size_t)(q - v - 1);
	if (klen == 0 || klen >= sizeof key)
		return NULL;
	memcpy(key, v + 1, klen);
	key[klen] = '\0';
	return group_data_find(prev, key);
}

static const char *span_type(const char *v)
{
	switch (*v) {
	case '{':
		return "object";
	case '[':
		return "array";
	case '"':
		return "string";
	case 't':
	case 'f':
		return "boolean";
	case 'n':
		return "null";
	default:
		return "number";
	}
}

/* A small scalar value span through jansson (validates it fully). */
static json_t *scalar(const char *v, size_t len)
{
	return json_loadb(v, len, JSON_DECODE_ANY, NULL);
}

/* The md5 tag travels back in the listener's "md5,time" form parameter, in snapshot files
 * and in log lines: only letters and digits (the admin's is hex) are safe in all three. */
static int valid_md5(const json_t *md5)
{
	if (!json_is_string(md5))
		return 0;
	const char *s = json_string_value(md5);
	size_t n = json_string_length(md5);
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

/*
 * Building one version's item list. Items are compared with the held version (`prev`)
 * before anything is walked: the element at the cursor is first tried against prev's item
 * at the same position with jspan_array_next_same(), a memcmp of its text; equal bytes are
 * the same valid item, shared (its gw_item copied, pointing into prev's store) without
 * scanning or parsing it. Only an element that differs is walked and parsed into the new
 * version's own store; the cursor then moves past prev's item with the same key (or one
 * place on, when the key cannot be read without parsing), so an insertion, a removal or a
 * change costs one miss, not a miss for every item after it.
 */
struct build {
	struct pctx c;
	const struct group_data *prev;
	int share;                  /* prev's items can be shared (else they are copied) */
	int16_t map[GD_MAX_STORES]; /* prev's store index -> ours; -1: not adopted yet */
	struct gw_item *vec;        /* the items while the list grows */
	uint8_t *vst;               /* their stores */
	size_t cap, j;              /* j: the cursor in prev */
	int same_keys;              /* every item has the key prev has at its position */
};

/* Item j of prev as the next item (its text is at raw in the new reply): shared, or
 * copied when prev cannot be shared. */
static int take_old(struct build *b, size_t j, const char *raw, struct gw_item *it, uint8_t *st)
{
	const struct group_data *prev = b->prev;
	const struct gw_item *old = &prev->items[j];
	if (!b->share) {
		*st = 0;
		return copy_item(&b->c, old, raw, it);
	}
	uint8_t from = prev->item_store[j];
	if (b->map[from] < 0) {
		struct group_data *gd = b->c.gd;
		gd->stores[gd->n_stores] = gd_store_ref(prev->stores[from]);
		b->map[from] = (int16_t)gd->n_stores++;
	}
	*it = *old;
	*st = (uint8_t)b->map[from];
	b->c.gd->json_bytes += old->json_len;
	return 0;
}

static int parse_item(struct build *b, const char *raw, size_t len, struct gw_item *it, uint8_t *st,
                      long *k)
{
	struct pctx *c = &b->c;
	enum gw_group g = c->gd->group;
	*k = -1;
	memset(it, 0, sizeof *it); /* the typed pointers of other groups stay NULL */
	if (*raw != '{')
		return gw_errf(c->err, "group %s item %zu: expected an object, got %s", c->group,
		               c->index, span_type(raw));
	const struct gw_item *old = same_key_item(b->prev, g, raw, len);
	if (old) {
		*k = old - b->prev->items;
		if (old->json_len == len && memcmp(old->json, raw, len) == 0)
			return take_old(b, (size_t)*k, raw, it, st);
	}
	json_error_t je;
	json_t *obj = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je);
	if (!obj) {
		*c->syntax = 1;
		return gw_errf(c->err, "group %s item %zu: invalid JSON at column %d: %s", c->group,
		               c->index, je.column, je.text);
	}
	*st = 0;
	int rc = convert_item(c, g, obj, raw, len, it);
	json_decref(obj);
	return rc;
}

static int grow(struct build *b)
{
	size_t cap = b->cap ? 2 * b->cap : 256;
	struct gw_item *v = realloc(b->vec, cap * sizeof *v);
	if (v)
		b->vec = v;
	uint8_t *s = v ? realloc(b->vst, cap) : NULL;
	if (!s)
		return gw_errf(b->c.err, "group %s: out of memory", b->c.group);
	b->vst = s;
	b->cap = cap;
	return 0;
}

/* The 'data' array at v ('['): its items into b->vec. The byte after it, or NULL. */
static const char *build_items(struct build *b, const char *v, const char *end)
{
	struct pctx *c = &b->c;
	const struct group_data *prev = b->prev;
	size_t n_prev = prev ? prev->n_items : 0;
	struct jspan_iter it;
	jspan_array_begin(&it, v, end);
	if (n_prev) { /* room for the held count and a few more: a change rarely adds many */
		b->cap = n_prev + 16;
		b->vec = malloc(b->cap * sizeof *b->vec);
		b->vst = malloc(b->cap);
		if (!b->vec || !b->vst) {
			gw_errf(c->err, "group %s: out of memory", c->group);
			return NULL;
		}
	}
	for (;;) {
		if (c->index == b->cap && grow(b) != 0)
			return NULL;
		struct gw_item *dst = &b->vec[c->index];
		uint8_t *st = &b->vst[c->index];
		size_t j = b->j;
		c->key = NULL;
		if (j < n_prev &&
		    jspan_array_next_same(&it, prev->items[j].json, prev->items[j].json_len) == 1) {
			if (take_old(b, j, it.p - prev->items[j].json_len, dst, st) != 0)
				return NULL;
			b->j = j + 1;
		} else if (j + 1 < n_prev &&
		           jspan_array_next_same(&it, prev->items[j + 1].json,
		                                 prev->items[j + 1].json_len) == 1) {
			/* prev's item j was removed */
			if (take_old(b, j + 1, it.p - prev->items[j + 1].json_len, dst, st) != 0)
				return NULL;
			b->j = j + 2;
		} else {
			const char *iv;
			size_t ilen;
			long k;
			int r = jspan_array_next(&it, &iv, &ilen);
			if (r == 0)
				break;
			if (r < 0) {
				*c->syntax = 1;
				gw_errf(c->err,
				        "group %s: invalid JSON in 'data' (malformed or truncated "
				        "array)",
				        c->group);
				return NULL;
			}
			if (parse_item(b, iv, ilen, dst, st, &k) != 0)
				return NULL;
			b->j = k >= 0 ? (size_t)k + 1 : j + 1;
		}
		b->same_keys = b->same_keys && c->index < n_prev &&
		               (dst->key == prev->items[c->index].key ||
		                strcmp(dst->key, prev->items[c->index].key) == 0);
		c->gd->n_items = ++c->index;
	}
	return it.p;
}

/* The built list into the version's arena and its key index (prev's when the keys are
 * prev's keys in prev's places). 0, or -1 with err set. */
static int build_finish(struct build *b)
{
	struct group_data *gd = b->c.gd;
	const char *gname = b->c.group;
	size_t n = gd->n_items;
	/* the list becomes the version's as it is (shrunk in place: no copy, no second
	 * array of 100,000 items at the peak of a full sync) */
	struct gw_item *items = b->vec ? realloc(b->vec, (n ? n : 1) * sizeof *items) : NULL;
	if (items)
		b->vec = NULL;
	gd->items = gd->heap_items = items;
	gd->item_store = arena_alloc(&gd->arena, n ? n : 1);
	if (!gd->items || !gd->item_store)
		return gw_errf(b->c.err, "group %s: out of memory", gname);
	if (n)
		memcpy(gd->item_store, b->vst, n);
	const struct group_data *prev = b->prev;
	if (b->same_keys && prev && n == prev->n_items) {
		gd->by_key = arena_alloc(&gd->arena, (n ? n : 1) * sizeof *gd->by_key);
		if (!gd->by_key || group_data_link(gd) < 0)
			return gw_errf(b->c.err, "group %s: out of memory", gname);
		memcpy(gd->by_key, prev->by_key, n * sizeof *gd->by_key);
		return 0;
	}
	long dup = group_data_index(gd);
	if (dup == -2)
		return gw_errf(b->c.err, "group %s: out of memory", gname);
	if (dup >= 0) {
		char shown[300];
		return gw_errf(
		    b->c.err, "group %s: duplicate key '%s' (item %ld repeats an earlier item)",
		    gname, key_display(gd->group, gd->items[dup].key, shown, sizeof shown), dup);
	}
	return 0;
}

/* A store that has kept many replaced items, or many stores: copy instead of sharing, so
 * the next version starts over with one store holding exactly its items. */
static int shareable(const struct group_data *prev)
{
	if (!prev || prev->n_stores == 0 || prev->n_stores >= GD_MAX_STORES)
		return 0;
	size_t held = 0;
	for (size_t i = 0; i < prev->n_stores; i++)
		held += gd_store_bytes(prev->stores[i]);
	return held <= 4 * prev->json_bytes + (1u << 20);
}

/* A snapshot document's "group" member names `gname`. */
static int group_is(const json_t *grp, const char *gname)
{
	return json_is_string(grp) && strcmp(json_string_value(grp), gname) == 0;
}

/* A new version with its own store (index 0) ready for items. */
static struct group_data *version_new(enum gw_group g)
{
	struct group_data *gd = group_data_new(g);
	if (!gd)
		return NULL;
	gd->stores = arena_alloc(&gd->arena, GD_MAX_STORES * sizeof *gd->stores);
	if (!gd->stores || !(gd->stores[0] = gd_store_new())) {
		group_data_unref(gd);
		return NULL;
	}
	gd->n_stores = 1;
	return gd;
}

/*
 * One ConfigData object starting at `text` (whitespace first is fine):
 * {"md5":..,"lastModifyTime":..,"data":[..]} (and, in snapshot files, "group"). With
 * `stop` NULL the object must fill [text, end); else text may follow it and *stop is the
 * byte after it. Items are parsed one at a time (or shared with `prev` when their text is
 * unchanged) while the 'data' member is walked, so no tree of the whole group is built and
 * its bytes are read once. *syntax is set when the failure is text that is not JSON (not
 * when it is JSON of the wrong shape), so the caller knows to ask jansson where it is.
 */
static int parse_config_text(enum gw_group g, const char *text, const char *end, const char **stop,
                             struct gd_store *owner, const char *source,
                             const struct group_data *prev, struct group_data **out, int *syntax,
                             struct gw_err *err)
{
	const char *gname = gw_group_name(g);
	struct jspan_iter it;
	struct jspan_member m;
	const char *data = NULL;
	json_t *md5 = NULL, *lmt = NULL, *grp = NULL;
	int r, rc = -1;
	struct build b = {0};
	int64_t received = gw_mono_us();

	if (jspan_object_begin(&it, text, end) != 0)
		return gw_errf(err, "group %s: expected an object, got %s", gname,
		               jspan_ws(text, end) < end ? span_type(jspan_ws(text, end))
		                                         : "nothing");
	b.c = (struct pctx){NULL, NULL, 0, err, gname, 0, NULL, syntax};
	b.prev = prev;
	b.share = shareable(prev);
	/* a group parsed whole (nothing held to share) points into the reply's text instead
	 * of copying it: the text is then kept instead of a copy of 95% of it */
	b.c.adopt = owner && owner->text && !b.share && text >= owner->text &&
	            end <= owner->text + owner->text_len;
	b.same_keys = prev != NULL;
	for (size_t i = 0; i < GD_MAX_STORES; i++)
		b.map[i] = -1;
	while ((r = jspan_object_key(&it, &m)) == 1) {
		json_t **slot = NULL;
		if (jspan_key_is(&m, "data") == 1) {
			if (data) {
				gw_errf(err, "group %s: duplicate key 'data'", gname);
				goto out;
			}
			data = m.value;
			if (*data != '[') { /* refused below, after the envelope's own checks */
				if (jspan_object_skip(&it, &m) != 0)
					break;
				continue;
			}
			if (!(b.c.gd = version_new(g))) {
				gw_errf(err, "group %s: out of memory", gname);
				goto out;
			}
			b.c.mem = &b.c.gd->stores[0]->arena;
			if (b.c.adopt)
				b.c.gd->stores[0]->text_of = gd_store_ref(owner);
			const char *vend = build_items(&b, data, end);
			if (!vend)
				goto out;
			jspan_object_done(&it, &m, vend);
			continue;
		}
		if (jspan_object_skip(&it, &m) != 0)
			break;
		if (jspan_key_is(&m, "md5") == 1)
			slot = &md5;
		else if (jspan_key_is(&m, "lastModifyTime") == 1)
			slot = &lmt;
		else if (jspan_key_is(&m, "group") == 1)
			slot = &grp;
		json_t *v = scalar(m.value, m.value_len);
		if (!v || (slot && *slot)) {
			json_decref(v);
			*syntax = 1;
			gw_errf(err, "group %s: %s", gname, v ? "duplicate key" : "invalid JSON");
			goto out;
		}
		if (slot)
			*slot = v;
		else
			json_decref(v);                    /* unknown member: valid, ignored */
		if (slot == &grp && !group_is(grp, gname)) /* before its items are parsed */
			break;
	}
	if (grp && !group_is(grp, gname)) {
		gw_errf(err, "group %s: the document says it is group %s", gname,
		        json_is_string(grp) ? json_string_value(grp) : "(not a string)");
		goto out;
	}
	if (r != 0 || (!stop && jspan_ws(it.p, end) != end)) {
		*syntax = 1;
		gw_errf(err, "group %s: invalid JSON (malformed or truncated object)", gname);
		goto out;
	}
	if (!valid_md5(md5)) {
		gw_errf(err, "group %s: 'md5' must be 1 to 64 letters and digits", gname);
		goto out;
	}
	if (!json_is_integer(lmt)) {
		gw_errf(err, "group %s: 'lastModifyTime' must be an integer, got %s", gname,
		        lmt ? type_name(lmt) : "nothing");
		goto out;
	}
	if (!data || *data != '[') {
		gw_errf(err, "group %s: 'data' must be an array, got %s", gname,
		        data ? span_type(data) : "nothing");
		goto out;
	}
	struct group_data *gd = b.c.gd;
	snprintf(gd->md5, sizeof gd->md5, "%s", json_string_value(md5));
	gd->last_modify_time = json_integer_value(lmt);
	snprintf(gd->source, sizeof gd->source, "%s", source ? source : "");
	gd->received_us = received;
	if (build_finish(&b) != 0)
		goto out;
	if (stop)
		*stop = it.p;
	*out = gd;
	b.c.gd = NULL;
	rc = 0;
out:
	free(b.vec);
	free(b.vst);
	json_decref(md5);
	json_decref(lmt);
	json_decref(grp);
	group_data_unref(b.c.gd);
	return rc;
}

/* On a syntax error the streaming walk knows that, not where: ask jansson for the position
 * (this whole-document parse happens only on the error path). */
int model_syntax_error(const char *text, size_t len, const char *prefix, struct gw_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root) { /* the walk is stricter than jansson (e.g. text after the value) */
		json_decref(root);
		return -1;
	}
	return gw_errf(err, "%sinvalid JSON at line %d column %d: %s", prefix, je.line, je.column,
	               je.text);
}

/* Which of want[] is group name `m`'s key; -1 if none. */
static int wanted(const struct jspan_member *m, const enum gw_group *want, size_t n_want)
{
	for (size_t i = 0; i < n_want; i++)
		if (jspan_key_is(m, gw_group_name(want[i])) == 1)
			return (int)i;
	return -1;
}

/* The data object walked member by member, each wanted group through parse_config_text()
 * (which walks its value once, in place), the others validated and ignored. */
static int parse_groups(const char *data, const char *end, const char **stop,
                        struct gd_store *owner, const enum gw_group *want, size_t n_want,
                        const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                        struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		out[g] = NULL;
	*syntax = 0;
	const char *p = jspan_ws(data, end);
	struct jspan_iter it;
	struct jspan_member m;
	int r, rc = -1;

	if (p == end || *p != '{') {
		/* a value that is not an object, or nothing at all (then the text is not JSON) */
		*syntax = p == end;
		return gw_errf(err, "'data' must be an object keyed by group, got %s",
		               p < end ? span_type(p) : "nothing");
	}
	jspan_object_begin(&it, p, end);
	while ((r = jspan_object_key(&it, &m)) == 1) {
		int i = wanted(&m, want, n_want);
		if (i < 0) {
			json_t *v = NULL; /* validated, then ignored */
			if (jspan_object_skip(&it, &m) != 0 ||
			    !(v = scalar(m.value, m.value_len))) {
				*syntax = 1;
				gw_errf(err, "invalid JSON in an unrequested group");
				goto out;
			}
			json_decref(v);
			continue;
		}
		enum gw_group g = want[i];
		if (out[g]) {
			gw_errf(err, "group %s: appears twice in the reply", gw_group_name(g));
			goto out;
		}
		const char *vend;
		if (parse_config_text(g, m.value, end, &vend, owner, source, prev ? prev[g] : NULL,
		                      &out[g], syntax, err) != 0)
			goto out;
		jspan_object_done(&it, &m, vend);
	}
	if (r < 0 || (!stop && jspan_ws(it.p, end) != end)) {
		*syntax = 1;
		gw_errf(err, "invalid JSON: malformed 'data' object");
		goto out;
	}
	for (size_t i = 0; i < n_want; i++)
		if (!out[want[i]]) {
			gw_errf(err, "group %s: missing from the reply", gw_group_name(want[i]));
			goto out;
		}
	if (stop)
		*stop = it.p;
	rc = 0;
out:
	if (rc != 0)
		for (int g = 0; g < GW_GROUP_COUNT; g++) {
			group_data_unref(out[g]);
			out[g] = NULL;
		}
	return rc;
}

int model_parse_groups(const char *data, size_t len, const enum gw_group *want, size_t n_want,
                       const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                       struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	return parse_groups(data, data + len, NULL, NULL, want, n_want, source, prev, out, syntax,
	                    err);
}

int model_parse_groups_at(const char *data, const char *end, const char **stop,
                          struct gd_store *owner, const enum gw_group *want, size_t n_want,
                          const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                          struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	return parse_groups(data, end, stop, owner, want, n_want, source, prev, out, syntax, err);
}

int model_parse_group(enum gw_group group, const char *text, size_t len, const char *source,
                      struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	int syntax = 0;
	if (parse_config_text(group, text, text + len, NULL, NULL, source, NULL, out, &syntax,
	                      err) == 0)
		return 0;
	if (syntax) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "group %s: ", gw_group_name(group));
		model_syntax_error(text, len, prefix, err);
	}
	return -1;
}
