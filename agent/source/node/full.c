/*
 * Full reads of the node map (node.h): the keys read are applied as values without telling
 * the mirror, then every reference is counted again from the roots (one pass over the
 * table, which is simpler than undoing a half-read store and costs what a full read costs
 * anyway) and the mirror is handed what is live as one full read.
 */
#include <stdlib.h>
#include <string.h>

#include "source/node/map.h"

int node_full_begin(struct node_map *m)
{
	m->epoch++;
	m->in_full = 1;
	/* every wanted key is unread again */
	m->n_unread = 0;
	size_t slot = 0;
	struct htab_link *l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL)
		m->n_unread += ((struct entry *)l)->refs > 0;
	return 0;
}

int node_full_put(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
                  const char *tag)
{
	return nmap_set(m, key, klen, value ? value : "", value ? vlen : 0, tag) < 0 ? -1 : 0;
}

static int reset_refs(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	struct node_map *m = arg;
	nmap_acct(m, e, -1);
	e->refs = e->root;
	e->live = 0;
	nmap_acct(m, e, +1);
	return 0;
}

static int drop_unread(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	struct node_map *m = arg;
	if (e->seen == m->epoch || !e->value)
		return 0;
	nmap_acct(m, e, -1);
	free(e->value);
	e->value = NULL;
	e->vlen = 0;
	e->tag[0] = '\0';
	nmap_acct(m, e, +1);
	if (e->kind == K_LIST)
		nmap_free_ids(e);
	return 0;
}

static int drop_unwanted(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	struct node_map *m = arg;
	if (e->refs > 0 || e->root || (m->a.complete && e->value))
		return 0;
	nmap_acct(m, e, -1);
	atomic_fetch_sub(&m->n_keys, 1);
	nmap_entry_free(e);
	return 1;
}

/* Count every reference again from the roots and hand the mirror what is live. */
static int rebuild(struct node_map *m, enum kv_full_kind kind, int drop_missing)
{
	if (drop_missing)
		htab_remove_if(&m->keys, drop_unread, m);
	htab_remove_if(&m->keys, reset_refs, m);
	size_t slot = 0;
	struct htab_link *l = NULL;
	/* roots first: activating them may add entries, so collect them before */
	struct entry *roots[2 * GW_GROUP_COUNT];
	size_t n_roots = 0;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL)
		if (((struct entry *)l)->root && n_roots < 2 * GW_GROUP_COUNT)
			roots[n_roots++] = (struct entry *)l;
	for (size_t i = 0; i < n_roots; i++)
		nmap_activate(m, roots[i]);
	htab_remove_if(&m->keys, drop_unwanted, m);
	m->in_full = 0;
	m->gen++;
	if (m->oom || kv_mirror_full_begin(m->mirror) != 0)
		return -1;
	slot = 0;
	l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL) {
		struct entry *e = (struct entry *)l;
		if (e->kind == K_ITEM && e->live &&
		    kv_mirror_full_put(m->mirror, e->path, e->plen, e->value, e->vlen, e->rev) != 0)
			m->oom = 1;
		else if (e->kind == K_DOC)
			nmap_doc_changed(m, e, 2);
	}
	if (m->oom) {
		kv_mirror_full_abort(m->mirror);
		return -1;
	}
	m->delivered = 1;
	return kv_mirror_full_end(m->mirror, kind, m->now);
}

int node_full_end(struct node_map *m, enum kv_full_kind kind, int64_t now_ms)
{
	m->now = now_ms;
	return rebuild(m, kind, 1);
}

int node_full_abort(struct node_map *m, int64_t now_ms)
{
	m->now = now_ms;
	if (!m->delivered) {
		/* the first read: half of it is no version to offer (the snapshot stands);
		 * the next full read hands the mirror everything */
		m->in_full = 0;
		return 0;
	}
	return rebuild(m, KV_FULL_RECOVER, 0);
}
