/*
 * From znodes to the mirror (source/kv/mirror.h): reading subtrees with their watches set,
 * and turning each watch notification into mirror calls. One-shot watches are re-armed by
 * the very read that answers them, so the node's state read is the state watched from:
 * nothing is missed on a node the source knows. A child notification is diffed against
 * the known children (tree.h): new subtrees are walked, vanished ones deleted. A data node
 * with empty data is an intermediate node (ShenYu's parents): no item, but walked. A group
 * directory that does not exist is an empty group, watched for its creation.
 *
 * Runs on the source thread only.
 */
#ifndef GW_ZK_WALK_H
#define GW_ZK_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "source/failure.h"
#include "source/kv/layout.h"
#include "source/kv/mirror.h"
#include "source/zookeeper/events.h"
#include "source/zookeeper/session.h"
#include "source/zookeeper/tree.h"

struct zk_walk {
	struct zk_session *zs;
	struct kv_mirror *mirror;
	const struct kv_layout *layout;
	struct zk_tree tree;
	unsigned missing; /* bit g: group g's directory is missing (an exists watch on it) */
	int full;         /* inside a full read: nodes go to kv_mirror_full_put */
	int rc; /* the library code of the last failure (its kind and message: the caller's
	         * struct gw_err) */
	const char *server; /* the store's label, for messages */
};

void zk_walk_init(struct zk_walk *w, struct zk_session *zs, struct kv_mirror *mirror,
                  const struct kv_layout *layout, const char *server);
void zk_walk_free(struct zk_walk *w);

/* Read every configured group's directory into the mirror with watches set:
 * full_begin, full_put, full_end(kind). Returns the versions accepted (>= 0), or -1 with
 * err (its kind, a message naming server and path) and w->rc set (the full read is aborted;
 * nothing changed in the mirror). */
int zk_walk_full(struct zk_walk *w, struct gw_err *err, enum kv_full_kind kind, int64_t now_ms);

/* Apply one node event (not a session event). 0, or -1 with err and w->rc set: the read
 * that would have re-armed the watch failed, so the caller must read everything again. */
int zk_walk_event(struct zk_walk *w, struct gw_err *err, const struct zk_event *e, int64_t now_ms);

/* Watches set now: nodes read plus missing group directories watched. */
uint64_t zk_walk_watches(const struct zk_walk *w);

#endif
