/*
 * Full reads (see mirror.h): start-up, a new ZooKeeper session, an etcd watch lost to
 * compaction, the anti-entropy resync. What was read replaces the mirror: only the
 * differences are applied, as events, and built at once, so a resync that finds nothing
 * builds nothing; at a resync every difference is a repair (logged naming the group and
 * paths, counted).
 */
#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"
#include "source/kv/mirror_state.h"

#define REPAIR_PATHS_MAX 5

int kv_mirror_full_begin(struct kv_mirror *m)
{
	kv_table_clear(&m->staging);
	m->staging_active = 1;
	return 0;
}

int kv_mirror_full_put(struct kv_mirror *m, const char *path, size_t path_len, const char *value,
                       size_t value_len, int64_t rev)
{
	int g = kv_layout_group_of(m->a.layout, path, path_len);
	if (g < 0 || !m->staging_active)
		return 0;
	struct kv_node *n;
	return kv_table_set(&m->staging, g, path, path_len, value, value_len, rev, 0, &n) < 0 ? -1
	                                                                                      : 0;
}

void kv_mirror_full_abort(struct kv_mirror *m)
{
	kv_table_clear(&m->staging);
	m->staging_active = 0;
}

/* The paths that differ between a and b in group g (added, removed or changed), up to
 * REPAIR_PATHS_MAX of them named in `names`; returns how many differ. */
static size_t differences(struct kv_table *a, struct kv_table *b, int g, struct strbuf *names)
{
	size_t diff = 0;
	struct kv_table *pair[2][2] = {{a, b}, {b, a}};
	for (int side = 0; side < 2; side++) {
		struct kv_table *x = pair[side][0], *y = pair[side][1];
		size_t i = 0;
		for (const struct kv_node *n = kv_table_next(x, &i, NULL); n;
		     n = kv_table_next(x, &i, n)) {
			if (n->group != g || n->dead)
				continue;
			const struct kv_node *o = kv_table_live(y, n->path, n->path_len);
			/* a changed node is counted once, from the first side */
			if (o && (side == 1 || (o->value_len == n->value_len &&
			                        memcmp(o->value, n->value, n->value_len) == 0)))
				continue;
			if (diff < REPAIR_PATHS_MAX)
				strbuf_addf(names, "%s%s", diff ? ", " : "", n->path);
			diff++;
		}
	}
	return diff;
}

/* What was read replaces the current table: as events (the differences only), or, into an
 * empty table, the read table itself. 0 or -1 (out of memory). */
static int take_read(struct kv_mirror *m, int64_t now_ms)
{
	struct kv_table *cur = &m->cur, *read = &m->staging;
	if (cur->n == 0 && cur->n_dead == 0) {
		kv_table_clear(cur);
		*cur = *read;
		memset(read, 0, sizeof *read);
		for (int g = 0; g < GW_GROUP_COUNT; g++)
			kv_mirror_forget_base(&m->gs[g]); /* nothing listed: read whole next */
		return 0;
	}
	size_t i = 0;
	for (const struct kv_node *r = kv_table_next(read, &i, NULL); r;
	     r = kv_table_next(read, &i, r)) {
		struct kv_node *n;
		int rc = kv_table_set(cur, r->group, r->path, r->path_len, r->value, r->value_len,
		                      r->rev, 1, &n);
		if (rc < 0)
			return -1;
		kv_mirror_changed(m, rc, n, now_ms);
	}
	for (struct kv_node *n = kv_table_next(cur, &i, NULL); n; n = kv_table_next(cur, &i, n))
		if (!n->dead && !kv_table_live(read, n->path, n->path_len))
			kv_mirror_kill(m, n, now_ms);
	kv_table_clear(read);
	return 0;
}

int kv_mirror_full_end(struct kv_mirror *m, enum kv_full_kind kind, int64_t now_ms)
{
	if (!m->staging_active)
		return 0;
	const struct kv_layout *l = m->a.layout;
	int differs[GW_GROUP_COUNT] = {0};
	for (size_t i = 0; i < l->n_groups; i++) {
		int g = (int)l->groups[i];
		struct strbuf names = {0};
		size_t diff = differences(&m->cur, &m->staging, g, &names);
		char *text = strbuf_finish(&names);
		differs[g] = diff > 0;
		if (diff && kind == KV_FULL_RESYNC)
			LOG_W(m->a.log, m->type, "resync repaired %s: %zu difference(s) (%s%s)",
			      gw_group_name((enum gw_group)g), diff, text ? text : "",
			      diff > REPAIR_PATHS_MAX ? ", ..." : "");
		else if (diff && kind == KV_FULL_RECOVER)
			LOG_I(m->a.log, m->type, "re-read %s: %zu change(s) made while away (%s%s)",
			      gw_group_name((enum gw_group)g), diff, text ? text : "",
			      diff > REPAIR_PATHS_MAX ? ", ..." : "");
		free(text);
	}
	int rc = take_read(m, now_ms);
	m->staging_active = 0;
	kv_table_clear(&m->staging);
	pthread_mutex_lock(&m->stats_mu);
	m->stats.nodes = m->cur.n;
	pthread_mutex_unlock(&m->stats_mu);
	if (rc < 0)
		return -1;

	int accepted = 0;
	for (size_t i = 0; i < l->n_groups; i++) {
		enum gw_group g = l->groups[i];
		struct gstate *s = &m->gs[g];
		/* at start every group is built, so each has a version even if empty; later a
		 * group pending its settle window is built now too (the read is newer) */
		if (kind != KV_FULL_START && !differs[g] && !s->due && !s->n_dirty)
			continue;
		s->due = 0;
		int built = kv_mirror_build(m, g, 0);
		if (built < 0) {
			kv_mirror_mark_due(m, (int)g, now_ms);
			continue;
		}
		accepted += built;
		if (built > 0 && kind == KV_FULL_RESYNC && differs[g]) {
			pthread_mutex_lock(&m->stats_mu);
			m->stats.repairs++;
			pthread_mutex_unlock(&m->stats_mu);
		}
	}
	return accepted;
}
