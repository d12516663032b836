/*
 * The mirror of a path store (see mirror.h). Nodes live in a table keyed by path
 * (table.h). Each group keeps the version it last built and, beside it, the node of each
 * of its items in the same order (path order), plus the list of its nodes changed since
 * (deletions stay as tombstones until then). A settled group is patched: each changed node
 * is found among those nodes by a binary search on its path and becomes an insert, a
 * replace or a removal of the held version (model/edit.h), so a one-node change among
 * 100,000 parses one value, never the group. The nodes beside the held version are edited
 * where they stand, not copied per version: a replaced node keeps its place (one node per
 * path), a few inserted or removed ones move the rest (a REFRESH's many are rebuilt in one
 * pass).
 *
 * A group is read whole (all its item nodes, in path order) when the held version is not
 * the one the mirror built (start-up, a version from the snapshot, an offer refused), and
 * always for PLUGIN: a plugin renamed in the admin is written under its new name while the
 * old node stays, holding the same id, and of the nodes holding one id only the newest
 * (highest revision) is the plugin; the others are ghosts, kept out of the version. The
 * plugin list is tens of items. Full reads compare what was read with the table and apply
 * only the differences, as events, so a resync that finds nothing builds nothing.
 *
 * Either way a store state gives one version: its items in path order, ghosts left out,
 * identified by the set of items (model/digest.h).
 */
#include "source/kv/mirror.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "shared/strbuf.h"
#include "model/edit.h"
#include "model/groups.h"
#include "model/keys.h"
#include "model/patch.h"
#include "source/kv/table.h"

/* a group's deadline never moves past first event + CEILING x settle, so a store written
 * without pause is still delivered; high, because a large REFRESH (an admin writing
 * thousands of nodes one by one) must not be delivered half done */
#define SETTLE_CEILING   100
#define REPAIR_PATHS_MAX 5

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
static int alias_group(int g)
{
	return g == GW_GROUP_PLUGIN;
}

/* ---------------------------------------------------------------- life */

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

static void forget_base(struct gstate *s)
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
		forget_base(&m->gs[g]);
	kv_table_clear(&m->cur);
	kv_table_clear(&m->staging);
	pthread_mutex_destroy(&m->stats_mu);
	free(m->type);
	free(m->server);
	free(m);
}

static void mark_due(struct kv_mirror *m, int g, int64_t now_ms)
{
	struct gstate *s = &m->gs[g];
	if (!s->due) {
		s->due = 1;
		s->first_ms = now_ms;
	}
	s->last_ms = now_ms;
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
static void dirty_clear(struct kv_mirror *m, int g)
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

/* ---------------------------------------------------------------- events */

/* A node of the current table changed (kv_table_set's answer rc): list it, set the
 * group's deadline. A new revision of the same bytes matters only where revisions decide
 * (PLUGIN). Returns 1 if the mirror changed, 0 if not, -1 on out of memory. */
static int changed(struct kv_mirror *m, int rc, struct kv_node *n, int64_t now_ms)
{
	if (rc == 2)
		rc = alias_group(n->group);
	if (rc > 0) {
		dirty_add(m, n);
		mark_due(m, n->group, now_ms);
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
	rc = rc < 0 ? rc : changed(m, rc, n, now_ms);
	if (rc > 0)
		count_event(m);
	return rc;
}

int kv_mirror_delete(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms)
{
	return kv_mirror_put(m, path, path_len, NULL, 0, 0, now_ms);
}

static void kill(struct kv_mirror *m, struct kv_node *n, int64_t now_ms)
{
	kv_table_kill(&m->cur, n);
	dirty_add(m, n);
	mark_due(m, n->group, now_ms);
}

int kv_mirror_delete_tree(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms)
{
	struct kv_table *t = &m->cur;
	int any = 0;
	/* the node itself by its hash; the table is scanned only when nodes lie below it */
	struct kv_node *self = kv_table_find(t, path, path_len);
	if (self && !self->dead) {
		kill(m, self, now_ms);
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
		kill(m, n, now_ms);
		below--;
		any = 1;
	}
	if (any)
		count_event(m);
	return any;
}

/* ---------------------------------------------------------------- building versions */

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

static int same_json(const struct gw_item *a, const struct gw_item *b)
{
	return a->json == b->json ||
	       (a->json_len == b->json_len && memcmp(a->json, b->json, a->json_len) == 0);
}

/* Where node n is (found) or would go among the base's nodes. */
static size_t order_rank(const struct gstate *s, const struct kv_node *n, int *found)
{
	size_t lo = 0, hi = s->base ? s->base->n_items : 0;
	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = kv_node_cmp(&s->order[mid], &n);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* One changed node as an edit of the held version. */
struct change {
	struct edit e;
	struct kv_node *node;
};

/* Edits that insert or remove a node: up to this many are made in place, each moving the
 * tail of the order (a memmove, no allocation); more (a REFRESH) rebuild it in one pass. */
#define ORDER_SHIFTS_MAX 16

/* The base's nodes after the changes (in the edits' order), for the version they made: a
 * new array, in one pass over the old. NULL on out of memory. */
static struct kv_node **order_after(const struct gstate *s, const struct change *ch, size_t nc,
                                    size_t n_new)
{
	struct kv_node **v = malloc((n_new ? n_new : 1) * sizeof *v);
	size_t n_old = s->base->n_items, pos = 0, k = 0;
	if (!v)
		return NULL;
	for (size_t c = 0; c <= nc; c++) {
		size_t upto = c < nc ? ch[c].e.at : n_old;
		memcpy(&v[k], &s->order[pos], (upto - pos) * sizeof *v);
		k += upto - pos;
		pos = upto;
		if (c == nc)
			break;
		if (ch[c].e.op != EDIT_REMOVE)
			v[k++] = ch[c].node;
		if (ch[c].e.op != EDIT_INSERT)
			pos++;
	}
	return v;
}

/* How many of the changes insert (ins) and remove (rem) a node. */
static void order_shifts(const struct change *ch, size_t nc, size_t *ins, size_t *rem)
{
	*ins = *rem = 0;
	for (size_t c = 0; c < nc; c++) {
		*ins += ch[c].e.op == EDIT_INSERT;
		*rem += ch[c].e.op == EDIT_REMOVE;
	}
}

/* Make room for the base's order after the changes, before the version is offered, so that
 * applying them (order_apply) cannot fail: in place when few insert or remove (the order
 * grown if needed to hold the base's nodes and every inserted one, as it does midway; a
 * one-node change among 100,000 then copies nothing), else a new array in *fresh. 0 or -1
 * (out of memory). */
static int order_prepare(struct gstate *s, const struct change *ch, size_t nc, size_t n_new,
                         struct kv_node ***fresh)
{
	size_t ins, rem, need;
	*fresh = NULL;
	order_shifts(ch, nc, &ins, &rem);
	if (ins + rem > ORDER_SHIFTS_MAX)
		return (*fresh = order_after(s, ch, nc, n_new)) ? 0 : -1;
	need = s->base->n_items + ins;
	if (need <= s->order_cap)
		return 0;
	size_t cap = s->order_cap + s->order_cap / 2;
	if (cap < need)
		cap = need;
	struct kv_node **v = realloc(s->order, cap * sizeof *v);
	if (!v)
		return -1;
	s->order = v;
	s->order_cap = cap;
	return 0;
}

/* The changes made to the base's order (its room made by order_prepare): a replaced node
 * keeps its place (one node per path: it is the same node), an inserted or removed one
 * moves the tail. The last edit first, so the positions the earlier ones name still hold
 * (edits at one position go in as listed: the one applied last lands first). */
static void order_apply(struct gstate *s, const struct change *ch, size_t nc, size_t n_old)
{
	size_t len = n_old;
	for (size_t c = nc; c-- > 0;) {
		size_t at = ch[c].e.at;
		if (ch[c].e.op == EDIT_REPLACE) {
			s->order[at] = ch[c].node;
		} else if (ch[c].e.op == EDIT_INSERT) {
			memmove(&s->order[at + 1], &s->order[at], (len - at) * sizeof *s->order);
			s->order[at] = ch[c].node;
			len++;
		} else {
			memmove(&s->order[at], &s->order[at + 1],
			        (len - at - 1) * sizeof *s->order);
			len--;
		}
	}
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
		size_t r = order_rank(s, d[i], &found);
		const struct gw_item *it = d[i]->dead ? NULL : ups->items[j++];
		if (found && !it)
			ch[nc++] = (struct change){{r, EDIT_REMOVE, NULL}, d[i]};
		else if (found && !same_json(held->items[r], it))
			ch[nc++] = (struct change){{r, EDIT_REPLACE, it}, d[i]};
		else if (!found && it)
			ch[nc++] = (struct change){{r, EDIT_INSERT, it}, d[i]};
	}
	if (!nc && !force) {
		dirty_clear(m, g);
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
	if (order_prepare(s, ch, nc, n_new, &fresh) != 0)
		goto out;
	rc = offer(m, g, gd);
	gd = NULL;
	if (rc && fresh) {
		free(s->order);
		s->order = fresh;
		s->order_cap = n_new;
	} else if (rc) {
		order_apply(s, ch, nc, n_old);
	} else {
		free(fresh);
		forget_base(s); /* refused: read whole next time */
	}
	dirty_clear(m, g);
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

/* An item with an alias and where it is. */
struct aliased {
	const char *id;
	size_t i;
};

static int cmp_aliased(const void *a, const void *b)
{
	const struct aliased *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Of the items holding one plugin id, all but the newest (the highest revision, then the
 * last path) are ghosts: their positions in all (nodes[i] holds all's item i) are marked
 * in ghost[]. Returns how many, or -1 on out of memory. */
static long find_ghosts(const struct group_data *all, struct kv_node *const *nodes, uint8_t *ghost)
{
	size_t n = all->n_items, na = 0;
	long found = 0;
	struct aliased *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const char *id = key_alias(all->items[i]);
		if (id)
			v[na++] = (struct aliased){id, i};
	}
	qsort(v, na, sizeof *v, cmp_aliased);
	for (size_t a = 0; a < na;) {
		size_t b = a + 1, best = a;
		for (; b < na && strcmp(v[b].id, v[a].id) == 0; b++)
			if (nodes[v[b].i]->rev >= nodes[v[best].i]->rev)
				best = b; /* equal revisions: the later path */
		for (size_t k = a; k < b; k++)
			if (k != best) {
				ghost[v[k].i] = 1;
				found++;
			}
		a = b;
	}
	free(v);
	return found;
}

/* The group without its ghosts (PLUGIN): *list is `all` less the items hidden by a newer
 * one with their id; win[] and ghosts[] get the nodes of each (nodes[i] holds all's item
 * i). 0 or -1 (out of memory). */
static int drop_ghosts(enum gw_group g, struct group_data *all, struct kv_node *const *nodes,
                       struct kv_node **win, size_t *nw, struct kv_node **ghosts, size_t *ng,
                       struct group_data **list, struct gw_err *err)
{
	size_t n = all->n_items, ne = 0;
	uint8_t *ghost = calloc(n ? n : 1, 1);
	struct edit *e = malloc((n ? n : 1) * sizeof *e);
	int rc = -1;
	*nw = *ng = 0;
	if (!ghost || !e || (alias_group(g) && find_ghosts(all, nodes, ghost) < 0))
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (ghost[i]) {
			ghosts[(*ng)++] = nodes[i];
			e[ne++] = (struct edit){i, EDIT_REMOVE, NULL};
		} else {
			win[(*nw)++] = nodes[i];
		}
	}
	if (!ne)
		*list = group_data_ref(all);
	else if (model_edit(all, NULL, e, ne, list, err) != 0)
		goto out;
	rc = 0;
out:
	free(ghost);
	free(e);
	return rc;
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
	if (!win || !ghosts || drop_ghosts(g, all, nodes, win, &nw, ghosts, &ng, &list, &err) != 0)
		goto out;
	if (!force && held && model_same_items(held, list)) {
		/* nothing to offer: the held version is the base, its nodes found by key */
		struct kv_node **order = malloc((nw ? nw : 1) * sizeof *order);
		if (!order)
			goto out;
		for (size_t i = 0; i < held->n_items; i++) {
			int found;
			size_t r = group_data_rank(list, held->items[i]->key, &found);
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
		forget_base(s); /* the offer was refused: read whole next time */
	dirty_clear(m, (int)g);
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
static int build(struct kv_mirror *m, enum gw_group g, int force)
{
	struct group_data *held = ingest_held(m->a.ingest, g);
	struct gstate *s = &m->gs[g];
	force = force || (held && held->provisional);
	int rc = !alias_group(g) && s->base && held == s->base ? build_patch(m, g, held, force)
	                                                       : build_whole(m, g, held, force);
	group_data_unref(held);
	return rc;
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
		int rc = build(m, g, 0);
		if (rc < 0) {
			mark_due(m, (int)g,
			         now_ms); /* out of memory: try again at the next deadline */
			continue;
		}
		accepted += rc;
	}
	return accepted;
}

/* ---------------------------------------------------------------- full reads */

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
			forget_base(&m->gs[g]); /* nothing listed: read whole next */
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
		changed(m, rc, n, now_ms);
	}
	for (struct kv_node *n = kv_table_next(cur, &i, NULL); n; n = kv_table_next(cur, &i, n))
		if (!n->dead && !kv_table_live(read, n->path, n->path_len))
			kill(m, n, now_ms);
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
		int built = build(m, g, 0);
		if (built < 0) {
			mark_due(m, (int)g, now_ms);
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

void kv_mirror_stats(struct kv_mirror *m, struct kv_mirror_stats *out)
{
	pthread_mutex_lock(&m->stats_mu);
	*out = m->stats;
	pthread_mutex_unlock(&m->stats_mu);
}
