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
	unsigned char *items = n ? arena_calloc(&c->gd->arena, n * ls->size) : NULL;
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
			char *copy =
			    arena_strndup(&c->gd->arena, s,
			                  json_is_string(v) ? json_string_length(v) : strlen(s));
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
	it->json = arena_strndup(&c->gd->arena, raw, raw_len);
	if (!it->json)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	it->json_len = raw_len;
	c->gd->json_bytes += raw_len;

	const char *missing;
	const char *key = key_of(g, obj, &c->gd->arena, &missing);
	if (!key && missing)
		return gw_errf(c->err, "group %s item %zu: missing key field '%s' (its key is %s)",
		               c->group, c->index, missing, key_describe(g));
	it->key = key && key_single_field(g) ? arena_strdup(&c->gd->arena, key) : key;
	if (!it->key)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	c->key = it->key;

	if (!sh->fields) {
		const json_t *nm = json_object_get(obj, "name");
		if (json_is_string(nm))
			it->name = arena_strdup(&c->gd->arena, json_string_value(nm));
		return 0;
	}
	void *typed = arena_calloc(&c->gd->arena, sh->size);
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

static int copy_item(struct pctx *c, const struct gw_item *old, struct gw_item *it)
{
	const struct group_shape *sh = &shapes[old->group];
	struct arena *a = &c->gd->arena;
	*it = *old;
	it->json = arena_strndup(a, old->json, old->json_len);
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

/* The previous version's item with byte-identical text, found by its key without parsing
 * (only plain string keys; anything unusual takes the full path). */
static const struct gw_item *unchanged_item(const struct group_data *prev, enum gw_group g,
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
	const struct gw_item *old = group_data_find(prev, key);
	return old && old->json_len == len && memcmp(old->json, raw, len) == 0 ? old : NULL;
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

static int parse_item(struct pctx *c, enum gw_group g, const struct group_data *prev,
                      const char *raw, size_t len, struct gw_item *it)
{
	if (*raw != '{')
		return gw_errf(c->err, "group %s item %zu: expected an object, got %s", c->group,
		               c->index, span_type(raw));
	const struct gw_item *old = unchanged_item(prev, g, raw, len);
	if (old)
		return copy_item(c, old, it);
	json_error_t je;
	json_t *obj = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je);
	if (!obj) {
		*c->syntax = 1;
		return gw_errf(c->err, "group %s item %zu: invalid JSON at column %d: %s", c->group,
		               c->index, je.column, je.text);
	}
	int rc = convert_item(c, g, obj, raw, len, it);
	json_decref(obj);
	return rc;
}

/* A small scalar value span through jansson (validates it fully). */
static json_t *scalar(const char *v, size_t len)
{
	return json_loadb(v, len, JSON_DECODE_ANY, NULL);
}

/* Count the elements of the array at `v` (structure only) to size the item array. */
static long count_elements(const char *v, const char *end)
{
	struct jspan_iter it;
	const char *e;
	size_t l;
	long n = 0;
	int r;
	if (jspan_array_begin(&it, v, end) != 0)
		return -1;
	while ((r = jspan_array_next(&it, &e, &l)) == 1)
		n++;
	return r == 0 ? n : -1;
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
 * One ConfigData object in [text, end): {"md5":..,"lastModifyTime":..,"data":[..]} (and,
 * in snapshot files, "group"). Items are parsed one at a time (or carried over from
 * `prev` when their text is unchanged), so no tree of the whole group is ever built.
 * *syntax is set when the failure is text that is not JSON (not when it is JSON of the
 * wrong shape), so the caller knows to ask jansson where the syntax error is.
 */
static int parse_config_text(enum gw_group g, const char *text, const char *end, const char *source,
                             const struct group_data *prev, struct group_data **out, int *syntax,
                             struct gw_err *err)
{
	const char *gname = gw_group_name(g);
	struct jspan_iter it;
	struct jspan_member m;
	const char *data = NULL, *data_end = NULL;
	json_t *md5 = NULL, *lmt = NULL, *grp = NULL;
	int r, rc = -1;
	struct group_data *gd = NULL;

	if (jspan_object_begin(&it, text, end) != 0)
		return gw_errf(err, "group %s: expected an object, got %s", gname,
		               jspan_ws(text, end) < end ? span_type(jspan_ws(text, end))
		                                         : "nothing");
	while ((r = jspan_object_next(&it, &m)) == 1) {
		json_t **slot = NULL;
		if (jspan_key_is(&m, "data") == 1) {
			if (data) {
				gw_errf(err, "group %s: duplicate key 'data'", gname);
				goto out;
			}
			data = m.value;
			data_end = m.value + m.value_len;
			continue;
		}
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
			json_decref(v); /* unknown member: valid, ignored */
	}
	if (r < 0 || jspan_ws(it.p, end) != end) {
		*syntax = 1;
		gw_errf(err, "group %s: invalid JSON (malformed or truncated object)", gname);
		goto out;
	}
	if (grp && (!json_is_string(grp) || strcmp(json_string_value(grp), gname) != 0)) {
		gw_errf(err, "group %s: the document says it is group %s", gname,
		        json_is_string(grp) ? json_string_value(grp) : "(not a string)");
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
	/* Size the item array: the held version's count is a good guess (a change rarely
	 * adds many items), which spares a second walk over the text; else count. */
	long n = prev ? (long)prev->n_items + 16 : count_elements(data, data_end);
	if (n < 0) {
		*syntax = 1;
		gw_errf(err, "group %s: invalid JSON in 'data' (malformed or truncated array)",
		        gname);
		goto out;
	}
	gd = group_data_new(g);
	if (!gd) {
		gw_errf(err, "group %s: out of memory", gname);
		goto out;
	}
	snprintf(gd->md5, sizeof gd->md5, "%s", json_string_value(md5));
	gd->last_modify_time = json_integer_value(lmt);
	snprintf(gd->source, sizeof gd->source, "%s", source ? source : "");
	gd->received_us = gw_mono_us();
	size_t cap = (size_t)(n ? n : 1);
	gd->items = arena_calloc(&gd->arena, cap * sizeof *gd->items);
	if (!gd->items) {
		gw_errf(err, "group %s: out of memory", gname);
		goto out;
	}
	struct pctx c = {gd, err, gname, 0, NULL, syntax};
	const char *v;
	size_t vlen;
	int same_keys = prev != NULL; /* every item has the key prev has at its position */
	jspan_array_begin(&it, data, data_end);
	while ((r = jspan_array_next(&it, &v, &vlen)) == 1) {
		if (c.index == cap) { /* the guess was short: grow (the old array stays in the
			               * arena until the version goes; rare) */
			struct gw_item *bigger = arena_calloc(&gd->arena, 2 * cap * sizeof *bigger);
			if (!bigger) {
				gw_errf(err, "group %s: out of memory", gname);
				goto out;
			}
			memcpy(bigger, gd->items, cap * sizeof *bigger);
			gd->items = bigger;
			cap *= 2;
		}
		c.key = NULL;
		if (parse_item(&c, g, prev, v, vlen, &gd->items[c.index]) != 0)
			goto out;
		same_keys = same_keys && c.index < prev->n_items &&
		            strcmp(gd->items[c.index].key, prev->items[c.index].key) == 0;
		gd->n_items = ++c.index;
	}
	if (r < 0) {
		*syntax = 1;
		gw_errf(err, "group %s: invalid JSON in 'data' (malformed or truncated array)",
		        gname);
		goto out;
	}
	/* the same keys in the same places: prev's sorted index (and its uniqueness) holds */
	if (same_keys && gd->n_items == prev->n_items) {
		gd->by_key =
		    arena_alloc(&gd->arena, (gd->n_items ? gd->n_items : 1) * sizeof *gd->by_key);
		if (!gd->by_key || group_data_link(gd) < 0) {
			gw_errf(err, "group %s: out of memory", gname);
			goto out;
		}
		memcpy(gd->by_key, prev->by_key, gd->n_items * sizeof *gd->by_key);
		*out = gd;
		gd = NULL;
		rc = 0;
		goto out;
	}
	long dup = group_data_index(gd);
	if (dup == -2) {
		gw_errf(err, "group %s: out of memory", gname);
		goto out;
	}
	if (dup >= 0) {
		char shown[300];
		gw_errf(err, "group %s: duplicate key '%s' (item %ld repeats an earlier item)",
		        gname, key_display(gd->group, gd->items[dup].key, shown, sizeof shown),
		        dup);
		goto out;
	}
	*out = gd;
	gd = NULL;
	rc = 0;
out:
	json_decref(md5);
	json_decref(lmt);
	json_decref(grp);
	group_data_unref(gd);
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

/* The data object walked member by member, each wanted group through parse_config_text(),
 * the others validated and ignored. */
int model_parse_groups(const char *data, size_t len, const enum gw_group *want, size_t n_want,
                       const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                       struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		out[g] = NULL;
	*syntax = 0;
	const char *p = jspan_ws(data, data + len);
	struct jspan_iter it;
	struct jspan_member m;
	int r, rc = -1;

	if (p == data + len || *p != '{') {
		/* a value that is not an object, or nothing at all (then the text is not JSON) */
		*syntax = p == data + len;
		return gw_errf(err, "'data' must be an object keyed by group, got %s",
		               p < data + len ? span_type(p) : "nothing");
	}
	jspan_object_begin(&it, p, data + len);
	while ((r = jspan_object_next(&it, &m)) == 1) {
		int i = wanted(&m, want, n_want);
		if (i < 0) {
			json_t *v = scalar(m.value, m.value_len); /* validated, then ignored */
			if (!v) {
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
		if (parse_config_text(g, m.value, m.value + m.value_len, source,
		                      prev ? prev[g] : NULL, &out[g], syntax, err) != 0)
			goto out;
	}
	if (r < 0 || jspan_ws(it.p, data + len) != data + len) {
		*syntax = 1;
		gw_errf(err, "invalid JSON: malformed 'data' object");
		goto out;
	}
	for (size_t i = 0; i < n_want; i++)
		if (!out[want[i]]) {
			gw_errf(err, "group %s: missing from the reply", gw_group_name(want[i]));
			goto out;
		}
	rc = 0;
out:
	if (rc != 0)
		for (int g = 0; g < GW_GROUP_COUNT; g++) {
			group_data_unref(out[g]);
			out[g] = NULL;
		}
	return rc;
}

int model_parse_group(enum gw_group group, const char *text, size_t len, const char *source,
                      struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	int syntax = 0;
	if (parse_config_text(group, text, text + len, source, NULL, out, &syntax, err) == 0)
		return 0;
	if (syntax) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "group %s: ", gw_group_name(group));
		model_syntax_error(text, len, prefix, err);
	}
	return -1;
}
