/*
 * The agent's one binary search: where a key is, or would go, among n ranks in order. The
 * caller says how a rank compares with the key (cmp < 0: the rank's element is below it),
 * so one loop serves every ordered list (a version's items by key, model/groupdata.h; the
 * path stores' nodes by path, source/kv/). Inline, so the comparison of each caller is
 * inlined into its own copy of the loop: the key lookups of a delta are hot.
 */
#ifndef GW_CORE_SEARCH_H
#define GW_CORE_SEARCH_H

#include <stddef.h>

/* The first rank whose element is not below the key (n if none); *found: it equals it. */
static inline size_t gw_search_rank(size_t n,
                                    int (*cmp)(const void *list, size_t rank, const void *key),
                                    const void *list, const void *key, int *found)
{
	size_t lo = 0, hi = n;
	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp(list, mid, key);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
