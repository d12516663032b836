/*
 * /history as one newest-first list and an entry's keys (see history_list.h). The list
 * points into the document, so it costs one array of the entries, whatever they hold.
 */
#include "ops/history_list.h"

#include <stdlib.h>

static int64_t integer(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

static int newest_first(const void *a, const void *b)
{
	int64_t x = ((const struct history_change *)a)->at;
	int64_t y = ((const struct history_change *)b)->at;
	return x < y ? 1 : x > y ? -1 : 0;
}

int history_list(const json_t *hist, struct history_change **out, size_t *n)
{
	size_t count = 0, cap = 0;
	const char *name;
	const json_t *list;
	json_object_foreach((json_t *)json_object_get(hist, "groups"), name, list) cap +=
	    json_array_size(list);
	struct history_change *all = calloc(cap ? cap : 1, sizeof *all);
	if (!all)
		return -1;
	json_object_foreach((json_t *)json_object_get(hist, "groups"), name, list)
	{
		const json_t *e;
		size_t i;
		json_array_foreach(list, i, e) all[count++] =
		    (struct history_change){name, e, integer(e, "acceptedAt")};
	}
	qsort(all, count, sizeof *all, newest_first);
	*out = all;
	*n = count;
	return 0;
}

int history_kinds(const json_t *e, struct history_kind kinds[HISTORY_KINDS])
{
	static const char *const field[HISTORY_KINDS] = {"added", "updated", "removed"};
	static const char *const sign[HISTORY_KINDS] = {"+", "~", "-"};
	for (size_t k = 0; k < HISTORY_KINDS; k++) {
		const json_t *c = json_object_get(e, field[k]);
		long long more;
		kinds[k].sign = sign[k];
		kinds[k].count = (long long)integer(c, "count");
		kinds[k].first = json_object_get(c, "first");
		kinds[k].names = json_object_get(c, "names");
		more = kinds[k].count - (long long)json_array_size(kinds[k].first);
		kinds[k].more = more > 0 ? more : 0;
	}
	return json_is_object(json_object_get(e, "added"));
}
