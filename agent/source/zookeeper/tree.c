/*
 * The table of read and watched znodes (see tree.h): a chained hash table keyed by the
 * full path (FNV-1a), doubled when it fills, because a metaData directory can hold many
 * thousands of items and every event looks a node up.
 */
#include "source/zookeeper/tree.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (size_t)h;
}

void zk_tree_init(struct zk_tree *t)
{
	memset(t, 0, sizeof *t);
}

static void node_free(struct zk_node *n)
{
	zk_names_free(n->kids, n->n_kids);
	free(n);
}

void zk_tree_free(struct zk_tree *t)
{
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct zk_node *n = t->buckets[i];
		while (n) {
			struct zk_node *next = n->next;
			node_free(n);
			n = next;
		}
	}
	free(t->buckets);
	memset(t, 0, sizeof *t);
}

struct zk_node *zk_tree_get(const struct zk_tree *t, const char *path)
{
	if (!t->n_buckets)
		return NULL;
	for (struct zk_node *n = t->buckets[hash(path) & (t->n_buckets - 1)]; n; n = n->next)
		if (strcmp(n->path, path) == 0)
			return n;
	return NULL;
}

static int grow(struct zk_tree *t)
{
	size_t nb = t->n_buckets ? t->n_buckets * 2 : 64;
	struct zk_node **b = calloc(nb, sizeof *b);
	if (!b)
		return -1;
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct zk_node *n = t->buckets[i];
		while (n) {
			struct zk_node *next = n->next;
			size_t j = hash(n->path) & (nb - 1);
			n->next = b[j];
			b[j] = n;
			n = next;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->n_buckets = nb;
	return 0;
}

struct zk_node *zk_tree_put(struct zk_tree *t, const char *path)
{
	struct zk_node *n = zk_tree_get(t, path);
	if (n)
		return n;
	if (t->count >= t->n_buckets && grow(t) != 0)
		return NULL;
	size_t len = strlen(path);
	n = calloc(1, sizeof *n + len + 1);
	if (!n)
		return NULL;
	memcpy(n->path, path, len + 1);
	size_t j = hash(path) & (t->n_buckets - 1);
	n->next = t->buckets[j];
	t->buckets[j] = n;
	t->count++;
	return n;
}

/* Unlink the node at path from its bucket (not freed); NULL if absent. */
static struct zk_node *unlink_node(struct zk_tree *t, const char *path)
{
	if (!t->n_buckets)
		return NULL;
	struct zk_node **pp = &t->buckets[hash(path) & (t->n_buckets - 1)];
	for (; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->path, path) == 0) {
			struct zk_node *n = *pp;
			*pp = n->next;
			t->count--;
			return n;
		}
	}
	return NULL;
}

size_t zk_tree_remove(struct zk_tree *t, const char *path)
{
	struct zk_node *n = unlink_node(t, path);
	if (!n)
		return 0;
	size_t removed = 1;
	for (size_t i = 0; i < n->n_kids; i++) {
		char *kid = zk_path_join(n->path, n->kids[i]);
		/* out of memory: the kid stays in the table; a later read of it fails with
		 * "no node" and removes it then */
		if (kid)
			removed += zk_tree_remove(t, kid);
		free(kid);
	}
	node_free(n);
	return removed;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int zk_node_set_kids(struct zk_node *n, char *const *names, size_t count, char ***old,
                     size_t *n_old)
{
	char **kids = count ? calloc(count, sizeof *kids) : NULL;
	if (count && !kids)
		return -1;
	for (size_t i = 0; i < count; i++) {
		if (!(kids[i] = strdup(names[i]))) {
			zk_names_free(kids, i);
			return -1;
		}
	}
	if (count > 1)
		qsort(kids, count, sizeof *kids, cmp_names);
	*old = n->kids;
	*n_old = n->n_kids;
	n->kids = kids;
	n->n_kids = count;
	return 0;
}

int zk_names_contains(char *const *sorted, size_t n, const char *name)
{
	return n && bsearch(&name, sorted, n, sizeof *sorted, cmp_names) != NULL;
}

void zk_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

char *zk_path_join(const char *parent, const char *name)
{
	size_t pl = strlen(parent), nl = strlen(name);
	if (pl == 1 && parent[0] == '/')
		pl = 0;
	char *p = malloc(pl + 1 + nl + 1);
	if (!p)
		return NULL;
	memcpy(p, parent, pl);
	p[pl] = '/';
	memcpy(p + pl + 1, name, nl + 1);
	return p;
}
