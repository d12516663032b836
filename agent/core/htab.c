/*
 * The hash table (see htab.h). Written here rather than taken from a library because it is
 * intrusive (the kv mirror's nodes and the ZooKeeper tree's nodes are the entries, found,
 * kept as tombstones and listed in place) and small; the three hand-written tables it
 * replaced were this same code three times.
 */
#include "core/htab.h"

#include <stdlib.h>

uint64_t htab_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

struct htab_link **htab_find(const struct htab *t, uint64_t h, htab_eq_fn eq, const void *key,
                             size_t len)
{
	if (!t->n_slots)
		return NULL;
	struct htab_link **at = &t->slots[h & (t->n_slots - 1)];
	for (; *at; at = &(*at)->next)
		if ((*at)->hash == h && eq(*at, key, len))
			return at;
	return at;
}

int htab_reserve(struct htab *t)
{
	if (t->n_slots && t->n < t->n_slots)
		return 0;
	size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
	struct htab_link **slots = calloc(n_slots, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->n_slots; i++) {
		struct htab_link *e = t->slots[i];
		while (e) {
			struct htab_link *next = e->next;
			e->next = slots[e->hash & (n_slots - 1)];
			slots[e->hash & (n_slots - 1)] = e;
			e = next;
		}
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

void htab_insert(struct htab *t, struct htab_link **at, struct htab_link *e, uint64_t h)
{
	e->hash = h;
	e->next = *at;
	*at = e;
	t->n++;
}

void htab_remove(struct htab *t, struct htab_link **at)
{
	*at = (*at)->next;
	t->n--;
}

struct htab_link *htab_next(const struct htab *t, size_t *slot, const struct htab_link *prev)
{
	if (prev && prev->next)
		return prev->next;
	for (size_t i = prev ? *slot + 1 : 0; i < t->n_slots; i++) {
		if (t->slots[i]) {
			*slot = i;
			return t->slots[i];
		}
	}
	return NULL;
}

size_t htab_remove_if(struct htab *t, int (*drop)(struct htab_link *e, void *arg), void *arg)
{
	size_t removed = 0;
	for (size_t i = 0; i < t->n_slots; i++) {
		struct htab_link **at = &t->slots[i];
		while (*at) {
			struct htab_link *e = *at;
			*at = e->next; /* unlinked before drop may free it */
			if (drop(e, arg)) {
				t->n--;
				removed++;
				continue;
			}
			*at = e;
			at = &e->next;
		}
	}
	return removed;
}

void htab_free(struct htab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->n_slots = 0;
	t->n = 0;
}
