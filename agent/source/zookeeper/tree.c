/*
 * The table of read and watched znodes (see tree.h): a chained hash table keyed by the
 * full path (FNV-1a), doubled when it fills, because a metaData directory can hold many
 * thousands of items and every event looks a node up. Removing a subtree goes by path
 * prefix, not down the children lists, so it forgets exactly what the mirror forgets.
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

/* Whether p is below path ("path/..."); every path is below the root "/". */
static int below(const char *p, const char *path, size_t len)
{
	if (len == 1 && path[0] == '/')
		return p[0] == '/' && p[1] != '\0';
	return strncmp(p, path, len) == 0 && p[len] == '/';
}

size_t zk_tree_remove(struct zk_tree *t, const char *path)
{
	/* One pass over every bucket rather than down the children lists: a node the lists do
	 * not name (tree.h) is found too. The cost is the table's size, as the mirror's own
	 * delete_tree already pays for every delete. */
	size_t len = strlen(path), removed = 0;
	for (size_t i = 0; i < t->n_buckets; i++) {
		struct zk_node **pp = &t->buckets[i];
		while (*pp) {
			struct zk_node *n = *pp;
			if (strcmp(n->path, path) != 0 && !below(n->path, path, len)) {
				pp = &n->next;
				continue;
			}
			*pp = n->next;
			node_free(n);
			t->count--;
			removed++;
		}
	}
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
