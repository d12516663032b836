/*
 * What the ZooKeeper source knows of the server's tree: every znode it has read and set its
 * one-shot watches on (data and children), with the children's names as last read. The C
 * client has no recursive watch, so this table is how a child event becomes "these subtrees
 * were created, these were deleted": a name listed now whose node is not in the table is
 * new (walk it), a name listed before and not now is gone (delete its subtree). Deciding
 * "new" by the table rather than by the old list matters: a node deleted and created again
 * between two reads was forgotten at its delete event and must be walked again.
 *
 * Pure data, no library calls: tested alone (tests/unit/source/zookeeper/check_zk_tree.c).
 */
#ifndef GW_ZK_TREE_H
#define GW_ZK_TREE_H

#include <stddef.h>

#include "core/htab.h"

struct zk_node {
	struct htab_link link; /* first: the table's link is the node */
	char **kids;           /* children's names, sorted (strcmp) */
	size_t n_kids;
	char path[];
};

struct zk_tree {
	struct htab nodes; /* keyed by the full path */
};

void zk_tree_init(struct zk_tree *t);
/* How many nodes the table holds. */
static inline size_t zk_tree_count(const struct zk_tree *t)
{
	return t->nodes.n;
}
void zk_tree_free(struct zk_tree *t);

struct zk_node *zk_tree_get(const struct zk_tree *t, const char *path);
/* The node at path, added (without children) if it is not there. NULL on out of memory. */
struct zk_node *zk_tree_put(struct zk_tree *t, const char *path);
/* Remove the node at path and every node in the table below it ("path/..."), whether or
 * not a children list names it: a node can be read while its parent is not in the table
 * (its delete event re-reads it after the parent was found gone) or before the parent's
 * list names it, and the mirror forgets a subtree by path prefix too (kv_mirror_delete_tree),
 * so the two must forget the same nodes. A node left in the table with its item gone from
 * the mirror would never be read again: the next walk of its parent skips a known name.
 * Returns how many nodes were removed. */
size_t zk_tree_remove(struct zk_tree *t, const char *path);

/* Replace n's children with a sorted copy of names[0..count). On success *old gets the
 * previous list (sorted; free with zk_names_free(old, n_old)) and 0 is returned; -1 on out
 * of memory (n unchanged). */
int zk_node_set_kids(struct zk_node *n, char *const *names, size_t count, char ***old,
                     size_t *n_old);
/* Whether the sorted list holds name. */
int zk_names_contains(char *const *sorted, size_t n, const char *name);
void zk_names_free(char **names, size_t n);

/* "parent/name" in a new string; NULL on out of memory. A parent of "/" gives "/name". */
char *zk_path_join(const char *parent, const char *name);

#endif
