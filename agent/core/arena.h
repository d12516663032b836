/*
 * A bump allocator: many small allocations, freed all at once. Used for the items of one
 * group version, whose lifetimes are all the same.
 */
#ifndef GW_ARENA_H
#define GW_ARENA_H

#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head;
	size_t total; /* bytes reserved from malloc, for memory figures */
};

void arena_init(struct arena *a);
void arena_free(struct arena *a);
/* Aligned for any type. NULL on out of memory. */
void *arena_alloc(struct arena *a, size_t n);
void *arena_calloc(struct arena *a, size_t n);
/* Aligned to `align` only (a power of two): packs small structs whose strictest member is
 * a pointer without max_align_t's padding. NULL on out of memory. */
void *arena_alloc_align(struct arena *a, size_t n, size_t align);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_strdup(struct arena *a, const char *s);

#endif
