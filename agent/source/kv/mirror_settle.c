/*
 * When a changed group is built (see mirror.h): once its events have settled, no event for
 * `settle`, and never later than SETTLE_CEILING x settle after the first, so a REFRESH (a
 * subtree deleted, every item written again) is one version and a store written without
 * pause is still delivered. The transport sleeps until kv_mirror_deadline() or its next
 * event, never on a timer of its own.
 */
#include "source/kv/mirror_state.h"

/* a group's deadline never moves past first event + CEILING x settle, so a store written
 * without pause is still delivered; high, because a large REFRESH (an admin writing
 * thousands of nodes one by one) must not be delivered half done */
#define SETTLE_CEILING 100

void kv_mirror_mark_due(struct kv_mirror *m, int g, int64_t now_ms)
{
	struct gstate *s = &m->gs[g];
	if (!s->due) {
		s->due = 1;
		s->first_ms = now_ms;
	}
	s->last_ms = now_ms;
}

static int64_t group_deadline(const struct kv_mirror *m, int g)
{
	const struct gstate *s = &m->gs[g];
	int64_t quiet = s->last_ms + m->a.settle_ms;
	int64_t ceiling = s->first_ms + SETTLE_CEILING * m->a.settle_ms;
	return quiet < ceiling ? quiet : ceiling;
}

int64_t kv_mirror_deadline(const struct kv_mirror *m)
{
	int64_t best = -1;
	for (size_t i = 0; i < m->a.layout->n_groups; i++) {
		int g = (int)m->a.layout->groups[i];
		if (!m->gs[g].due)
			continue;
		int64_t d = group_deadline(m, g);
		if (best < 0 || d < best)
			best = d;
	}
	return best;
}

int kv_mirror_flush(struct kv_mirror *m, int64_t now_ms, int force)
{
	int accepted = 0;
	for (size_t i = 0; i < m->a.layout->n_groups; i++) {
		enum gw_group g = m->a.layout->groups[i];
		struct gstate *s = &m->gs[g];
		if (!s->due || (!force && group_deadline(m, (int)g) > now_ms))
			continue;
		s->due = 0;
		int rc = kv_mirror_build(m, g, 0);
		if (rc < 0) {
			kv_mirror_mark_due(
			    m, (int)g, now_ms); /* out of memory: try again at the next deadline */
			continue;
		}
		accepted += rc;
	}
	return accepted;
}
