/*
 * The inside of the mirror (mirror.h), private to the files that make it up, one concern
 * each (as Fluent Bit splits in_tail into tail_file, tail_scan, tail_db):
 *   mirror.c         life, node events and the per-group lists of changed nodes, stats
 *   mirror_settle.c  when a changed group is built: its settle deadline
 *   mirror_build.c   building a group's version: patched from its changed nodes, or read
 *                    whole, and offered
 *   mirror_order.c   the held version's nodes in path order, edited in place
 *   mirror_ghosts.c  PLUGIN's ghosts: the old nodes a rename leaves behind
 *   mirror_repair.c  full reads: what was read replaces the mirror, differences as events
 *
 * Nodes live in a table keyed by path (table.h). Each group keeps the version it last built
 * and, beside it, the node of each of its items in the same order (path order), plus the
 * list of its nodes changed since (deletions stay as tombstones until then).
 */
#ifndef GW_KV_MIRROR_STATE_H
#define GW_KV_MIRROR_STATE_H

#include <pthread.h>

#include "model/edit.h"
#include "model/groups.h"
#include "source/kv/mirror.h"
#include "source/kv/table.h"

struct gstate {
	struct group_data *base; /* the version last built and accepted (a reference); NULL:
	                          * the next build reads the whole group */
	struct kv_node **order;  /* base's items' nodes, in base's order (path order) */
	size_t order_cap;        /* room in order (a patch edits it in place) */
	struct kv_node **ghosts; /* PLUGIN: nodes hidden by a newer node with their id */
	size_t n_ghosts;
	struct kv_node *dirty; /* nodes changed since the last build (tombstones too) */
	size_t n_dirty;
	int due; /* a build is pending, by first_ms/last_ms */
	int64_t first_ms, last_ms;
};

struct kv_mirror {
	struct kv_mirror_args a;
	char *type, *server;
	struct kv_table cur;
	struct kv_table staging;
	int staging_active;
	struct gstate gs[GW_GROUP_COUNT];
	pthread_mutex_t stats_mu;
	struct kv_mirror_stats stats;
};

/* PLUGIN: the group whose items have an alias (model/keys.h key_alias). */
static inline int kv_mirror_alias_group(int g)
{
	return g == GW_GROUP_PLUGIN;
}

/* mirror.c: the group's base and its nodes forgotten (the next build reads it whole). */
void kv_mirror_forget_base(struct gstate *s);
/* mirror.c: the group's changes are in its version now: empty its list, free its
 * tombstones. */
void kv_mirror_dirty_clear(struct kv_mirror *m, int g);
/* mirror.c: a node of the current table changed (kv_table_set's answer rc): list it, set
 * the group's deadline. 1 if the mirror changed, 0 if not, -1 on out of memory. */
int kv_mirror_changed(struct kv_mirror *m, int rc, struct kv_node *n, int64_t now_ms);
/* mirror.c: node n is gone (a tombstone until its group is built). */
void kv_mirror_kill(struct kv_mirror *m, struct kv_node *n, int64_t now_ms);

/* mirror_settle.c: an event of group g at now_ms (its deadline starts or moves). */
void kv_mirror_mark_due(struct kv_mirror *m, int g, int64_t now_ms);

/* mirror_build.c: build group g from the mirror and offer it. force: offer even if equal to
 * what is held. 1 accepted, 0 not, -1 out of memory. */
int kv_mirror_build(struct kv_mirror *m, enum gw_group g, int force);

/* mirror_order.c: one changed node as an edit of the held version. */
struct change {
	struct edit e;
	struct kv_node *node;
};
/* Where node n is (found) or would go among the base's nodes. */
size_t kv_mirror_order_rank(const struct gstate *s, const struct kv_node *n, int *found);
/* Make room for the base's order after the changes, before the version is offered, so that
 * applying them (kv_mirror_order_apply) cannot fail: in place, or a new array in *fresh.
 * 0 or -1 (out of memory). */
int kv_mirror_order_prepare(struct gstate *s, const struct change *ch, size_t nc, size_t n_new,
                            struct kv_node ***fresh);
/* The changes made to the base's order in place (its room made by order_prepare). */
void kv_mirror_order_apply(struct gstate *s, const struct change *ch, size_t nc, size_t n_old);

/* mirror_ghosts.c: the group without its ghosts (PLUGIN): *list is `all` less the items
 * hidden by a newer one with their id; win[] and ghosts[] get the nodes of each (nodes[i]
 * holds all's item i). 0 or -1 (out of memory). */
int kv_mirror_drop_ghosts(enum gw_group g, struct group_data *all, struct kv_node *const *nodes,
                          struct kv_node **win, size_t *nw, struct kv_node **ghosts, size_t *ng,
                          struct group_data **list, struct gw_err *err);

#endif
