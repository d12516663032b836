/*
 * The intern table (see intern.h): open addressing over (arena, bytes), FNV-1a hashed,
 * doubled at 70% full. Written by hand: the table is a few lines, and what it keys on (an
 * arena and a byte span, the copy made in that arena) is the caller's own.
 */
#include "model/intern.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct slot {
	const char *s; /* NULL: empty */
	const struct arena *a;
	uint32_t hash;
	uint32_t len;
};

struct intern {
	struct slot *v;
	size_t cap, n; /* cap a power of two */
	size_t asked;
};

struct intern *intern_new(void)
{
	struct intern *in = calloc(1, sizeof *in);
	if (!in)
		return NULL;
	in->cap = 1024;
	if (!(in->v = calloc(in->cap, sizeof *in->v))) {
		free(in);
		return NULL;
	}
	return in;
}

void intern_free(struct intern *in)
{
	if (!in)
		return;
	free(in->v);
	free(in);
}

static uint32_t hash_of(const struct arena *a, const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull ^ (uintptr_t)a;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

static int grow(struct intern *in)
{
	size_t cap = in->cap * 2;
	struct slot *v = calloc(cap, sizeof *v);
	if (!v)
		return -1;
	for (size_t i = 0; i < in->cap; i++) {
		if (!in->v[i].s)
			continue;
		size_t k = in->v[i].hash & (cap - 1);
		while (v[k].s)
			k = (k + 1) & (cap - 1);
		v[k] = in->v[i];
	}
	free(in->v);
	in->v = v;
	in->cap = cap;
	return 0;
}

const char *intern_get(struct intern *in, struct arena *a, const char *s, size_t n)
{
	in->asked++;
	if (n > UINT32_MAX) /* never shared: too long to key */
		return arena_strndup(a, s, n);
	uint32_t h = hash_of(a, s, n);
	size_t k = h & (in->cap - 1);
	for (; in->v[k].s; k = (k + 1) & (in->cap - 1)) {
		const struct slot *e = &in->v[k];
		if (e->hash == h && e->a == a && e->len == n && memcmp(e->s, s, n) == 0)
			return e->s;
	}
	char *copy = arena_strndup(a, s, n);
	if (!copy)
		return NULL;
	in->v[k] = (struct slot){copy, a, h, (uint32_t)n};
	if (++in->n * 10 > in->cap * 7 && grow(in) != 0) {
		in->n--; /* not kept (the last one in: no chain runs through it); still good */
		in->v[k].s = NULL;
	}
	return copy;
}

void intern_counts(const struct intern *in, size_t *asked, size_t *made)
{
	*asked = in->asked;
	*made = in->n;
}
