/*
 * The key-by-key compare of two releases (see diff.h).
 */
#include "source/apollo/diff.h"

#include <string.h>

long apollo_diff(json_t *old, json_t *next, apollo_diff_fn fn, void *ctx)
{
	long n = 0;
	const char *k;
	size_t klen;
	json_t *v;
	json_object_keylen_foreach(next, k, klen, v)
	{
		json_t *was = old ? json_object_getn(old, k, klen) : NULL;
		size_t vl = json_string_length(v);
		if (was && json_string_length(was) == vl &&
		    memcmp(json_string_value(was), json_string_value(v), vl) == 0)
			continue;
		n++;
		if (fn(ctx, k, klen, json_string_value(v), vl) != 0)
			return -1;
	}
	if (!old)
		return n;
	json_object_keylen_foreach(old, k, klen, v)
	{
		if (json_object_getn(next, k, klen))
			continue;
		n++;
		if (fn(ctx, k, klen, NULL, 0) != 0)
			return -1;
	}
	return n;
}

long apollo_apply_changes(json_t *held, const json_t *changes, apollo_diff_fn fn, void *ctx)
{
	long n = 0;
	size_t i;
	json_t *c;
	json_array_foreach(changes, i, c)
	{
		json_t *key = json_object_get(c, "key");
		const char *k = json_string_value(key);
		size_t klen = json_string_length(key);
		json_t *was = json_object_getn(held, k, klen);
		json_t *v = json_object_get(c, "newValue");
		const char *t = json_string_value(json_object_get(c, "configurationChangeType"));
		if (t && strcmp(t, "DELETED") == 0) {
			if (!was)
				continue;
			n++;
			if (fn(ctx, k, klen, NULL, 0) != 0 || json_object_deln(held, k, klen) != 0)
				return -1;
			continue;
		}
		size_t vl = json_string_length(v);
		if (was && json_string_length(was) == vl &&
		    memcmp(json_string_value(was), json_string_value(v), vl) == 0)
			continue;
		n++;
		if (fn(ctx, k, klen, json_string_value(v), vl) != 0 ||
		    json_object_setn(held, k, klen, v) != 0)
			return -1;
	}
	return n;
}
