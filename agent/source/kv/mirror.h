/*
 * The mirror: what a path-store source (ZooKeeper, etcd) has read of the admin's nodes, and
 * how node events become group versions. The admin writes one node at a time, without
 * transactions, and a REFRESH is "delete the plugin's subtree, then create every item
 * again" (PROTOCOL-PUSH.md 2.2): delivering each event would show subscribers an empty
 * group and then a full one. So events only change the mirror and list their node as
 * changed in its group; a group is built when its events have settled (no event for
 * `settle`, and never later than 100 x settle after the first), by patching the held
 * version with the changed nodes (an insert, a replace or a removal each, in path order),
 * and offered as one version with the true delta. The result is what a rebuild from every
 * item node of the group, in path order, would give, at the cost of what changed. The
 * version is stamped like every event source's (model/patch.h): the identity of its item
 * set, lastModifyTime strictly increasing; a result equal to what is held offers nothing.
 *
 * A plugin renamed in the admin is written under its new name and its old node stays,
 * holding the same id: of the nodes holding one plugin id, the one with the newest
 * revision (etcd mod_revision, ZooKeeper mzxid) is the plugin, the others are kept out of
 * the version (a rename leaves no ghost); delete the newest and the next newest is the
 * plugin again, as a fresh read of the store would find.
 *
 * A value that is not one valid item refuses its group's new version (logged with the
 * path); the last good version stays and the group is built again, with every change
 * since, on its next event.
 *
 * Full reads (start-up, a new ZooKeeper session, an etcd watch lost to compaction, the
 * anti-entropy resync) go through full_begin / full_put / full_end, which replaces the
 * mirror with exactly what was read: nodes not read are deletions. What differs is applied
 * as events and built at once; at a resync every difference is a repair (logged naming the
 * group and paths, counted).
 *
 * Threads: one thread (the source's) calls everything but kv_mirror_stats(), which any
 * thread may call.
 */
#ifndef GW_KV_MIRROR_H
#define GW_KV_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/log.h"
#include "source/kv/layout.h"
#include "store/ingest.h"

struct kv_mirror;

struct kv_mirror_args {
	const struct kv_layout *layout; /* outlives the mirror */
	struct ingest *ingest;
	struct gw_log *log;
	const char *type; /* "zookeeper" or "etcd": starts every log line */
	const char
	    *server; /* names the store in logs and versions: "zookeeper://h:2181/ns/shenyu" */
	int64_t settle_ms; /* > 0 */
};

enum kv_full_kind {
	KV_FULL_START,   /* the first read: everything is new; offered at once */
	KV_FULL_RECOVER, /* after a new session or a lost watch: differences are changes
	                  * missed while away; offered at once, logged at info */
	KV_FULL_RESYNC,  /* anti-entropy: differences are repairs, logged (warn) and counted */
};

struct kv_mirror_stats {
	size_t nodes;            /* item nodes held (nodes with data) */
	uint64_t events;         /* node events applied */
	uint64_t versions;       /* group versions accepted by the ingest */
	uint64_t refused;        /* group versions refused for a malformed value */
	uint64_t repairs;        /* group versions a resync corrected */
	uint64_t whole_reads;    /* builds that read a whole group instead of patching it
	                          * (start-up, a snapshot version held, PLUGIN) */
	int64_t last_event_ms;   /* wall clock of the last node event; 0: never */
	int64_t last_version_ms; /* wall clock of the last accepted version; 0: never */
};

/* NULL (err says why) on out of memory. */
struct kv_mirror *kv_mirror_new(const struct kv_mirror_args *a, struct gw_err *err);
void kv_mirror_free(struct kv_mirror *m);

/*
 * One node event at monotonic time now_ms: the node's value at the store's revision `rev`
 * (etcd mod_revision, ZooKeeper mzxid; 0 if unknown). A path outside the configured groups
 * is ignored (returns 0). An empty value is a node without data (a ZooKeeper parent): it
 * holds no item, so putting one where an item was removes the item. Returns 1 if the
 * mirror changed (its group is then due), 0 if not, -1 on out of memory.
 */
int kv_mirror_put(struct kv_mirror *m, const char *path, size_t path_len, const char *value,
                  size_t value_len, int64_t rev, int64_t now_ms);
int kv_mirror_delete(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms);
/* Remove the node at path and every node below it (a ZooKeeper subtree gone). */
int kv_mirror_delete_tree(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms);

/* A full read: begin, put every node read (any order), end. Between begin and end the
 * mirror still answers and builds from what it held; events that arrive meanwhile must be
 * applied after end (a transport reads with watches set, then drains its events). */
int kv_mirror_full_begin(struct kv_mirror *m);
int kv_mirror_full_put(struct kv_mirror *m, const char *path, size_t path_len, const char *value,
                       size_t value_len, int64_t rev);
/* Replace the mirror with what was read and build every changed group at once (for
 * KV_FULL_START: every configured group, so each has a version even if empty). Returns
 * how many versions the ingest accepted, -1 on out of memory. */
int kv_mirror_full_end(struct kv_mirror *m, enum kv_full_kind kind, int64_t now_ms);
/* Forget a full read begun but not ended (the read failed half way). */
void kv_mirror_full_abort(struct kv_mirror *m);

/* When changed groups must be built (monotonic ms), or -1 if none is dirty: the transport
 * sleeps until then or its next event, never on a timer of its own. */
int64_t kv_mirror_deadline(const struct kv_mirror *m);
/* Build and offer every changed group whose deadline has come (all of them if force: at
 * stop). Returns how many versions the ingest accepted. */
int kv_mirror_flush(struct kv_mirror *m, int64_t now_ms, int force);

void kv_mirror_stats(struct kv_mirror *m, struct kv_mirror_stats *out);

#endif
