/*
 * The key table (keys.h). Each row is what ShenYu's gateway-side caches identify an item
 * by (PROTOCOL-PUSH.md §1.3 "How DELETE identifies items"; docs/keys.md):
 *  - PLUGIN by `name`: BaseDataCache keeps one PluginData per name, and the ZooKeeper and
 *    etcd layouts name the node after it;
 *  - SELECTOR, RULE, META_DATA and PROXY_SELECTOR by `id`: ids are unique across plugins,
 *    the removal identity in every mode and the node name in ZooKeeper and etcd;
 *  - APP_AUTH by `appKey` (it has no id);
 *  - DISCOVER_UPSTREAM by `selectorId`: one item carries the whole upstream list of one
 *    selector;
 *  - AI_PROXY_API_KEY by `selectorId::proxyApiKey` (AiProxyApiKeyCache): one selector
 *    holds several API keys, and one proxy key may serve several selectors.
 * A plugin also has an alias, its `id` (key_alias): the event sources let an item with a
 * held plugin's id under another name replace it, so a rename leaves no ghost.
 * A missing key field refuses the item (and so the version): an item without its
 * identity cannot be updated or deleted later.
 */
#include "model/keys.h"

#include <stdio.h>
#include <string.h>

static const struct key_row {
	const char *fields[2]; /* the second NULL for a single-field key */
	const char *describe;
} rows[GW_GROUP_COUNT] = {
    [GW_GROUP_PLUGIN] = {{"name", NULL}, "name"},
    [GW_GROUP_SELECTOR] = {{"id", NULL}, "id"},
    [GW_GROUP_RULE] = {{"id", NULL}, "id"},
    [GW_GROUP_APP_AUTH] = {{"appKey", NULL}, "appKey"},
    [GW_GROUP_META_DATA] = {{"id", NULL}, "id"},
    [GW_GROUP_PROXY_SELECTOR] = {{"id", NULL}, "id"},
    [GW_GROUP_DISCOVER_UPSTREAM] = {{"selectorId", NULL}, "selectorId"},
    [GW_GROUP_AI_PROXY_API_KEY] = {{"selectorId", "proxyApiKey"}, "selectorId::proxyApiKey"},
};

const char *key_describe(enum gw_group g)
{
	return (unsigned)g < GW_GROUP_COUNT ? rows[g].describe : "?";
}

const char *key_display(enum gw_group g, const char *key, char *buf, size_t cap)
{
	const char *sep = g == GW_GROUP_AI_PROXY_API_KEY ? strstr(key, KEY_SEPARATOR) : NULL;
	if (!sep)
		snprintf(buf, cap, "%s", key);
	else
		snprintf(buf, cap, "%.*s%.4s...", (int)(sep - key + strlen(KEY_SEPARATOR)), key,
		         sep + strlen(KEY_SEPARATOR));
	return buf;
}

const char *key_single_field(enum gw_group g)
{
	return (unsigned)g < GW_GROUP_COUNT && !rows[g].fields[1] ? rows[g].fields[0] : NULL;
}

const char *key_field(enum gw_group g, size_t i)
{
	return (unsigned)g < GW_GROUP_COUNT && i < 2 ? rows[g].fields[i] : NULL;
}

const char *key_alias(enum gw_group g, const struct gd_item *it, struct arena *a)
{
	if (g != GW_GROUP_PLUGIN)
		return NULL;
	size_t raw;
	const char *v = gd_item_member(it, "id", &raw);
	char *id = v && raw ? arena_alloc_align(a, raw + 1, 1) : NULL;
	return id ? gd_item_decode(v, raw, id) : NULL;
}

static const char *field(const json_t *obj, const char *name)
{
	const json_t *v = json_object_get(obj, name);
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

const char *key_of(enum gw_group g, const json_t *obj, struct arena *a, const char **missing)
{
	*missing = NULL;
	if ((unsigned)g >= GW_GROUP_COUNT)
		return NULL;
	const struct key_row *r = &rows[g];
	const char *first = field(obj, r->fields[0]);
	if (!first) {
		*missing = r->fields[0];
		return NULL;
	}
	if (!r->fields[1])
		return first;
	const char *second = field(obj, r->fields[1]);
	if (!second) {
		*missing = r->fields[1];
		return NULL;
	}
	size_t n1 = strlen(first), ns = strlen(KEY_SEPARATOR), n2 = strlen(second);
	char *k = arena_alloc(a, n1 + ns + n2 + 1);
	if (!k)
		return NULL;
	memcpy(k, first, n1);
	memcpy(k + n1, KEY_SEPARATOR, ns);
	memcpy(k + n1 + ns, second, n2 + 1);
	return k;
}
