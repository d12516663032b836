/*
 * The intern table (see intern.h), on the agent's one hash table (core/htab.h): an entry
 * per string made, keyed on (arena, bytes), held in the table's own arena so the table
 * allocates nothing per string beyond it and frees everything at once.
 */
#include "model/intern.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/htab.h"

struct entry {
	struct htab_link link; /* first: the table's */
	const char *s;         /* the copy made in a */
	const struct arena *a;
	size_t len;
};

/* What an entry is looked up by: the arena the copy goes to and the bytes. */
struct key {
	const struct arena *a;
	const char *s;
};

struct intern {
	struct htab t;
	struct arena mem; /* the entries */
	size_t asked;
};

struct intern *intern_new(void)
{
	struct intern *in = calloc(1, sizeof *in);
	if (in)
		arena_init(&in->mem);
	return in;
}

void intern_free(struct intern *in)
{
	if (!in)
		return;
	htab_free(&in->t);
	arena_free(&in->mem);
	free(in);
}

static int same(const struct htab_link *l, const void *key, size_t len)
{
	const struct entry *e = (const struct entry *)(const void *)l;
	const struct key *k = key;
	return e->a == k->a && e->len == len && memcmp(e->s, k->s, len) == 0;
}

const char *intern_get(struct intern *in, struct arena *a, const char *s, size_t n)
{
	in->asked++;
	struct key k = {a, s};
	/* one string in two arenas is two entries: the arena is part of the key */
	uint64_t h = htab_hash(s, n) ^ ((uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull);
	struct htab_link **at;
	if (htab_reserve(&in->t) != 0) /* no room: a copy of its own, still good */
		return arena_strndup(a, s, n);
	at = htab_find(&in->t, h, same, &k, n);
	if (*at)
		return ((const struct entry *)(const void *)*at)->s;
	char *copy = arena_strndup(a, s, n);
	struct entry *e = copy ? arena_alloc(&in->mem, sizeof *e) : NULL;
	if (!e)
		return copy;
	*e = (struct entry){.s = copy, .a = a, .len = n};
	htab_insert(&in->t, at, &e->link, h);
	return copy;
}

void intern_counts(const struct intern *in, size_t *asked, size_t *made)
{
	*asked = in->asked;
	*made = in->t.n;
}
