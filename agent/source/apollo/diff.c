/*
 * The key-by-key compare of two releases (see diff.h).
 */
#include "source/apollo/diff.h"

#include <string.h>

long apollo_diff(const json_t *old, const json_t *next, apollo_diff_fn fn, void *ctx)
{
	long n = 0;
	const char *k;
	size_t klen;
	json_t *v;
	json_object_keylen_foreach((json_t *)next, k, klen, v)
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
	json_object_keylen_foreach((json_t *)old, k, klen, v)
	{
		if (json_object_getn(next, k, klen))
			continue;
		n++;
		if (fn(ctx, k, klen, NULL, 0) != 0)
			return -1;
	}
	return n;
}
