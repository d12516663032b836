/*
 * Interned strings of the typed view: the strings items repeat (namespace ids, plugin
 * names, the selector ids rules name, handle templates, condition fields) are held once
 * per item pool instead of once per item. A table lives for one batch of typed views
 * made into pools (model/typed.h); the strings themselves live in the pool they were
 * made for, so they are freed with the last version that uses that pool, as the items
 * are, and nothing is counted per string or per version. A string is shared only within
 * its pool: an item never points into a pool its version may not hold.
 */
#ifndef GW_MODEL_INTERN_H
#define GW_MODEL_INTERN_H

#include <stddef.h>

#include "core/arena.h"

struct intern;

/* NULL on out of memory. */
struct intern *intern_new(void);
void intern_free(struct intern *in);

/* The NUL-terminated copy of the n bytes at s in arena a: the one this table made in a
 * before (same bytes), else a new one. NULL on out of memory. */
const char *intern_get(struct intern *in, struct arena *a, const char *s, size_t n);

/* How many strings were asked for and how many were made (for the figures). */
void intern_counts(const struct intern *in, size_t *asked, size_t *made);

#endif
