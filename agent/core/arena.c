/*
 * Bump allocator (see arena.h). Blocks grow geometrically up to 1 MiB so a small group
 * costs one small malloc and a large one a few hundred large ones. Strings are packed
 * byte-aligned: most of a version's bytes are text.
 */
#include "core/arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

struct arena_block {
	struct arena_block *next;
	size_t cap, used;
	alignas(max_align_t) unsigned char data[];
};

void arena_init(struct arena *a)
{
	a->head = NULL;
	a->total = 0;
}

void arena_free(struct arena *a)
{
	for (struct arena_block *b = a->head, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	a->head = NULL;
	a->total = 0;
}

/* n bytes aligned to `align` (a power of two). */
static void *alloc_aligned(struct arena *a, size_t n, size_t align)
{
	struct arena_block *b = a->head;
	size_t off = b ? (b->used + align - 1) & ~(align - 1) : 0;
	if (!b || off > b->cap || b->cap - off < n) {
		size_t cap = b ? b->cap * 2 : 4096;
		if (cap > (1u << 20))
			cap = 1u << 20;
		if (cap < n)
			cap = n;
		b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
		a->total += sizeof *b + cap;
		off = 0;
	}
	b->used = off + n;
	return b->data + off;
}

void *arena_alloc(struct arena *a, size_t n)
{
	return alloc_aligned(a, n, alignof(max_align_t));
}

void *arena_alloc_align(struct arena *a, size_t n, size_t align)
{
	return alloc_aligned(a, n, align);
}

void *arena_calloc(struct arena *a, size_t n)
{
	void *p = arena_alloc(a, n);
	if (p)
		memset(p, 0, n);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = alloc_aligned(a, n + 1, 1); /* text needs no alignment: pack it */
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}
