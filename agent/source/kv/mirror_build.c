/*
 * Building a group's version from the mirror (see mirror.h). A settled group is patched:
 * each changed node is found among the held version's nodes (mirror_order.c) and becomes an
 * insert, a replace or a removal of the held version (model/edit.h), so a one-node change
 * among 100,000 parses one value, never the group. A group is read whole (all its item
 * nodes, in path order) when the held version is not the one the mirror built (start-up, a
 * version from the snapshot, an offer refused), and always for PLUGIN, whose ghosts are
 * kept out (mirror_ghosts.c). Either way a store state gives one version: its items in path
 * order, ghosts left out, identified by the set of items (model/digest.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "model/patch.h"
#include "shared/strbuf.h"
#include "source/kv/mirror_state.h"

/* "[v1,v2,...]" of the nodes' values; NULL on out of memory. */
static char *values_text(struct kv_node *const *v, size_t n, size_t *len)
{
	struct strbuf b = {0};
	size_t need = 3;
	for (size_t i = 0; i < n; i++)
		need += v[i]->value_len + 1;
	strbuf_reserve(&b, need);
	strbuf_add(&b, "[", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_add(&b, ",", 1);
		strbuf_add(&b, v[i]->value, v[i]->value_len);
	}
	strbuf_add(&b, "]", 1);
	*len = b.len;
	return strbuf_finish(&b);
}

/* A refused build: name the first node whose value is not one valid item, or say why the
 * whole list was refused (two nodes holding one key). */
static void log_refused(struct kv_mirror *m, enum gw_group g, struct kv_node *const *v, size_t n,
                        const struct gw_err *whole)
{
	const char *name = gw_group_name(g);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		char *text = values_text(&v[i], 1, &len);
		if (!text)
			break;
		struct group_data *one = NULL;
		struct gw_err err = {0};
		int rc = model_parse_items(g, text, len, m->server, NULL, &one, &err);
		free(text);
		group_data_unref(one);
		if (rc != 0) {
			LOG_W(m->a.log, m->type,
			      "refused %s: %s: %s; keeping the last good version", name, v[i]->path,
			      err.msg);
			goto counted;
		}
	}
	LOG_W(m->a.log, m->type, "refused %s: %s; keeping the last good version", name, whole->msg);
counted:
	pthread_mutex_lock(&m->stats_mu);
	m->stats.refused++;
	pthread_mutex_unlock(&m->stats_mu);
}

/* Offer gd (stamped): 1 if the ingest took it. The mirror keeps a reference as its base
 * then; otherwise the next build reads the whole group. */
static int offer(struct kv_mirror *m, enum gw_group g, struct group_data *gd)
{
	struct gstate *s = &m->gs[g];
	struct group_data *versions[GW_GROUP_COUNT] = {0};
	versions[g] = group_data_ref(gd);
	int older = 0;
	size_t accepted =
	    ingest_offer(m->a.ingest, m->server, ingest_accept_patched, &g, 1, versions, &older);
	group_data_unref(s->base);
	s->base = NULL;
	if (accepted) {
		s->base = gd;
		pthread_mutex_lock(&m->stats_mu);
		m->stats.versions++;
		m->stats.last_version_ms = gw_wall_ms();
		pthread_mutex_unlock(&m->stats_mu);
	} else {
		group_data_unref(gd);
	}
	return accepted ? 1 : 0;
}

/* The held version (the base) patched with the group's changed nodes. 1 accepted, 0 not
 * (nothing changed, or refused: the changes stay listed for the next build), -1 out of
 * memory. */
static int build_patch(struct kv_mirror *m, enum gw_group g, struct group_data *held, int force)
{
	struct gstate *s = &m->gs[g];
	size_t nd = s->n_dirty, nl = 0, nc = 0, j = 0;
	struct kv_node **d = malloc((nd ? nd : 1) * sizeof *d);
	struct kv_node **live = malloc((nd ? nd : 1) * sizeof *live);
	struct change *ch = malloc((nd ? nd : 1) * sizeof *ch);
	struct edit *e = malloc((nd ? nd : 1) * sizeof *e);
	struct group_data *ups = NULL, *gd = NULL;
	struct gw_err err = {0};
	char *text = NULL;
	int rc = -1;
	if (!d || !live || !ch || !e)
		goto out;
	size_t k = 0;
	for (struct kv_node *n = s->dirty; n; n = n->dirty)
		d[k++] = n;
	qsort(d, nd, sizeof *d, kv_node_cmp);
	for (size_t i = 0; i < nd; i++)
		if (!d[i]->dead)
			live[nl++] = d[i];
	size_t len;
	if (!(text = values_text(live, nl, &len)))
		goto out;
	if (model_parse_items(g, text, len, m->server, held, &ups, &err) != 0) {
		log_refused(m, g, live, nl, &err);
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < nd; i++) {
		int found;
		size_t r = kv_mirror_order_rank(s, d[i], &found);
		const struct gd_item *it = d[i]->dead ? NULL : &ups->items[j++];
		if (found && !it)
			ch[nc++] = (struct change){{r, EDIT_REMOVE, NULL}, d[i]};
		else if (found && !gd_same_json(&held->items[r], it))
			ch[nc++] = (struct change){{r, EDIT_REPLACE, it}, d[i]};
		else if (!found && it)
			ch[nc++] = (struct change){{r, EDIT_INSERT, it}, d[i]};
	}
	if (!nc && !force) {
		kv_mirror_dirty_clear(m, g);
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < nc; i++)
		e[i] = ch[i].e;
	if (model_edit(held, ups, e, nc, &gd, &err) != 0) {
		log_refused(m, g, live, nl, &err);
		rc = 0;
		goto out;
	}
	model_stamp(gd, held, m->server, gw_wall_ms());
	gd->received_us = ups->received_us;
	struct kv_node **fresh;
	size_t n_old = held->n_items, n_new = gd->n_items;
	if (kv_mirror_order_prepare(s, ch, nc, n_new, &fresh) != 0)
		goto out;
	rc = offer(m, g, gd);
	gd = NULL;
	if (rc && fresh) {
		free(s->order);
		s->order = fresh;
		s->order_cap = n_new;
	} else if (rc) {
		kv_mirror_order_apply(s, ch, nc, n_old);
	} else {
		free(fresh);
		kv_mirror_forget_base(s); /* refused: read whole next time */
	}
	kv_mirror_dirty_clear(m, g);
out:
	free(d);
	free(live);
	free(ch);
	free(e);
	free(text);
	group_data_unref(ups);
	group_data_unref(gd);
	return rc;
}

/* The group's item nodes: what the base, its ghosts and its changes name (when the held
 * version is the base), else a scan of the table. Live ones only, in path order. *n set;
 * NULL on out of memory. */
static struct kv_node **group_nodes(struct kv_mirror *m, int g, int known, size_t *n)
{
	struct gstate *s = &m->gs[g];
	struct kv_table *t = &m->cur;
	size_t cap = known ? s->base->n_items + s->n_ghosts + s->n_dirty : t->n, k = 0;
	struct kv_node **v = malloc((cap ? cap : 1) * sizeof *v);
	if (!v)
		return NULL;
	if (known) {
		for (struct kv_node *x = s->dirty; x; x = x->dirty)
			if (!x->dead)
				v[k++] = x;
		for (size_t i = 0; i < s->base->n_items; i++)
			if (!s->order[i]->is_dirty)
				v[k++] = s->order[i];
		for (size_t i = 0; i < s->n_ghosts; i++)
			if (!s->ghosts[i]->is_dirty)
				v[k++] = s->ghosts[i];
	} else {
		size_t i = 0;
		for (struct kv_node *x = kv_table_next(t, &i, NULL); x; x = kv_table_next(t, &i, x))
			if (x->group == g && !x->dead)
				v[k++] = x;
	}
	qsort(v, k, sizeof *v, kv_node_cmp);
	*n = k;
	return v;
}

/* The group read whole from its nodes. 1 accepted, 0 not (nothing changed, or refused),
 * -1 out of memory. */
static int build_whole(struct kv_mirror *m, enum gw_group g, struct group_data *held, int force)
{
	struct gstate *s = &m->gs[g];
	int known = s->base && s->base == held, rc = -1;
	size_t n = 0, len = 0, nw, ng;
	struct kv_node **nodes = group_nodes(m, (int)g, known, &n), **win = NULL, **ghosts = NULL;
	struct group_data *all = NULL, *list = NULL, *gd = NULL;
	struct gw_err err = {0};
	char *text = nodes ? values_text(nodes, n, &len) : NULL;
	if (!text)
		goto out;
	pthread_mutex_lock(&m->stats_mu);
	m->stats.whole_reads++;
	pthread_mutex_unlock(&m->stats_mu);
	if (model_parse_items(g, text, len, m->server, held, &all, &err) != 0) {
		log_refused(m, g, nodes, n, &err);
		rc = 0;
		goto out;
	}
	win = malloc((n ? n : 1) * sizeof *win);
	ghosts = malloc((n ? n : 1) * sizeof *ghosts);
	if (!win || !ghosts ||
	    kv_mirror_drop_ghosts(g, all, nodes, win, &nw, ghosts, &ng, &list, &err) != 0)
		goto out;
	if (!force && held && model_same_items(held, list)) {
		/* nothing to offer: the held version is the base, its nodes found by key */
		struct kv_node **order = malloc((nw ? nw : 1) * sizeof *order);
		if (!order)
			goto out;
		for (size_t i = 0; i < held->n_items; i++) {
			int found;
			size_t r = group_data_rank_item(list, &held->items[i], &found);
			order[i] = win[group_data_at(list, r)];
		}
		group_data_unref(s->base);
		s->base = group_data_ref(held);
		free(s->order);
		s->order = order;
		s->order_cap = nw ? nw : 1;
		rc = 0;
	} else {
		if (model_whole(g, held, list, &gd, &err) != 0)
			goto out;
		model_stamp(gd, held, m->server, gw_wall_ms());
		gd->received_us = all->received_us;
		rc = offer(m, g, gd);
		gd = NULL;
		free(s->order);
		s->order = rc ? win : NULL;
		s->order_cap = rc ? (n ? n : 1) : 0;
		if (rc)
			win = NULL;
	}
	free(s->ghosts);
	s->ghosts = ghosts;
	s->n_ghosts = ng;
	ghosts = NULL;
	if (!s->base)
		kv_mirror_forget_base(s); /* the offer was refused: read whole next time */
	kv_mirror_dirty_clear(m, (int)g);
out:
	free(nodes);
	free(text);
	free(win);
	free(ghosts);
	group_data_unref(all);
	group_data_unref(list);
	group_data_unref(gd);
	return rc;
}

/* Build group g from the mirror and offer it. force: offer even if equal to what is held.
 * 1 accepted, 0 not, -1 out of memory. */
int kv_mirror_build(struct kv_mirror *m, enum gw_group g, int force)
{
	struct group_data *held = ingest_held(m->a.ingest, g);
	struct gstate *s = &m->gs[g];
	force = force || (held && held->provisional);
	int rc = !kv_mirror_alias_group(g) && s->base && held == s->base
	             ? build_patch(m, g, held, force)
	             : build_whole(m, g, held, force);
	group_data_unref(held);
	return rc;
}
