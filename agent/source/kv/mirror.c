/*
 * The mirror of a path store (see mirror.h). Nodes live in a chained hash table keyed by
 * path; a group is rebuilt from its nodes in path order, so the same store state always
 * gives the same version whatever order the events came in. Building is a full rebuild of
 * the group's list, not a patch: the admin's individual writes can leave any intermediate
 * state, and only "what the store holds now" is ever offered. Unchanged items cost no
 * parse (model_parse_items copies items byte-identical to the held version's).
 */
#include "source/kv/mirror.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "model/groups.h"
#include "model/patch.h"

/* a group's deadline never moves past first event + CEILING x settle, so a store written
 * without pause is still delivered; high, because a large REFRESH (an admin writing
 * thousands of nodes one by one) must not be delivered half done */
#define SETTLE_CEILING   100
#define REPAIR_PATHS_MAX 5

struct node {
	struct node *next; /* hash chain */
	uint64_t hash;
	int group;
	char *path;
	size_t path_len;
	char *value; /* NULL when value_len is 0 */
	size_t value_len;
};

/* How many nodes a table holds strictly below a path: what lets delete_tree of a leaf (the
 * common case: ZooKeeper reports a deleted subtree node by node) cost that node, not a scan
 * of the whole table. One entry per proper prefix ending before a '/' of a held path. */
struct dir {
	struct dir *next;
	uint64_t hash;
	size_t len;
	size_t below;
	char path[];
};

struct table {
	struct node **slots;
	size_t n_slots; /* a power of two */
	size_t n;
	struct dir **dslots;
	size_t n_dslots; /* a power of two */
	size_t n_dirs;
};

struct kv_mirror {
	struct kv_mirror_args a;
	char *type, *server;
	struct table cur;
	struct table staging;
	int staging_active;
	int dirty[GW_GROUP_COUNT];
	int64_t first_ms[GW_GROUP_COUNT], last_ms[GW_GROUP_COUNT];
	pthread_mutex_t stats_mu;
	struct kv_mirror_stats stats;
};

/* ---------------------------------------------------------------- the table */

static uint64_t path_hash(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static void node_free(struct node *n)
{
	if (!n)
		return;
	free(n->path);
	free(n->value);
	free(n);
}

static void table_clear(struct table *t)
{
	for (size_t i = 0; i < t->n_slots; i++) {
		struct node *n = t->slots[i];
		while (n) {
			struct node *next = n->next;
			node_free(n);
			n = next;
		}
	}
	free(t->slots);
	for (size_t i = 0; i < t->n_dslots; i++) {
		struct dir *d = t->dslots[i];
		while (d) {
			struct dir *next = d->next;
			free(d);
			d = next;
		}
	}
	free(t->dslots);
	memset(t, 0, sizeof *t);
}

static struct dir **dir_find(struct table *t, const char *path, size_t len, uint64_t h)
{
	if (!t->n_dslots)
		return NULL;
	struct dir **at = &t->dslots[h & (t->n_dslots - 1)];
	for (; *at; at = &(*at)->next)
		if ((*at)->hash == h && (*at)->len == len && memcmp((*at)->path, path, len) == 0)
			return at;
	return at;
}

static int dir_grow(struct table *t)
{
	if (t->n_dslots && t->n_dirs < t->n_dslots)
		return 0;
	size_t n_slots = t->n_dslots ? t->n_dslots * 2 : 64;
	struct dir **slots = calloc(n_slots, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->n_dslots; i++) {
		struct dir *d = t->dslots[i];
		while (d) {
			struct dir *next = d->next;
			d->next = slots[d->hash & (n_slots - 1)];
			slots[d->hash & (n_slots - 1)] = d;
			d = next;
		}
	}
	free(t->dslots);
	t->dslots = slots;
	t->n_dslots = n_slots;
	return 0;
}

/* Count a node at path in (delta 1) or out (delta -1) of every directory above it. Counting
 * in may fail for memory (-1); counting out never does (every entry exists). */
static int dirs_count(struct table *t, const char *path, size_t len, int delta)
{
	for (size_t k = 1; k < len; k++) {
		if (path[k] != '/')
			continue;
		uint64_t h = path_hash(path, k);
		struct dir **at = dir_find(t, path, k, h);
		if (at && *at) {
			struct dir *d = *at;
			if (delta > 0) {
				d->below++;
			} else if (--d->below == 0) {
				*at = d->next;
				free(d);
				t->n_dirs--;
			}
			continue;
		}
		if (delta < 0)
			continue;
		struct dir *d;
		if (dir_grow(t) < 0 || !(d = malloc(sizeof *d + k))) {
			dirs_count(t, path, k, -1); /* undo the levels above */
			return -1;
		}
		memcpy(d->path, path, k);
		d->len = k;
		d->hash = h;
		d->below = 1;
		at = dir_find(t, path, k, h);
		d->next = *at;
		*at = d;
		t->n_dirs++;
	}
	return 0;
}

/* How many nodes t holds strictly below path. */
static size_t dirs_below(struct table *t, const char *path, size_t len)
{
	struct dir **at = dir_find(t, path, len, path_hash(path, len));
	return at && *at ? (*at)->below : 0;
}

static struct node **table_find(struct table *t, const char *path, size_t len, uint64_t h)
{
	if (!t->n_slots)
		return NULL;
	struct node **at = &t->slots[h & (t->n_slots - 1)];
	for (; *at; at = &(*at)->next)
		if ((*at)->hash == h && (*at)->path_len == len &&
		    memcmp((*at)->path, path, len) == 0)
			return at;
	return at; /* the empty link where it would go */
}

static int table_grow(struct table *t)
{
	if (t->n_slots && t->n < t->n_slots)
		return 0;
	size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
	struct node **slots = calloc(n_slots, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < t->n_slots; i++) {
		struct node *n = t->slots[i];
		while (n) {
			struct node *next = n->next;
			n->next = slots[n->hash & (n_slots - 1)];
			slots[n->hash & (n_slots - 1)] = n;
			n = next;
		}
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

static int same_value(const struct node *n, const char *v, size_t len)
{
	return n->value_len == len && (len == 0 || memcmp(n->value, v, len) == 0);
}

/* Insert or replace; an empty value removes. 1 changed, 0 same, -1 out of memory. */
static int table_set(struct table *t, int group, const char *path, size_t len, const char *v,
                     size_t vlen)
{
	uint64_t h = path_hash(path, len);
	struct node **at = table_find(t, path, len, h);
	if (at && *at) {
		struct node *n = *at;
		if (same_value(n, v, vlen))
			return 0;
		if (vlen == 0) {
			*at = n->next;
			dirs_count(t, n->path, n->path_len, -1);
			node_free(n);
			t->n--;
			return 1;
		}
		char *copy = malloc(vlen);
		if (!copy)
			return -1;
		memcpy(copy, v, vlen);
		free(n->value);
		n->value = copy;
		n->value_len = vlen;
		return 1;
	}
	if (vlen == 0)
		return 0;
	if (table_grow(t) < 0)
		return -1;
	struct node *n = calloc(1, sizeof *n);
	if (!n || !(n->path = malloc(len + 1)) || !(n->value = malloc(vlen)) ||
	    dirs_count(t, path, len, 1) < 0) {
		node_free(n);
		return -1;
	}
	memcpy(n->path, path, len);
	n->path[len] = '\0';
	n->path_len = len;
	memcpy(n->value, v, vlen);
	n->value_len = vlen;
	n->hash = h;
	n->group = group;
	at = table_find(t, path, len, h);
	n->next = *at;
	*at = n;
	t->n++;
	return 1;
}

static const struct node *table_get(struct table *t, const char *path, size_t len)
{
	struct node **at = table_find(t, path, len, path_hash(path, len));
	return at ? *at : NULL;
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

void kv_mirror_free(struct kv_mirror *m)
{
	if (!m)
		return;
	table_clear(&m->cur);
	table_clear(&m->staging);
	pthread_mutex_destroy(&m->stats_mu);
	free(m->type);
	free(m->server);
	free(m);
}

static void mark_dirty(struct kv_mirror *m, int g, int64_t now_ms)
{
	if (!m->dirty[g]) {
		m->dirty[g] = 1;
		m->first_ms[g] = now_ms;
	}
	m->last_ms[g] = now_ms;
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

int kv_mirror_put(struct kv_mirror *m, const char *path, size_t path_len, const char *value,
                  size_t value_len, int64_t now_ms)
{
	int g = kv_layout_group_of(m->a.layout, path, path_len);
	if (g < 0)
		return 0;
	int rc = table_set(&m->cur, g, path, path_len, value, value_len);
	if (rc > 0) {
		mark_dirty(m, g, now_ms);
		count_event(m);
	}
	return rc;
}

int kv_mirror_delete(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms)
{
	return kv_mirror_put(m, path, path_len, NULL, 0, now_ms);
}

int kv_mirror_delete_tree(struct kv_mirror *m, const char *path, size_t path_len, int64_t now_ms)
{
	struct table *t = &m->cur;
	int changed = 0;
	/* the node itself by its hash; the table is scanned only when nodes lie below it */
	struct node **self = table_find(t, path, path_len, path_hash(path, path_len));
	if (self && *self) {
		struct node *n = *self;
		*self = n->next;
		mark_dirty(m, n->group, now_ms);
		dirs_count(t, n->path, n->path_len, -1);
		node_free(n);
		t->n--;
		changed = 1;
	}
	size_t below = dirs_below(t, path, path_len);
	for (size_t i = 0; below && i < t->n_slots; i++) {
		struct node **at = &t->slots[i];
		while (*at) {
			struct node *n = *at;
			int under = n->path_len >= path_len &&
			            memcmp(n->path, path, path_len) == 0 &&
			            (n->path_len == path_len || n->path[path_len] == '/');
			if (!under) {
				at = &n->next;
				continue;
			}
			*at = n->next;
			mark_dirty(m, n->group, now_ms);
			dirs_count(t, n->path, n->path_len, -1);
			node_free(n);
			t->n--;
			below--;
			changed = 1;
		}
	}
	if (changed)
		count_event(m);
	return changed;
}

/* ---------------------------------------------------------------- building versions */

static int by_path(const void *a, const void *b)
{
	const struct node *x = *(const struct node *const *)a, *y = *(const struct node *const *)b;
	size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
	int c = memcmp(x->path, y->path, n);
	return c ? c : (x->path_len > y->path_len) - (x->path_len < y->path_len);
}

/* The group's item nodes in path order; *n set. NULL with *n 0 for none or out of memory
 * (*oom set). */
static const struct node **group_nodes(const struct table *t, int g, size_t *n, int *oom)
{
	size_t count = 0;
	*n = 0;
	*oom = 0;
	for (size_t i = 0; i < t->n_slots; i++)
		for (const struct node *x = t->slots[i]; x; x = x->next)
			count += x->group == g;
	if (!count)
		return NULL;
	const struct node **v = malloc(count * sizeof *v);
	if (!v) {
		*oom = 1;
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < t->n_slots; i++)
		for (const struct node *x = t->slots[i]; x; x = x->next)
			if (x->group == g)
				v[k++] = x;
	qsort(v, count, sizeof *v, by_path);
	*n = count;
	return v;
}

/* A refused build: name the first node whose value is not one valid item, or say why the
 * whole list was refused (two nodes holding one key). */
static void log_refused(struct kv_mirror *m, enum gw_group g, const struct node **v, size_t n,
                        const struct gw_err *whole)
{
	const char *name = gw_group_name(g);
	for (size_t i = 0; i < n; i++) {
		struct strbuf b = {0};
		strbuf_add(&b, "[", 1);
		strbuf_add(&b, v[i]->value, v[i]->value_len);
		strbuf_add(&b, "]", 1);
		char *text = strbuf_finish(&b);
		if (!text)
			break;
		struct group_data *one = NULL;
		struct gw_err err = {{0}};
		int rc = model_parse_items(g, text, strlen(text), m->server, NULL, &one, &err);
		free(text);
		group_data_unref(one);
		if (rc != 0) {
			LOG_W(m->a.log, m->type,
			      "refused %s: %s: %s; keeping the last good version", name, v[i]->path,
			      err.msg);
			return;
		}
	}
	LOG_W(m->a.log, m->type, "refused %s: %s; keeping the last good version", name, whole->msg);
}

/* Build group g from the mirror and offer it. force: offer even if equal to what is held
 * (a snapshot version must be replaced). 1 accepted, 0 not, -1 out of memory. */
static int build(struct kv_mirror *m, enum gw_group g, int force)
{
	size_t n;
	int oom;
	const struct node **v = group_nodes(&m->cur, (int)g, &n, &oom);
	if (oom)
		return -1;
	struct strbuf b = {0};
	strbuf_add(&b, "[", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			strbuf_add(&b, ",", 1);
		strbuf_add(&b, v[i]->value, v[i]->value_len);
	}
	strbuf_add(&b, "]", 1);
	size_t len = b.len;
	char *text = strbuf_finish(&b);
	if (!text) {
		free(v);
		return -1;
	}
	struct group_data *held = ingest_held(m->a.ingest, g), *batch = NULL, *out = NULL;
	struct gw_err err = {{0}};
	int rc = model_parse_items(g, text, len, m->server, held, &batch, &err);
	free(text);
	if (rc != 0) {
		log_refused(m, g, v, n, &err);
		pthread_mutex_lock(&m->stats_mu);
		m->stats.refused++;
		pthread_mutex_unlock(&m->stats_mu);
		free(v);
		group_data_unref(held);
		return 0;
	}
	free(v);
	struct patch p = {
	    g,         held,        batch, NULL, 0, 1, force || (held && held->provisional),
	    m->server, gw_wall_ms()};
	rc = model_patch(&p, &out, &err);
	group_data_unref(batch);
	group_data_unref(held);
	if (rc != 0) {
		LOG_W(m->a.log, m->type, "refused %s: %s; keeping the last good version",
		      gw_group_name(g), err.msg);
		return 0;
	}
	if (!out)
		return 0; /* the store already holds exactly these items */
	struct group_data *versions[GW_GROUP_COUNT] = {0};
	versions[g] = out;
	int older = 0;
	size_t accepted =
	    ingest_offer(m->a.ingest, m->server, ingest_accept_patched, &g, 1, versions, &older);
	if (accepted) {
		pthread_mutex_lock(&m->stats_mu);
		m->stats.versions++;
		m->stats.last_version_ms = gw_wall_ms();
		pthread_mutex_unlock(&m->stats_mu);
	}
	return accepted ? 1 : 0;
}

static int64_t group_deadline(const struct kv_mirror *m, int g)
{
	int64_t quiet = m->last_ms[g] + m->a.settle_ms;
	int64_t ceiling = m->first_ms[g] + SETTLE_CEILING * m->a.settle_ms;
	return quiet < ceiling ? quiet : ceiling;
}

int64_t kv_mirror_deadline(const struct kv_mirror *m)
{
	int64_t best = -1;
	for (size_t i = 0; i < m->a.layout->n_groups; i++) {
		int g = (int)m->a.layout->groups[i];
		if (!m->dirty[g])
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
		if (!m->dirty[g] || (!force && group_deadline(m, (int)g) > now_ms))
			continue;
		m->dirty[g] = 0;
		int rc = build(m, g, 0);
		if (rc < 0) {
			m->dirty[g] = 1; /* out of memory: try again at the next deadline */
			m->last_ms[g] = now_ms;
			continue;
		}
		accepted += rc;
	}
	return accepted;
}

/* ---------------------------------------------------------------- full reads */

int kv_mirror_full_begin(struct kv_mirror *m)
{
	table_clear(&m->staging);
	m->staging_active = 1;
	return 0;
}

int kv_mirror_full_put(struct kv_mirror *m, const char *path, size_t path_len, const char *value,
                       size_t value_len)
{
	int g = kv_layout_group_of(m->a.layout, path, path_len);
	if (g < 0 || !m->staging_active)
		return 0;
	return table_set(&m->staging, g, path, path_len, value, value_len) < 0 ? -1 : 0;
}

void kv_mirror_full_abort(struct kv_mirror *m)
{
	table_clear(&m->staging);
	m->staging_active = 0;
}

/* The paths that differ between a and b in group g (added, removed or changed), up to
 * REPAIR_PATHS_MAX of them named in `names`; returns how many differ. */
static size_t differences(struct table *a, struct table *b, int g, struct strbuf *names)
{
	size_t diff = 0;
	struct table *pair[2][2] = {{a, b}, {b, a}};
	for (int side = 0; side < 2; side++) {
		struct table *x = pair[side][0], *y = pair[side][1];
		for (size_t i = 0; i < x->n_slots; i++) {
			for (const struct node *n = x->slots[i]; n; n = n->next) {
				if (n->group != g)
					continue;
				const struct node *o = table_get(y, n->path, n->path_len);
				/* a changed node is counted once, from the first side */
				if (o && (side == 1 || same_value(o, n->value, n->value_len)))
					continue;
				if (diff < REPAIR_PATHS_MAX)
					strbuf_addf(names, "%s%s", diff ? ", " : "", n->path);
				diff++;
			}
		}
	}
	return diff;
}

int kv_mirror_full_end(struct kv_mirror *m, enum kv_full_kind kind, int64_t now_ms)
{
	if (!m->staging_active)
		return 0;
	const struct kv_layout *l = m->a.layout;
	int changed[GW_GROUP_COUNT] = {0};
	for (size_t i = 0; i < l->n_groups; i++) {
		int g = (int)l->groups[i];
		struct strbuf names = {0};
		size_t diff = differences(&m->cur, &m->staging, g, &names);
		char *text = strbuf_finish(&names);
		changed[g] = diff > 0;
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
	table_clear(&m->cur);
	m->cur = m->staging;
	memset(&m->staging, 0, sizeof m->staging);
	m->staging_active = 0;
	pthread_mutex_lock(&m->stats_mu);
	m->stats.nodes = m->cur.n;
	pthread_mutex_unlock(&m->stats_mu);

	int accepted = 0;
	for (size_t i = 0; i < l->n_groups; i++) {
		enum gw_group g = l->groups[i];
		/* at start every group is built, so each has a version even if empty; later a
		 * group pending its settle window is built now too (the read is newer) */
		if (kind != KV_FULL_START && !changed[g] && !m->dirty[g])
			continue;
		m->dirty[g] = 0;
		int rc = build(m, g, 0);
		if (rc < 0) {
			mark_dirty(m, (int)g, now_ms);
			continue;
		}
		accepted += rc;
		if (rc > 0 && kind == KV_FULL_RESYNC && changed[g]) {
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
