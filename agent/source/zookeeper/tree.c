/*
 * The table of read and watched znodes (see tree.h): the agent's hash table (core/htab.h)
 * keyed by the full path, because a metaData directory can hold many thousands of items and
 * every event looks a node up. Removing a subtree goes by path
 * prefix, not down the children lists, so it forgets exactly what the mirror forgets.
 */
#include "source/zookeeper/tree.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void zk_tree_init(struct zk_tree *t)
{
	memset(t, 0, sizeof *t);
}

static void node_free(struct zk_node *n)
{
	zk_names_free(n->kids, n->n_kids);
	free(n);
}

static int drop_all(struct htab_link *e, void *arg)
{
	(void)arg;
	node_free((struct zk_node *)e);
	return 1;
}

void zk_tree_free(struct zk_tree *t)
{
	htab_remove_if(&t->nodes, drop_all, NULL);
	htab_free(&t->nodes);
}

static int path_eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct zk_node *n = (const struct zk_node *)e;
	return strncmp(n->path, key, len) == 0 && n->path[len] == '\0';
}

struct zk_node *zk_tree_get(const struct zk_tree *t, const char *path)
{
	size_t len = strlen(path);
	struct htab_link **at = htab_find(&t->nodes, htab_hash(path, len), path_eq, path, len);
	return at ? (struct zk_node *)*at : NULL;
}

struct zk_node *zk_tree_put(struct zk_tree *t, const char *path)
{
	struct zk_node *n = zk_tree_get(t, path);
	if (n)
		return n;
	if (htab_reserve(&t->nodes) != 0)
		return NULL;
	size_t len = strlen(path);
	n = calloc(1, sizeof *n + len + 1);
	if (!n)
		return NULL;
	memcpy(n->path, path, len + 1);
	uint64_t h = htab_hash(path, len);
	htab_insert(&t->nodes, htab_find(&t->nodes, h, path_eq, path, len), &n->link, h);
	return n;
}

/* Whether p is below path ("path/..."); every path is below the root "/". */
static int below(const char *p, const char *path, size_t len)
{
	if (len == 1 && path[0] == '/')
		return p[0] == '/' && p[1] != '\0';
	return strncmp(p, path, len) == 0 && p[len] == '/';
}

struct subtree {
	const char *path;
	size_t len;
};

static int drop_subtree(struct htab_link *e, void *arg)
{
	const struct subtree *st = arg;
	struct zk_node *n = (struct zk_node *)e;
	if (strcmp(n->path, st->path) != 0 && !below(n->path, st->path, st->len))
		return 0;
	node_free(n);
	return 1;
}

size_t zk_tree_remove(struct zk_tree *t, const char *path)
{
	/* One pass over the whole table rather than down the children lists: a node the lists
	 * do not name (tree.h) is found too. The cost is the table's size, as the mirror's own
	 * delete_tree already pays for every delete. */
	struct subtree st = {path, strlen(path)};
	return htab_remove_if(&t->nodes, drop_subtree, &st);
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
