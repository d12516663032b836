/*
 * Exploding a whole-group document (whole.h). The document is checked whole before the
 * first item is handed out, so a bad document changes nothing.
 */
#include "source/node/whole.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Is every member of the document one item or an array of items? */
static int check_doc(json_t *doc, struct gw_err *err)
{
	if (!json_is_object(doc))
		return gw_errf(err, "not a JSON object");
	const char *k;
	json_t *v;
	json_object_foreach(doc, k, v)
	{
		if (json_is_object(v))
			continue;
		if (!json_is_array(v))
			return gw_errf(
			    err, "member \"%.200s\" is neither an item nor a list of items", k);
		size_t i;
		json_t *e;
		json_array_foreach(v, i, e) if (!json_is_object(e)) return gw_errf(
		    err, "member \"%.200s\"[%zu] is not an item", k, i);
	}
	return 0;
}

static int emit(const char *dir, const char *member, const char *sub, const json_t *item,
                node_item_fn fn, void *ctx, struct gw_err *err)
{
	char *value = json_dumps(item, JSON_COMPACT);
	size_t cap = strlen(dir) + strlen(member) + (sub ? strlen(sub) : 0) + 3;
	char *path = malloc(cap);
	if (!value || !path) {
		free(value);
		free(path);
		return gw_errf(err, "out of memory");
	}
	int pl = sub ? snprintf(path, cap, "%s/%s/%s", dir, member, sub)
	             : snprintf(path, cap, "%s/%s", dir, member);
	int rc = fn(ctx, path, (size_t)pl, value, strlen(value));
	free(path);
	free(value);
	return rc;
}

int node_whole_explode(const char *dir, const char *doc, size_t len, node_item_fn fn, void *ctx,
                       struct gw_err *err)
{
	json_error_t jerr;
	json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return gw_errf(err, "not JSON (%.200s at %d:%d)", jerr.text, jerr.line,
		               jerr.column);
	int rc = check_doc(root, err);
	const char *k;
	json_t *v;
	if (rc == 0) {
		json_object_foreach(root, k, v)
		{
			if (json_is_object(v)) {
				rc = emit(dir, k, NULL, v, fn, ctx, err);
			} else {
				size_t i;
				json_t *e;
				json_array_foreach(v, i, e)
				{
					/* an item's own id names it, so a reordered array moves
					 * nothing; the index stands in when it has none */
					char num[32];
					const char *id =
					    json_string_value(json_object_get(e, "id"));
					if (!id || !*id || strchr(id, '/')) {
						snprintf(num, sizeof num, "#%zu", i);
						id = num;
					}
					if ((rc = emit(dir, k, id, e, fn, ctx, err)) != 0)
						break;
				}
			}
			if (rc != 0)
				break;
		}
	}
	json_decref(root);
	return rc;
}
