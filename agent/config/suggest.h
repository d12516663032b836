/*
 * "Did you mean ...?" for configuration typos: the closest of a few known words by edit
 * distance (Damerau-Levenshtein, optimal string alignment, case-insensitive), so
 * "read_timout", "sevrers" and "selector" find read_timeout, servers and SELECTOR.
 */
#ifndef GW_SUGGEST_H
#define GW_SUGGEST_H

#include <stddef.h>

/* Edit distance (insert, delete, substitute, swap two neighbours), ignoring ASCII case. */
size_t suggest_distance(const char *a, const char *b);

/* The candidate closest to `word` if it is close enough to be a plausible typo (distance
 * at most 2 -- 1 for words of up to 4 letters -- or at most a third of the longer word),
 * else NULL. Ties: the first one. */
const char *suggest_closest(const char *word, const char *const *candidates, size_t n);

#endif
