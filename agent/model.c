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
#include "model.h"

#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jspan.h"

enum kind { K_STR, K_STR_OR_NUM, K_INT, K_BOOL, K_CONDS, K_PARAMS, K_PATHS };

struct field {
	const char *json;
	enum kind kind;
	size_t off;
	size_t count_off; /* lists only: where the element count goes */
};

#define F(type, json, kind, member) {json, kind, offsetof(type, member), 0}
#define L(type, json, kind, member, count)                                                     \
	{json, kind, offsetof(type, member), offsetof(type, count)}

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
	const char *key;     /* the key field, NULL: try key_candidates */
	const char *name;    /* a display name field */
} shapes[GW_GROUP_COUNT] = {
    [GW_GROUP_PLUGIN] = {plugin_fields, N(plugin_fields), sizeof(struct gw_plugin_data),
                         offsetof(struct gw_item, plugin), "id", "name"},
    [GW_GROUP_SELECTOR] = {selector_fields, N(selector_fields), sizeof(struct gw_selector_data),
                           offsetof(struct gw_item, selector), "id", "name"},
    [GW_GROUP_RULE] = {rule_fields, N(rule_fields), sizeof(struct gw_rule_data),
                       offsetof(struct gw_item, rule), "id", "name"},
    [GW_GROUP_APP_AUTH] = {app_auth_fields, N(app_auth_fields), sizeof(struct gw_app_auth_data),
                           offsetof(struct gw_item, app_auth), "appKey", "appKey"},
    [GW_GROUP_META_DATA] = {meta_fields, N(meta_fields), sizeof(struct gw_meta_data),
                            offsetof(struct gw_item, meta), "id", "path"},
};

/* Natural keys of the newer groups, tried in order; failing all, the raw JSON itself is
 * the key (an edited item is then a removal plus an addition, which is still correct). */
static const char *const key_candidates[] = {"id", "selectorId", "proxyApiKey", "name"};

struct pctx {
	struct group_data *gd;
	struct gw_err *err;
	const char *group;
	size_t index;
	const char *key; /* the item's key once known, for messages */
};

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static int field_error(struct pctx *c, const char *field, const char *want, const json_t *got)
{
	if (c->key)
		return gw_errf(c->err, "group %s item %zu (key '%s'): field '%s': expected %s, got %s",
		               c->group, c->index, c->key, field, want, type_name(got));
	return gw_errf(c->err, "group %s item %zu: field '%s': expected %s, got %s", c->group,
	               c->index, field, want, type_name(got));
}

static int fill(struct pctx *c, const json_t *obj, const struct field *fields, size_t n, void *dst);

/* A list of nested objects (conditions, params, paths) into an arena array. */
static int fill_list(struct pctx *c, const json_t *arr, const struct field *f, void *dst)
{
	static const struct {
		const struct field *fields;
		size_t n, size;
	} elems[] = {
	    [K_CONDS] = {condition_fields, N(condition_fields), sizeof(struct gw_condition)},
	    [K_PARAMS] = {param_fields, N(param_fields), sizeof(struct gw_auth_param)},
	    [K_PATHS] = {path_fields, N(path_fields), sizeof(struct gw_auth_path)},
	};
	if (!json_is_array(arr))
		return field_error(c, f->json, "array", arr);
	size_t n = json_array_size(arr);
	unsigned char *items = n ? arena_calloc(&c->gd->arena, n * elems[f->kind].size) : NULL;
	if (n && !items)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(arr, i);
		if (!json_is_object(e))
			return field_error(c, f->json, "array of objects", e);
		if (fill(c, e, elems[f->kind].fields, elems[f->kind].n,
		         items + i * elems[f->kind].size) != 0)
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
			char *copy = arena_strndup(&c->gd->arena, s,
			                           json_is_string(v) ? json_string_length(v)
			                                             : strlen(s));
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

/* The item's key: a non-empty string field. */
static const char *item_key(const json_t *obj, const struct group_shape *sh, const char *raw)
{
	if (sh->key) {
		const json_t *k = json_object_get(obj, sh->key);
		return json_is_string(k) && json_string_length(k) ? json_string_value(k) : NULL;
	}
	for (size_t i = 0; i < N(key_candidates); i++) {
		const json_t *k = json_object_get(obj, key_candidates[i]);
		if (json_is_string(k) && json_string_length(k))
			return json_string_value(k);
	}
	return raw;
}

struct span_list {
	const char **start;
	size_t *len;
	size_t cap;
};

static int collect_span(void *ctx, size_t i, const char *start, size_t len)
{
	struct span_list *s = ctx;
	if (i >= s->cap)
		return -1;
	s->start[i] = start;
	s->len[i] = len;
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

	const char *key = item_key(obj, sh, it->json);
	if (!key)
		return gw_errf(c->err, "group %s item %zu: missing key field '%s'", c->group,
		               c->index, sh->key);
	it->key = key == it->json ? it->json : arena_strdup(&c->gd->arena, key);
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

/* One ConfigData object: value `cd`, its text [text, end). */
static int parse_config_data(enum gw_group g, const json_t *cd, const char *text, const char *end,
                             const char *source, struct group_data **out, struct gw_err *err)
{
	const char *gname = gw_group_name(g);
	if (!json_is_object(cd))
		return gw_errf(err, "group %s: expected an object, got %s", gname, type_name(cd));
	const json_t *md5 = json_object_get(cd, "md5");
	const json_t *lmt = json_object_get(cd, "lastModifyTime");
	const json_t *data = json_object_get(cd, "data");
	if (!json_is_string(md5) || json_string_length(md5) == 0 || json_string_length(md5) > 64)
		return gw_errf(err, "group %s: 'md5' must be a string of 1 to 64 characters", gname);
	if (!json_is_integer(lmt))
		return gw_errf(err, "group %s: 'lastModifyTime' must be an integer, got %s",
		               gname, lmt ? type_name(lmt) : "nothing");
	if (!json_is_array(data))
		return gw_errf(err, "group %s: 'data' must be an array, got %s", gname,
		               data ? type_name(data) : "nothing");

	size_t n = json_array_size(data);
	struct group_data *gd = group_data_new(g);
	if (!gd)
		return gw_errf(err, "group %s: out of memory", gname);
	snprintf(gd->md5, sizeof gd->md5, "%s", json_string_value(md5));
	gd->last_modify_time = json_integer_value(lmt);
	snprintf(gd->source, sizeof gd->source, "%s", source ? source : "");
	gd->received_us = gw_mono_us();

	struct span_list spans = {NULL, NULL, n};
	const char *data_text = jspan_member(text, end, "data");
	gd->items = arena_calloc(&gd->arena, (n ? n : 1) * sizeof *gd->items);
	spans.start = malloc((n ? n : 1) * sizeof *spans.start);
	spans.len = malloc((n ? n : 1) * sizeof *spans.len);
	int rc = -1;
	if (!gd->items || !spans.start || !spans.len) {
		gw_errf(err, "group %s: out of memory", gname);
		goto out;
	}
	if (!data_text || jspan_elements(data_text, end, collect_span, &spans) != (long)n) {
		gw_errf(err, "group %s: could not locate the items in the reply text", gname);
		goto out;
	}
	struct pctx c = {gd, err, gname, 0, NULL};
	for (size_t i = 0; i < n; i++) {
		c.index = i;
		c.key = NULL;
		if (convert_item(&c, g, json_array_get(data, i), spans.start[i], spans.len[i],
		                 &gd->items[i]) != 0)
			goto out;
		gd->n_items = i + 1;
	}
	long dup = group_data_index(gd);
	if (dup == -2) {
		gw_errf(err, "group %s: out of memory", gname);
		goto out;
	}
	if (dup >= 0) {
		gw_errf(err, "group %s: duplicate key '%s' (item %ld repeats an earlier item)",
		        gname, gd->items[dup].key, dup);
		goto out;
	}
	*out = gd;
	gd = NULL;
	rc = 0;
out:
	free(spans.start);
	free(spans.len);
	group_data_unref(gd);
	return rc;
}

static json_t *load(const char *body, size_t len, struct gw_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		gw_errf(err, "invalid JSON at line %d column %d: %s", je.line, je.column, je.text);
	return root;
}

static int check_envelope(json_t *root, json_t **data, struct gw_err *err)
{
	const json_t *code = json_object_get(root, "code");
	if (!json_is_integer(code))
		return gw_errf(err, "reply has no integer 'code'");
	if (json_integer_value(code) != 200) {
		const json_t *msg = json_object_get(root, "message");
		return gw_errf(err, "admin code %" JSON_INTEGER_FORMAT ": %s",
		               json_integer_value(code),
		               json_is_string(msg) ? json_string_value(msg) : "(no message)");
	}
	*data = json_object_get(root, "data");
	if (!*data)
		return gw_errf(err, "reply has no 'data'");
	return 0;
}

int model_parse_envelope(const char *body, size_t len, json_t **root, json_t **data,
                         struct gw_err *err)
{
	*root = load(body, len, err);
	if (!*root)
		return -1;
	if (!json_is_object(*root) || check_envelope(*root, data, err) != 0) {
		if (!json_is_object(*root))
			gw_errf(err, "reply is not a JSON object");
		json_decref(*root);
		*root = NULL;
		return -1;
	}
	return 0;
}

int model_parse_fetch(const char *body, size_t len, const enum gw_group *want, size_t n_want,
                      const char *source, struct group_data *out[GW_GROUP_COUNT],
                      struct gw_err *err)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		out[g] = NULL;
	json_t *root, *data;
	if (model_parse_envelope(body, len, &root, &data, err) != 0)
		return -1;
	const char *end = body + len;
	const char *data_text = jspan_member(jspan_ws(body, end), end, "data");
	int rc = 0;
	if (!json_is_object(data)) {
		rc = gw_errf(err, "'data' must be an object keyed by group, got %s", type_name(data));
		goto out;
	}
	for (size_t i = 0; i < n_want && rc == 0; i++) {
		const char *gname = gw_group_name(want[i]);
		const json_t *cd = json_object_get(data, gname);
		const char *cd_text = data_text ? jspan_member(data_text, end, gname) : NULL;
		if (!cd) {
			rc = gw_errf(err, "group %s: missing from the reply", gname);
		} else if (!cd_text) {
			rc = gw_errf(err, "group %s: could not locate it in the reply text", gname);
		} else {
			const char *cd_end = jspan_skip(cd_text, end);
			rc = parse_config_data(want[i], cd, cd_text, cd_end ? cd_end : end, source,
			                       &out[want[i]], err);
		}
	}
out:
	json_decref(root);
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
	json_t *root = load(text, len, err);
	if (!root)
		return gw_err_prefix(err, "group %s", gw_group_name(group));
	int rc = 0;
	const json_t *g = json_object_get(root, "group");
	if (g && (!json_is_string(g) || strcmp(json_string_value(g), gw_group_name(group)) != 0))
		rc = gw_errf(err, "group %s: the document says it is group %s", gw_group_name(group),
		             json_is_string(g) ? json_string_value(g) : "(not a string)");
	else
		rc = parse_config_data(group, root, jspan_ws(text, text + len), text + len, source,
		                       out, err);
	json_decref(root);
	return rc;
}
