/*
 * The item tables and refusals of fields.h. Each item struct of the ABI is described once
 * by a table of (JSON name, kind, offset); both fillers and the copier walk these tables,
 * so they cannot drift apart.
 */
#include "model/fields.h"

#include <jansson.h>
#include <string.h>

#include "model/keys.h"

#define F(type, json, kind, member)                                                                \
	{                                                                                          \
		json, sizeof(json) - 1, kind, offsetof(type, member), 0                            \
	}
#define L(type, json, kind, member, count)                                                         \
	{                                                                                          \
		json, sizeof(json) - 1, kind, offsetof(type, member), offsetof(type, count)        \
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

static const struct group_shape shapes[GW_GROUP_COUNT] = {
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

static const struct list_shape lists[] = {
    [K_CONDS] = {condition_fields, N(condition_fields), sizeof(struct gw_condition)},
    [K_PARAMS] = {param_fields, N(param_fields), sizeof(struct gw_auth_param)},
    [K_PATHS] = {path_fields, N(path_fields), sizeof(struct gw_auth_path)},
};

const struct group_shape *fields_group(enum gw_group g)
{
	return &shapes[g];
}

const struct list_shape *fields_list(enum field_kind k)
{
	return &lists[k];
}

int fields_name_index(enum gw_group g)
{
	const struct group_shape *sh = &shapes[g];
	for (size_t i = 0; i < sh->n_fields; i++)
		if (strcmp(sh->fields[i].json, sh->name) == 0)
			return (int)i;
	return -1;
}

int item_set_json(struct item_ctx *c, enum gw_group g, const char *raw, size_t len,
                  struct gw_item *it)
{
	it->group = g;
	it->json = c->adopt ? raw : arena_strndup(c->mem, raw, len);
	if (!it->json)
		return item_err_oom(c);
	it->json_len = len;
	if (c->gd)
		c->gd->json_bytes += len;
	return 0;
}

int item_err_field(struct item_ctx *c, const char *field, const char *want, const char *got)
{
	if (c->key)
		return gw_errf(c->err,
		               "group %s item %zu (key '%s'): field '%s': expected %s, got %s",
		               c->group, c->index, c->key, field, want, got);
	return gw_errf(c->err, "group %s item %zu: field '%s': expected %s, got %s", c->group,
	               c->index, field, want, got);
}

int item_err_not_object(struct item_ctx *c, const char *got)
{
	return gw_errf(c->err, "group %s item %zu: expected an object, got %s", c->group, c->index,
	               got);
}

int item_err_missing_key(struct item_ctx *c, enum gw_group g, const char *missing)
{
	return gw_errf(c->err, "group %s item %zu: missing key field '%s' (its key is %s)",
	               c->group, c->index, missing, key_describe(g));
}

int item_err_oom(struct item_ctx *c)
{
	return gw_errf(c->err, "group %s: out of memory", c->group);
}

int item_err_not_json(struct item_ctx *c, const char *raw, size_t len)
{
	*c->syntax = 1;
	const char *nul = memchr(raw, '\0', len);
	if (nul)
		return gw_errf(c->err, "group %s item %zu: invalid JSON: a NUL byte at offset %zu",
		               c->group, c->index, (size_t)(nul - raw));
	json_error_t je;
	json_t *j = json_loadb(raw, len, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		return gw_errf(c->err, "group %s item %zu: invalid JSON at column %d: %s", c->group,
		               c->index, je.column, je.text);
	json_decref(j); /* only a decoder bug gets here: fuzz_itemdec exists to find it */
	return gw_errf(c->err, "group %s item %zu: invalid JSON: refused by the item decoder",
	               c->group, c->index);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* end NULL: v is inside a value a delimiter follows (an item's member), so the scan stops
 * at the delimiter; otherwise it never reads at or past end (a reply's top-level value may be
 * its last byte, with no NUL after it). */
int item_text_is_int_at(const char *v, const char *end)
{
	if ((!end || v < end) && *v == '-')
		v++;
	if ((end && v >= end) || !is_digit(*v))
		return 0;
	while ((!end || v < end) && is_digit(*v))
		v++;
	return (end && v >= end) || (*v != '.' && *v != 'e' && *v != 'E');
}

int item_text_is_int(const char *v)
{
	return item_text_is_int_at(v, NULL);
}

const char *item_text_type(const char *v)
{
	return item_text_type_at(v, NULL);
}

const char *item_text_type_at(const char *v, const char *end)
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
		return item_text_is_int_at(v, end) ? "integer" : "number";
	}
}

const char *item_json_type(const json_t *v)
{
	static const char *const names[] = {
	    [JSON_OBJECT] = "object",   [JSON_ARRAY] = "array", [JSON_STRING] = "string",
	    [JSON_INTEGER] = "integer", [JSON_REAL] = "number", [JSON_TRUE] = "boolean",
	    [JSON_FALSE] = "boolean",   [JSON_NULL] = "null",
	};
	return names[json_typeof(v)];
}
