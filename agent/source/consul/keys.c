/*
 * The keys held by the Consul source (see keys.h).
 */
#include "source/consul/keys.h"

#include <stdlib.h>
#include <string.h>

static int key_eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct consul_key *k = (const struct consul_key *)e;
	return k->len == len && memcmp(k->path, key, len) == 0;
}

void consul_keys_begin(struct consul_keys *ks)
{
	ks->gen++;
	ks->n_next = 0;
	ks->cursor = 0;
}

struct consul_key *consul_keys_find(struct consul_keys *ks, const char *path, size_t len)
{
	if (ks->cursor < ks->n_order) {
		struct consul_key *k = ks->order[ks->cursor];
		if (k->len == len && memcmp(k->path, path, len) == 0) {
			ks->cursor++;
			return k;
		}
	}
	struct htab_link **at = htab_find(&ks->tab, htab_hash(path, len), key_eq, path, len);
	struct consul_key *k = at && *at ? (struct consul_key *)*at : NULL;
	if (k && k->pos < ks->n_order && ks->order[k->pos] == k)
		ks->cursor = k->pos + 1;
	return k;
}

int consul_keys_seen(struct consul_keys *ks, struct consul_key *k)
{
	if (k->gen == ks->gen)
		return 0; /* listed twice: once counts */
	if (ks->n_next == ks->cap_next) {
		size_t cap = ks->cap_next ? ks->cap_next * 2 : 1024;
		struct consul_key **g = realloc(ks->next, cap * sizeof *g);
		if (!g)
			return -1;
		ks->next = g;
		ks->cap_next = cap;
	}
	k->gen = ks->gen;
	ks->next[ks->n_next++] = k;
	return 0;
}

struct consul_key *consul_keys_add(struct consul_keys *ks, const char *path, size_t len,
                                   uint64_t modify_index)
{
	uint64_t h = htab_hash(path, len);
	struct consul_key *k = malloc(sizeof *k + len + 1);
	if (!k || htab_reserve(&ks->tab) != 0) {
		free(k);
		return NULL;
	}
	memcpy(k->path, path, len);
	k->path[len] = '\0';
	k->len = len;
	k->modify_index = modify_index;
	k->gen = 0;
	k->pos = SIZE_MAX;
	struct htab_link **at = htab_find(&ks->tab, h, key_eq, path, len);
	htab_insert(&ks->tab, at, &k->link, h);
	if (consul_keys_seen(ks, k) != 0)
		return NULL; /* in the table, not seen: the next end() forgets it */
	return k;
}

struct sweep {
	uint64_t gen;
	void (*gone)(void *arg, const struct consul_key *k);
	void *arg;
};

static int drop_unseen(struct htab_link *e, void *arg)
{
	struct sweep *sw = arg;
	struct consul_key *k = (struct consul_key *)e;
	if (k->gen == sw->gen)
		return 0;
	if (sw->gone)
		sw->gone(sw->arg, k);
	free(k);
	return 1;
}

void consul_keys_end(struct consul_keys *ks, void (*gone)(void *arg, const struct consul_key *k),
                     void *arg)
{
	/* every key held before was listed: nothing to forget, no walk of the table */
	if (ks->tab.n != ks->n_next) {
		struct sweep sw = {ks->gen, gone, arg};
		htab_remove_if(&ks->tab, drop_unseen, &sw);
	}
	for (size_t i = 0; i < ks->n_next; i++)
		ks->next[i]->pos = i;
	/* the arrays trade places: the old order's is the next answer's to fill */
	struct consul_key **o = ks->order;
	size_t cap = ks->cap_order;
	ks->order = ks->next;
	ks->cap_order = ks->cap_next;
	ks->n_order = ks->n_next;
	ks->next = o;
	ks->cap_next = cap;
	ks->n_next = 0;
}

void consul_keys_abort(struct consul_keys *ks)
{
	ks->n_next = 0;
}

static int drop_all(struct htab_link *e, void *arg)
{
	(void)arg;
	free(e);
	return 1;
}

void consul_keys_clear(struct consul_keys *ks)
{
	htab_remove_if(&ks->tab, drop_all, NULL);
	ks->n_order = 0;
	ks->n_next = 0;
	ks->cursor = 0;
}

void consul_keys_free(struct consul_keys *ks)
{
	consul_keys_clear(ks);
	htab_free(&ks->tab);
	free(ks->order);
	free(ks->next);
	ks->order = ks->next = NULL;
	ks->cap_order = ks->cap_next = 0;
}
