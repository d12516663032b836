/*
 * Edit distance for typo suggestions (see suggest.h). Words are configuration keys and
 * group names, so they are short; anything longer than SUGGEST_MAX is simply not compared,
 * which keeps the work bounded and the table on the stack.
 */
#include "config/suggest.h"

#include <ctype.h>
#include <string.h>

#define SUGGEST_MAX 64

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;
	return m < c ? m : c;
}

size_t suggest_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
		return (size_t)-1;
	size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]),
			    cb = tolower((unsigned char)b[j - 1]);
			size_t cost = ca != cb;
			d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < d[i][j])
				d[i][j] = d[i - 2][j - 2] + 1;
		}
	}
	return d[la][lb];
}

const char *suggest_closest(const char *word, const char *const *candidates, size_t n)
{
	const char *best = NULL;
	size_t best_d = (size_t)-1;
	for (size_t i = 0; i < n; i++) {
		size_t d = suggest_distance(word, candidates[i]);
		if (d < best_d) {
			best_d = d;
			best = candidates[i];
		}
	}
	if (!best)
		return NULL;
	size_t longer = strlen(word) > strlen(best) ? strlen(word) : strlen(best);
	/* short words: one edit only, or "foo" would suggest "log" */
	size_t plausible = longer <= 4 ? 1 : 2;
	return best_d <= plausible || best_d * 3 <= longer ? best : NULL;
}
