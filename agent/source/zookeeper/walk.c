/*
 * Subtree reads and event handling for the ZooKeeper source (see walk.h). Every handler
 * re-reads what the event names instead of trusting the event: notifications carry no
 * data, can be stale (a node deleted and created again before its turn) and come once per
 * watch, so the current state read with the watch re-armed is the only truth.
 */
#include "source/zookeeper/walk.h"

#include <stdio.h>
#include <string.h>

static int fail(struct zk_walk *w, struct gw_err *err, int rc, const char *what, const char *path)
{
	w->rc = rc;
	err->kind = zk_fail_reason(rc);
	return gw_errf(err, "%s: %s %s: %s", w->server, what, path, zerror(rc));
}

void zk_walk_init(struct zk_walk *w, struct zk_session *zs, struct kv_mirror *mirror,
                  const struct kv_layout *layout, const char *server)
{
	memset(w, 0, sizeof *w);
	w->zs = zs;
	w->mirror = mirror;
	w->layout = layout;
	w->server = server;
	zk_tree_init(&w->tree);
}

void zk_walk_free(struct zk_walk *w)
{
	zk_tree_free(&w->tree);
}

/* The configured group whose directory is exactly path, or -1. */
static int dir_group(const struct zk_walk *w, const char *path)
{
	for (size_t i = 0; i < w->layout->n_groups; i++) {
		enum gw_group g = w->layout->groups[i];
		if (w->layout->dirs[g] && strcmp(w->layout->dirs[g], path) == 0)
			return (int)g;
	}
	return -1;
}

static int oom(struct zk_walk *w, struct gw_err *err, const char *path)
{
	return fail(w, err, ZSYSTEMERROR, "out of memory reading", path);
}

/* A node (and its subtree) is gone: out of the mirror and the table. A group directory
 * gone is watched for its return. */
static int gone(struct zk_walk *w, struct gw_err *err, const char *path, int64_t now_ms)
{
	zk_tree_remove(&w->tree, path);
	if (!w->full && kv_mirror_delete_tree(w->mirror, path, strlen(path), now_ms) < 0)
		return oom(w, err, path);
	int g = dir_group(w, path);
	if (g < 0)
		return 0;
	int rc = zk_watch_exists(w->zs, path);
	if (rc == ZNONODE) {
		w->missing |= 1u << g;
		return 0;
	}
	if (rc != ZOK)
		return fail(w, err, rc, "watching for", path);
	return 1; /* it is back already: the caller walks it */
}

static int walk_node(struct zk_walk *w, struct gw_err *err, const char *path, int64_t now_ms);

/* Read path's children (re-arming the child watch), forget the vanished ones and walk the
 * new ones. Returns 0, 1 if path itself is gone, -1 on failure. */
static int read_children(struct zk_walk *w, struct gw_err *err, struct zk_node *n, int64_t now_ms)
{
	struct String_vector kids;
	int rc = zk_read_kids(w->zs, n->path, &kids);
	if (rc == ZNONODE)
		return 1;
	if (rc != ZOK)
		return fail(w, err, rc, "listing the children of", n->path);
	char **old = NULL;
	size_t n_old = 0;
	if (zk_node_set_kids(n, kids.data, (size_t)(kids.count > 0 ? kids.count : 0), &old,
	                     &n_old) != 0) {
		deallocate_String_vector(&kids);
		return oom(w, err, n->path);
	}
	deallocate_String_vector(&kids);
	/* n stays valid throughout: the walks below add and remove other nodes only (its
	 * descendants), and the table never moves a node when it grows */
	int res = 0;
	for (size_t i = 0; i < n_old && res == 0; i++) {
		if (zk_names_contains(n->kids, n->n_kids, old[i]))
			continue;
		char *kid = zk_path_join(n->path, old[i]);
		if (!kid)
			res = oom(w, err, n->path);
		else if (gone(w, err, kid, now_ms) < 0)
			res = -1;
		free(kid);
	}
	zk_names_free(old, n_old);
	for (size_t i = 0; i < n->n_kids && res == 0; i++) {
		char *kid = zk_path_join(n->path, n->kids[i]);
		if (!kid)
			res = oom(w, err, n->path);
		else if (!zk_tree_get(&w->tree, kid) && walk_node(w, err, kid, now_ms) < 0)
			res = -1;
		free(kid);
	}
	return res;
}

/* Read path's data (re-arming the data watch) into the mirror. 0, 1 if gone, -1. */
static int read_data(struct zk_walk *w, struct gw_err *err, const char *path, int64_t now_ms)
{
	const char *val;
	size_t len;
	int rc = zk_read_data(w->zs, path, &val, &len);
	if (rc == ZNONODE)
		return 1;
	if (rc != ZOK)
		return fail(w, err, rc, "reading", path);
	size_t pl = strlen(path);
	if (kv_layout_group_of(w->layout, path, pl) < 0)
		return 0; /* the root, a group directory: no item */
	/* the node's last modification: which of two nodes holding one plugin id is newer */
	int64_t rev = w->zs->reply.st.mzxid;
	int r = w->full ? (len ? kv_mirror_full_put(w->mirror, path, pl, val, len, rev) : 0)
	                : kv_mirror_put(w->mirror, path, pl, val, len, rev, now_ms);
	return r < 0 ? oom(w, err, path) : 0;
}

/* Walk a node not yet known: its data, then its children, recursively. A node that
 * vanished meanwhile is simply gone (its parent's child watch tells the rest). */
static int walk_node(struct zk_walk *w, struct gw_err *err, const char *path, int64_t now_ms)
{
	struct zk_node *n = zk_tree_put(&w->tree, path);
	if (!n)
		return oom(w, err, path);
	int rc = read_data(w, err, path, now_ms);
	if (rc == 0)
		rc = read_children(w, err, n, now_ms);
	if (rc == 1) {
		int g = gone(w, err, path, now_ms);
		if (g < 0)
			return -1;
		if (g == 1)
			return walk_node(w, err, path, now_ms);
		return 0;
	}
	return rc;
}

/* A group directory: walk it, or watch for it while it is missing. */
static int walk_dir(struct zk_walk *w, struct gw_err *err, enum gw_group g, int64_t now_ms)
{
	w->missing &= ~(1u << g);
	return walk_node(w, err, w->layout->dirs[g], now_ms);
}

int zk_walk_full(struct zk_walk *w, struct gw_err *err, enum kv_full_kind kind, int64_t now_ms)
{
	if (kv_mirror_full_begin(w->mirror) != 0)
		return oom(w, err, "(full read)");
	/* the table starts again: every node is read anew and its watches re-armed (the
	 * library keeps one watch per path, so re-arming adds none) */
	zk_tree_free(&w->tree);
	zk_tree_init(&w->tree);
	w->missing = 0;
	w->full = 1;
	int rc = 0;
	for (size_t i = 0; i < w->layout->n_groups && rc == 0; i++)
		rc = walk_dir(w, err, w->layout->groups[i], now_ms);
	w->full = 0;
	if (rc != 0) {
		kv_mirror_full_abort(w->mirror);
		return -1;
	}
	int n = kv_mirror_full_end(w->mirror, kind, now_ms);
	if (n < 0)
		return oom(w, err, "(full read)");
	return n;
}

int zk_walk_event(struct zk_walk *w, struct gw_err *err, const struct zk_event *e, int64_t now_ms)
{
	const char *path = e->path;
	struct zk_node *n = zk_tree_get(&w->tree, path);
	int g = dir_group(w, path);
	if (e->type == ZOO_DELETED_EVENT) {
		int r = gone(w, err, path, now_ms);
		if (r < 0 || (g >= 0 && r == 0))
			return r; /* a group directory missing now is watched for its return */
		/* The node watched is gone, but a node created since at the same path may
		 * already have been listed by a child event queued before this one, and not
		 * walked then because the old node was still in the table: read the path
		 * again. If it is absent, that read sets no watch and changes nothing. */
		return walk_node(w, err, path, now_ms);
	}
	if (e->type == ZOO_CREATED_EVENT) {
		/* only missing group directories are watched for creation */
		if (g >= 0 && !n)
			return walk_dir(w, err, (enum gw_group)g, now_ms);
		return 0;
	}
	if (!n)
		return 0; /* a node forgotten since (deleted): its parent's watch covers it */
	int rc;
	if (e->type == ZOO_CHANGED_EVENT)
		rc = read_data(w, err, path, now_ms);
	else if (e->type == ZOO_CHILD_EVENT)
		rc = read_children(w, err, n, now_ms);
	else
		return 0;
	if (rc == 1) {
		int r = gone(w, err, path, now_ms);
		return r == 1 ? walk_node(w, err, path, now_ms) : r;
	}
	return rc;
}

uint64_t zk_walk_watches(const struct zk_walk *w)
{
	uint64_t n = zk_tree_count(&w->tree);
	for (unsigned m = w->missing; m; m &= m - 1)
		n++;
	return n;
}
