/*
 * What the node map asks a transport to read and watch (node.h), and its figures: every
 * wanted key is an entry with references (roots hold one for ever), so the walks are one
 * pass over the table; node_unread() skips even that while nothing is unread.
 */
#include <string.h>

#include "source/node/map.h"

static size_t walk(const struct node_map *m, node_key_fn fn, void *ctx, int unread_only)
{
	size_t n = 0, slot = 0;
	struct htab_link *l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL) {
		const struct entry *e = (const struct entry *)l;
		if (e->refs == 0 && !e->root)
			continue;
		int read = e->seen == m->epoch && e->seen != 0;
		if (unread_only && read)
			continue;
		fn(ctx, e->key, e->klen, e->value ? e->tag : "", e->value != NULL, read);
		n++;
	}
	return n;
}

size_t node_wanted(const struct node_map *m, node_key_fn fn, void *ctx)
{
	return walk(m, fn, ctx, 0);
}

size_t node_unread(const struct node_map *m, node_key_fn fn, void *ctx)
{
	return m->n_unread ? walk(m, fn, ctx, 1) : 0;
}

size_t node_wanted_slots(struct node_map *m, node_slot_fn fn, void *ctx)
{
	size_t n = 0, slot = 0;
	struct htab_link *l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL) {
		struct entry *e = (struct entry *)l;
		if (e->refs == 0)
			continue;
		fn(ctx, e->key, e->klen, e->tag, e->value != NULL, &e->slot);
		n++;
	}
	return n;
}

uint32_t *node_slot(struct node_map *m, const char *key, size_t klen)
{
	struct entry *e = nmap_find(m, key, klen);
	return e ? &e->slot : NULL;
}

int node_is_wanted(const struct node_map *m, const char *key, size_t klen)
{
	const struct entry *e = nmap_find(m, key, klen);
	return e && (e->refs > 0 || e->root);
}

uint64_t node_wanted_gen(const struct node_map *m)
{
	return m->gen;
}

int64_t node_deadline(const struct node_map *m)
{
	return kv_mirror_deadline(m->mirror);
}

int node_flush(struct node_map *m, int64_t now_ms, int force)
{
	return kv_mirror_flush(m->mirror, now_ms, force);
}

void node_stats(struct node_map *m, struct node_stats *out)
{
	memset(out, 0, sizeof *out);
	kv_mirror_stats(m->mirror, &out->mirror);
	out->keys = atomic_load(&m->n_keys);
	out->wanted = atomic_load(&m->n_wanted);
	out->aside = atomic_load(&m->n_aside);
	out->bad_list = atomic_load(&m->n_bad);
}
