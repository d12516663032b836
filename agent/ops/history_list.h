/*
 * /history read the way an operator reads it, for both of its renderers (the status page,
 * ops/status_page.h, and `gwsyncd --status`, ops/status_text.h): every group's entries in
 * one list, newest first, and what an entry says of the keys it changed. Only the reading
 * is shared; each renderer keeps its own wording and its own escaping (HTML, terminal).
 */
#ifndef GW_HISTORY_LIST_H
#define GW_HISTORY_LIST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One entry of /history, with the group it belongs to. */
struct history_change {
	const char *group; /* the group's name, valid as long as the document */
	const json_t *e;   /* the entry: md5, acceptedAt, source, added/updated/removed, ... */
	int64_t at;        /* its acceptedAt, in ms since the epoch */
};

/* Every entry of the document's "groups", newest first (entries accepted in the same
 * millisecond in no promised order). 0 and a malloc'd *out of *n entries (the caller frees
 * it, also when *n is 0), or -1 on out of memory. */
int history_list(const json_t *hist, struct history_change **out, size_t *n);

/* The kinds of change an entry counts, in the order they are worded. */
enum { HISTORY_ADDED, HISTORY_UPDATED, HISTORY_REMOVED, HISTORY_KINDS };

struct history_kind {
	const char *sign;    /* "+", "~", "-" */
	long long count;     /* keys changed so */
	const json_t *first; /* the first of those keys the entry names (an array, or NULL) */
	const json_t *names; /* their items' display names, null for none (an array, or NULL) */
	long long more;      /* count less the keys named, when positive; else 0 */
};

/* The entry's three kinds, added, updated, removed. 1 when the entry counted its changes,
 * 0 when it did not (every kind then reads 0 and names no key). */
int history_kinds(const json_t *e, struct history_kind kinds[HISTORY_KINDS]);

#endif
