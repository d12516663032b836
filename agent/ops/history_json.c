/*
 * GET /history's document (see history_json.h): a copy of the entries asked for taken from
 * the history under its lock (store/history.h), cut to the newest `limit`, and written in
 * the history's document form (store/history_file.h, the form its file has too).
 */
#include "ops/history_json.h"

#include <stdlib.h>

#include "store/history_file.h"

/* The accepted time of the limit-th newest of the n copied entries: those older are left
 * out (ties by position, in history_doc). A partial selection: limit is small. */
static int history_cut(const struct history *h, const void *copy, size_t n, size_t limit,
                       int64_t *cut)
{
	size_t eb = history_entry_bytes(h);
	int64_t *times = malloc(n * sizeof *times);
	if (!times)
		return -1;
	for (size_t i = 0; i < n; i++)
		times[i] =
		    ((const struct history_entry *)(const void *)((const char *)copy + i * eb))
		        ->accepted_ms;
	for (size_t i = 0; i < limit; i++) {
		size_t best = i;
		for (size_t j = i + 1; j < n; j++)
			if (times[j] > times[best])
				best = j;
		int64_t t = times[i];
		times[i] = times[best];
		times[best] = t;
	}
	*cut = times[limit - 1];
	free(times);
	return 0;
}

json_t *history_json(struct history *h, const enum gw_group *order, size_t n_order, unsigned groups,
                     int64_t since_ms, size_t limit)
{
	size_t n = 0;
	size_t *per = calloc(n_order ? n_order : 1, sizeof *per);
	void *copy = per ? history_copy(h, order, n_order, groups, since_ms, per, &n) : NULL;
	int64_t cut = INT64_MIN;
	json_t *doc = NULL;
	if (copy && (!limit || n <= limit || history_cut(h, copy, n, limit, &cut) == 0))
		doc = history_doc(h, copy, per, order, n_order, groups, cut, limit);
	free(copy);
	free(per);
	return doc;
}
