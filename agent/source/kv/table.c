/*
 * The node table of the mirror (see table.h): FNV-1a hashes, chains, doubling; the
 * directory counts are kept for live nodes only, so a tombstone is invisible to subtree
 * deletes.
 */
#include "source/kv/table.h"

#include <stdlib.h>
#include <string.h>

/* How many live nodes a table holds strictly below a path. One entry per proper prefix
 * ending before a '/' of a held path. */
struct kv_dir {
	struct kv_dir *next;
	uint64_t hash;
	size_t len;
	size_t below;
	char path[];
};

static uint64_t path_hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static void node_free(struct kv_node *n)
{
	if (!n)
		return;
	free(n->path);
	free(n->value);
	free(n);
}

void kv_table_clear(struct kv_table *t)
{
	for (size_t i = 0; i < t->n_slots; i++) {
		struct kv_node *n = t->slots[i];
		while (n) {
			struct kv_node *next = n->next;
			node_free(n);
			n = next;
		}
	}
	free(t->slots);
	for (size_t i = 0; i < t->n_dslots; i++) {
		struct kv_dir *d = t->dslots[i];
		while (d) {
			struct kv_dir *next = d->next;
			free(d);
			d = next;
		}
	}
	free(t->dslots);
	memset(t, 0, sizeof *t);
}

static struct kv_dir **dir_find(struct kv_table *t, const char *path, size_t len, uint64_t h)
{
	if (!t->n_dslots)
		return NULL;
	struct kv_dir **at = &t->dslots[h & (t->n_dslots - 1)];
	for (; *at; at = &(*at)->next)
		if ((*at)->hash == h && (*at)->len == len && memcmp((*at)->path, path, len) == 0)
			return at;
	return at;
}

static int dir_grow(struct kv_table *t)
{
	if (t->n_dslots && t->n_dirs < t->n_dslots)
		return 0;
	size_t n_slots = t->n_dslots ? t->n_dslots * 2 : 64;
	struct kv_dir **slots = calloc(n_slots, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->n_dslots; i++) {
		struct kv_dir *d = t->dslots[i];
		while (d) {
			struct kv_dir *next = d->next;
			d->next = slots[d->hash & (n_slots - 1)];
			slots[d->hash & (n_slots - 1)] = d;
			d = next;
		}
	}
	free(t->dslots);
	t->dslots = slots;
	t->n_dslots = n_slots;
	return 0;
}

/* Count a node at path in (delta 1) or out (delta -1) of every directory above it. Counting
 * in may fail for memory (-1); counting out never does (every entry exists). */
static int dirs_count(struct kv_table *t, const char *path, size_t len, int delta)
{
	for (size_t k = 1; k < len; k++) {
		if (path[k] != '/')
			continue;
		uint64_t h = path_hash(path, k);
		struct kv_dir **at = dir_find(t, path, k, h);
		if (at && *at) {
			struct kv_dir *d = *at;
			if (delta > 0) {
				d->below++;
			} else if (--d->below == 0) {
				*at = d->next;
				free(d);
				t->n_dirs--;
			}
			continue;
		}
		if (delta < 0)
			continue;
		struct kv_dir *d;
		if (dir_grow(t) < 0 || !(d = malloc(sizeof *d + k))) {
			dirs_count(t, path, k, -1); /* undo the levels above */
			return -1;
		}
		memcpy(d->path, path, k);
		d->len = k;
		d->hash = h;
		d->below = 1;
		at = dir_find(t, path, k, h);
		d->next = *at;
		*at = d;
		t->n_dirs++;
	}
	return 0;
}

size_t kv_table_below(struct kv_table *t, const char *path, size_t len)
{
	struct kv_dir **at = dir_find(t, path, len, path_hash(path, len));
	return at && *at ? (*at)->below : 0;
}

static struct kv_node **find_link(struct kv_table *t, const char *path, size_t len, uint64_t h)
{
	if (!t->n_slots)
		return NULL;
	struct kv_node **at = &t->slots[h & (t->n_slots - 1)];
	for (; *at; at = &(*at)->next)
		if ((*at)->hash == h && (*at)->path_len == len &&
		    memcmp((*at)->path, path, len) == 0)
			return at;
	return at; /* the empty link where it would go */
}

struct kv_node *kv_table_find(struct kv_table *t, const char *path, size_t len)
{
	struct kv_node **at = find_link(t, path, len, path_hash(path, len));
	return at ? *at : NULL;
}

const struct kv_node *kv_table_live(struct kv_table *t, const char *path, size_t len)
{
	const struct kv_node *n = kv_table_find(t, path, len);
	return n && !n->dead ? n : NULL;
}

static int table_grow(struct kv_table *t)
{
	if (t->n_slots && t->n + t->n_dead < t->n_slots)
		return 0;
	size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
	struct kv_node **slots = calloc(n_slots, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->n_slots; i++) {
		struct kv_node *n = t->slots[i];
		while (n) {
			struct kv_node *next = n->next;
			n->next = slots[n->hash & (n_slots - 1)];
			slots[n->hash & (n_slots - 1)] = n;
			n = next;
		}
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

void kv_table_kill(struct kv_table *t, struct kv_node *n)
{
	if (n->dead)
		return;
	dirs_count(t, n->path, n->path_len, -1);
	free(n->value);
	n->value = NULL;
	n->value_len = 0;
	n->dead = 1;
	t->n--;
	t->n_dead++;
}

void kv_table_drop(struct kv_table *t, struct kv_node *n)
{
	struct kv_node **at = find_link(t, n->path, n->path_len, n->hash);
	if (!at || *at != n)
		return;
	if (!n->dead)
		kv_table_kill(t, n);
	*at = n->next;
	t->n_dead--;
	node_free(n);
}

int kv_table_set(struct kv_table *t, int group, const char *path, size_t len, const char *v,
                 size_t vlen, int64_t rev, int keep, struct kv_node **node)
{
	uint64_t h = path_hash(path, len);
	struct kv_node **at = find_link(t, path, len, h);
	struct kv_node *n = at ? *at : NULL;
	*node = n;
	if (n && !n->dead) {
		if (n->value_len == vlen && (vlen == 0 || memcmp(n->value, v, vlen) == 0)) {
			int newer = n->rev != rev;
			n->rev = rev;
			return newer ? 2 : 0;
		}
		if (vlen == 0) {
			kv_table_kill(t, n);
			if (!keep) {
				kv_table_drop(t, n);
				*node = NULL;
			}
			return 1;
		}
		char *copy = malloc(vlen);
		if (!copy)
			return -1;
		memcpy(copy, v, vlen);
		free(n->value);
		n->value = copy;
		n->value_len = vlen;
		n->rev = rev;
		return 1;
	}
	if (vlen == 0)
		return 0;
	char *copy = malloc(vlen);
	if (!copy)
		return -1;
	memcpy(copy, v, vlen);
	if (n) { /* a tombstone comes back */
		if (dirs_count(t, path, len, 1) < 0) {
			free(copy);
			return -1;
		}
		n->value = copy;
		n->value_len = vlen;
		n->rev = rev;
		n->dead = 0;
		t->n_dead--;
		t->n++;
		return 1;
	}
	if (table_grow(t) < 0) {
		free(copy);
		return -1;
	}
	n = calloc(1, sizeof *n);
	if (!n || !(n->path = malloc(len + 1)) || dirs_count(t, path, len, 1) < 0) {
		if (n)
			free(n->path);
		free(n);
		free(copy);
		return -1;
	}
	memcpy(n->path, path, len);
	n->path[len] = '\0';
	n->path_len = len;
	n->value = copy;
	n->value_len = vlen;
	n->hash = h;
	n->rev = rev;
	n->group = group;
	at = find_link(t, path, len, h);
	n->next = *at;
	*at = n;
	t->n++;
	*node = n;
	return 1;
}

int kv_node_cmp(const void *a, const void *b)
{
	const struct kv_node *x = *(const struct kv_node *const *)a;
	const struct kv_node *y = *(const struct kv_node *const *)b;
	size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
	int c = memcmp(x->path, y->path, n);
	return c ? c : (x->path_len > y->path_len) - (x->path_len < y->path_len);
}
