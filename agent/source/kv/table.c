/*
 * The node table of the mirror (see table.h): nodes and directories in two core/htab.h
 * tables keyed by path; the directory counts are kept for live nodes only, so a tombstone is
 * invisible to subtree deletes.
 */
#include "source/kv/table.h"

#include <stdlib.h>
#include <string.h>

/* How many live nodes a table holds strictly below a path. One entry per proper prefix
 * ending before a '/' of a held path. */
struct kv_dir {
	struct htab_link link; /* first: the table's link is the directory */
	size_t len;
	size_t below;
	char path[];
};

static int dir_eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct kv_dir *d = (const struct kv_dir *)e;
	return d->len == len && memcmp(d->path, key, len) == 0;
}

static int node_eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct kv_node *n = (const struct kv_node *)e;
	return n->path_len == len && memcmp(n->path, key, len) == 0;
}

static void node_free(struct kv_node *n)
{
	if (!n)
		return;
	free(n->path);
	free(n->value);
	free(n);
}

static int drop_node(struct htab_link *e, void *arg)
{
	(void)arg;
	node_free((struct kv_node *)e);
	return 1;
}

static int drop_dir(struct htab_link *e, void *arg)
{
	(void)arg;
	free(e);
	return 1;
}

void kv_table_clear(struct kv_table *t)
{
	htab_remove_if(&t->nodes, drop_node, NULL);
	htab_free(&t->nodes);
	htab_remove_if(&t->dirs, drop_dir, NULL);
	htab_free(&t->dirs);
	memset(t, 0, sizeof *t);
}

struct kv_node *kv_table_next(const struct kv_table *t, size_t *slot, const struct kv_node *prev)
{
	return (struct kv_node *)htab_next(&t->nodes, slot, prev ? &prev->link : NULL);
}

/* Count a node at path in (delta 1) or out (delta -1) of every directory above it. Counting
 * in may fail for memory (-1); counting out never does (every entry exists). */
static int dirs_count(struct kv_table *t, const char *path, size_t len, int delta)
{
	for (size_t k = 1; k < len; k++) {
		if (path[k] != '/')
			continue;
		uint64_t h = htab_hash(path, k);
		struct htab_link **at = htab_find(&t->dirs, h, dir_eq, path, k);
		if (at && *at) {
			struct kv_dir *d = (struct kv_dir *)*at;
			if (delta > 0) {
				d->below++;
			} else if (--d->below == 0) {
				htab_remove(&t->dirs, at);
				free(d);
			}
			continue;
		}
		if (delta < 0)
			continue;
		struct kv_dir *d;
		if (htab_reserve(&t->dirs) < 0 || !(d = malloc(sizeof *d + k))) {
			dirs_count(t, path, k, -1); /* undo the levels above */
			return -1;
		}
		memcpy(d->path, path, k);
		d->len = k;
		d->below = 1;
		htab_insert(&t->dirs, htab_find(&t->dirs, h, dir_eq, path, k), &d->link, h);
	}
	return 0;
}

size_t kv_table_below(struct kv_table *t, const char *path, size_t len)
{
	struct htab_link **at = htab_find(&t->dirs, htab_hash(path, len), dir_eq, path, len);
	return at && *at ? ((struct kv_dir *)*at)->below : 0;
}

struct kv_node *kv_table_find(struct kv_table *t, const char *path, size_t len)
{
	struct htab_link **at = htab_find(&t->nodes, htab_hash(path, len), node_eq, path, len);
	return at ? (struct kv_node *)*at : NULL;
}

const struct kv_node *kv_table_live(struct kv_table *t, const char *path, size_t len)
{
	const struct kv_node *n = kv_table_find(t, path, len);
	return n && !n->dead ? n : NULL;
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
	struct htab_link **at = htab_find(&t->nodes, n->link.hash, node_eq, n->path, n->path_len);
	if (!at || *at != &n->link)
		return;
	if (!n->dead)
		kv_table_kill(t, n);
	htab_remove(&t->nodes, at);
	t->n_dead--;
	node_free(n);
}

int kv_table_set(struct kv_table *t, int group, const char *path, size_t len, const char *v,
                 size_t vlen, int64_t rev, int keep, struct kv_node **node)
{
	uint64_t h = htab_hash(path, len);
	struct htab_link **at = htab_find(&t->nodes, h, node_eq, path, len);
	struct kv_node *n = at ? (struct kv_node *)*at : NULL;
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
	if (htab_reserve(&t->nodes) < 0) {
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
	n->rev = rev;
	n->group = group;
	htab_insert(&t->nodes, htab_find(&t->nodes, h, node_eq, path, len), &n->link, h);
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
