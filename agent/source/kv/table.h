/*
 * The mirror's table of nodes (mirror.h): path -> value, one hash table (core/htab.h), plus a
 * count of the nodes below each directory so that deleting a leaf's subtree (ZooKeeper
 * reports a deleted subtree node by node) costs that node, not a scan of the table.
 *
 * A node deleted from the current table is kept as a tombstone (`dead`, no value) until
 * its group's next build has taken the deletion into the group's version (mirror.c): the
 * build finds the deleted item's place by the node, so the node must outlive the event.
 * Tombstones are not counted, not listed and not found by table_live().
 */
#ifndef GW_KV_TABLE_H
#define GW_KV_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/htab.h"

struct kv_node {
	struct htab_link link; /* first: the table's link is the node */
	struct kv_node *dirty; /* the group's list of nodes changed since its last build */
	int64_t rev;           /* the store's revision of the value (etcd mod_revision, ZooKeeper
	                        * mzxid): which of two nodes holding one plugin id is newer */
	int group;
	uint8_t is_dirty; /* on its group's list */
	uint8_t dead;     /* a tombstone */
	char *path;       /* NUL-terminated */
	size_t path_len;
	char *value; /* NULL when dead */
	size_t value_len;
};

struct kv_table {
	struct htab nodes; /* live nodes and tombstones */
	size_t n;          /* live nodes */
	size_t n_dead;     /* tombstones */
	struct htab dirs;  /* struct kv_dir (table.c): the counts below each directory */
};

/* Free every node (tombstones too) and the table's arrays; t is then empty. */
void kv_table_clear(struct kv_table *t);

/* The node at path, live or a tombstone, or NULL. */
struct kv_node *kv_table_find(struct kv_table *t, const char *path, size_t len);
/* The live node at path, or NULL. */
const struct kv_node *kv_table_live(struct kv_table *t, const char *path, size_t len);

/*
 * Put a value (vlen 0: delete) for path in `group`, at revision rev. 1 if the node changed
 * (it was added, revived, deleted or given another value), 2 if only its revision did (the
 * same bytes written again), 0 if not, -1 on out of memory. *node is the node concerned (NULL
 * when there is none). A delete leaves a tombstone when `keep` is set, else frees the node.
 */
int kv_table_set(struct kv_table *t, int group, const char *path, size_t len, const char *v,
                 size_t vlen, int64_t rev, int keep, struct kv_node **node);

/* Make a live node a tombstone (mirror.c's subtree deletes). */
void kv_table_kill(struct kv_table *t, struct kv_node *n);
/* Unlink and free a tombstone. */
void kv_table_drop(struct kv_table *t, struct kv_node *n);

/* Every node, tombstones too, in no particular order: prev NULL for the first, then the
 * last one returned; *slot is the cursor. The loop must not add or drop nodes. */
struct kv_node *kv_table_next(const struct kv_table *t, size_t *slot, const struct kv_node *prev);

/* How many live nodes t holds strictly below path. */
size_t kv_table_below(struct kv_table *t, const char *path, size_t len);

/* Path order (bytes, shorter first on a tie), for qsort of node pointers. */
int kv_node_cmp(const void *a, const void *b);

#endif
