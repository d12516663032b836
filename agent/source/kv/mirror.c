/*
 * The mirror of a path store (see mirror.h; its parts, one concern each, in mirror_state.h):
 * its life, the node events, which only change the table and list their node as changed in
 * its group, and the stats. Everything else waits for the group to settle
 * (mirror_settle.c) and is built then (mirror_build.c).
 */
#include "source/kv/mirror.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "source/kv/mirror_state.h"

struct kv_mirror *kv_mirror_new(const struct kv_mirror_args *a, struct gw_err *err)
{
	struct kv_mirror *m = calloc(1, sizeof *m);
	if (!m || !(m->type = strdup(a->type)) || !(m->server = strdup(a->server))) {
		if (m)
			free(m->type);
		free(m);
		gw_errf(err, "%s: out of memory", a->type);
		return NULL;
	}
	m->a = *a;
	m->a.type = m->type;
	m->a.server = m->server;
	if (m->a.settle_ms < 1)
		m->a.settle_ms = 1;
	pthread_mutex_init(&m->stats_mu, NULL);
	return m;
}

void kv_mirror_forget_base(struct gstate *s)
{
	group_data_unref(s->base);
	s->base = NULL;
	free(s->order);
	s->order = NULL;
	s->order_cap = 0;
	free(s->ghosts);
	s->ghosts = NULL;
	s->n_ghosts = 0;
}

void kv_mirror_free(struct kv_mirror *m)
{
	if (!m)
		return;
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		kv_mirror_forget_base(&m->gs[g]);
	kv_table_clear(&m->cur);
	kv_table_clear(&m->staging);
	pthread_mutex_destroy(&m->stats_mu);
	free(m->type);
	free(m->server);
	free(m);
}

static void dirty_add(struct kv_mirror *m, struct kv_node *n)
{
	if (n->is_dirty)
		return;
	struct gstate *s = &m->gs[n->group];
	n->is_dirty = 1;
	n->dirty = s->dirty;
	s->dirty = n;
	s->n_dirty++;
}

/* The group's changes are in its version now: empty its list, free its tombstones. */
void kv_mirror_dirty_clear(struct kv_mirror *m, int g)
{
	struct gstate *s = &m->gs[g];
	struct kv_node *n = s->dirty;
	while (n) {
		struct kv_node *next = n->dirty;
		n->is_dirty = 0;
		n->dirty = NULL;
		if (n->dead)
			kv_table_drop(&m->cur, n);
		n = next;
	}
	s->dirty = NULL;
	s->n_dirty = 0;
}

static void count_event(struct kv_mirror *m)
{
	pthread_mutex_lock(&m->stats_mu);
	m->stats.events++;
	m->stats.last_event_ms = gw_wall_ms();
	m->stats.nodes = m->cur.n;
	pthread_mutex_unlock(&m->stats_mu);
}

/* A node of the current table changed (kv_table_set's answer rc): list it, set the
 * group's deadline. A new revision of the same bytes matters only where revisions decide
 * (PLUGIN). Returns 1 if the mirror changed, 0 if not, -1 on out of memory. */
int kv_mirror_changed(struct kv_mirror *m, int rc, struct kv_node *n, int64_t now_ms)
{
	if (rc == 2)
		rc = kv_mirror_alias_group(n->group);
	if (rc > 0) {
		dirty_add(m, n);
		kv_mirror_mark_due(m, n->group, now_ms);
	}
	return rc;
}

int kv_mirror_put(struct kv_mirror *m, const char *path, size_t path_len, const char *value,
                  size_t value_len, int64_t rev, int64_t now_ms)
{
	int g = kv_layout_group_of(m->a.layout, path, path_len);
	if (g < 0)
		return 0;
	struct kv_node *n;
	int rc = kv_table_set(&m->cur, g, path, path_len, value, value_len, rev, 1, &n);
	rc = rc < 0 ? rc : kv_mirror_changed(m, rc, n, now_ms);
	if (rc > 0)
		count_event(m);
	return rc;
}

int kv_mirror_delete(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms)
{
	return kv_mirror_put(m, path, path_len, NULL, 0, 0, now_ms);
}

void kv_mirror_kill(struct kv_mirror *m, struct kv_node *n, int64_t now_ms)
{
	kv_table_kill(&m->cur, n);
	dirty_add(m, n);
	kv_mirror_mark_due(m, n->group, now_ms);
}

int kv_mirror_delete_tree(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms)
{
	struct kv_table *t = &m->cur;
	int any = 0;
	/* the node itself by its hash; the table is scanned only when nodes lie below it */
	struct kv_node *self = kv_table_find(t, path, path_len);
	if (self && !self->dead) {
		kv_mirror_kill(m, self, now_ms);
		any = 1;
	}
	size_t below = kv_table_below(t, path, path_len);
	size_t i = 0;
	for (struct kv_node *n = below ? kv_table_next(t, &i, NULL) : NULL; n && below;
	     n = kv_table_next(t, &i, n)) {
		int under = !n->dead && n->path_len > path_len &&
		            memcmp(n->path, path, path_len) == 0 && n->path[path_len] == '/';
		if (!under)
			continue;
		kv_mirror_kill(m, n, now_ms);
		below--;
		any = 1;
	}
	if (any)
		count_event(m);
	return any;
}

void kv_mirror_stats(struct kv_mirror *m, struct kv_mirror_stats *out)
{
	pthread_mutex_lock(&m->stats_mu);
	*out = m->stats;
	pthread_mutex_unlock(&m->stats_mu);
}
