/*
 * The node map's table of keys (map.h): one entry per key read or wanted, in the agent's
 * intrusive hash table (core/htab.h), so an entry never moves and the transport may keep
 * pointers into it (node_wanted_slots) until the wanted set changes.
 */
#include <stdlib.h>
#include <string.h>

#include "source/node/map.h"

static int entry_eq(const struct htab_link *l, const void *key, size_t len)
{
	const struct entry *e = (const struct entry *)l;
	return e->klen == len && memcmp(e->key, key, len) == 0;
}

struct entry *nmap_find(const struct node_map *m, const char *key, size_t len)
{
	struct htab_link **at = htab_find(&m->keys, htab_hash(key, len), entry_eq, key, len);
	return at ? (struct entry *)*at : NULL;
}

void nmap_free_ids(struct entry *e)
{
	for (size_t i = 0; i < e->n_ids; i++)
		free(e->ids[i]);
	free(e->ids);
	e->ids = NULL;
	e->n_ids = 0;
}

void nmap_entry_free(struct entry *e)
{
	free(e->key);
	free(e->value);
	free(e->path);
	free(e->p);
	free(e->s);
	nmap_free_ids(e);
	free(e);
}

/* The counters /status shows: what e adds to them (sign -1 before a change, +1 after). */
void nmap_acct(struct node_map *m, const struct entry *e, int sign)
{
	if (e->refs > 0 && e->seen != m->epoch)
		m->n_unread += (size_t)sign;
	if (e->refs > 0)
		atomic_fetch_add(&m->n_wanted, (size_t)sign);
	else if (e->value && e->kind != K_LIST)
		atomic_fetch_add(&m->n_aside, (size_t)sign);
}

struct entry *nmap_add(struct node_map *m, const char *key, size_t len)
{
	uint64_t h = htab_hash(key, len);
	struct htab_link **at = htab_find(&m->keys, h, entry_eq, key, len);
	if (at && *at)
		return (struct entry *)*at;
	struct entry *e = calloc(1, sizeof *e);
	if (!e || !(e->key = malloc(len + 1)) || htab_reserve(&m->keys) != 0) {
		if (e)
			free(e->key);
		free(e);
		m->oom = 1;
		return NULL;
	}
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->klen = len;
	e->group = -1;
	at = htab_find(&m->keys, h, entry_eq, key, len);
	htab_insert(&m->keys, at, &e->link, h);
	atomic_fetch_add(&m->n_keys, 1);
	return e;
}

void nmap_drop(struct node_map *m, struct entry *e)
{
	struct htab_link **at = htab_find(&m->keys, e->link.hash, entry_eq, e->key, e->klen);
	nmap_acct(m, e, -1);
	htab_remove(&m->keys, at);
	atomic_fetch_sub(&m->n_keys, 1);
	nmap_entry_free(e);
}
