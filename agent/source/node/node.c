/*
 * ShenYu's node layout over the path stores' mirror (node.h). Every key read is one entry
 * of a hash table; an entry knows what it is (an item, a list of which kind, a document)
 * only once a list or the root set names it, so an item read before its list is held aside
 * as an unknown key. `refs` counts the wanted lists naming an entry (roots hold one for
 * ever): an entry is wanted while refs > 0, and an item is live (in the mirror) while it
 * is wanted and has a value. A list's change references the members that came and
 * unreferences those that went, which cascades to the lists below them, so a change costs
 * what changed. Here: what values mean, membership, and the map's life; the table of keys
 * is table.c, full reads full.c, the walks walk.c (map.h has their shared insides).
 *
 * Mirror paths are "/n/{group dir}/{key without the prefix}" (whole documents: "/n/{group
 * dir}/{member}[/{id}]"): only the group's directory and the order matter to the mirror.
 */
#include "source/node/node.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/groups.h"
#include "source/node/map.h"
#include "source/node/whole.h"

static const char *const whole_docs[GW_GROUP_COUNT] = {
    [GW_GROUP_PLUGIN] = "shenyu.plugin.json",
    [GW_GROUP_SELECTOR] = "shenyu.selector.json",
    [GW_GROUP_RULE] = "shenyu.rule.json",
    [GW_GROUP_APP_AUTH] = "shenyu.auth.json",
    [GW_GROUP_META_DATA] = "shenyu.meta.json",
    [GW_GROUP_PROXY_SELECTOR] = "shenyu.proxy.selector.json",
    [GW_GROUP_DISCOVER_UPSTREAM] = "shenyu.discovery.data.json",
};

const char *node_whole_doc_name(enum gw_group g)
{
	return (unsigned)g < GW_GROUP_COUNT ? whole_docs[g] : NULL;
}
/* ---- the mirror ---- */

static void feed_put(struct node_map *m, struct entry *e)
{
	e->live = 1;
	if (!m->in_full &&
	    kv_mirror_put(m->mirror, e->path, e->plen, e->value, e->vlen, e->rev, m->now) < 0)
		m->oom = 1;
}

static void feed_delete(struct node_map *m, struct entry *e)
{
	if (!e->live)
		return;
	e->live = 0;
	if (!m->in_full && kv_mirror_delete(m->mirror, e->path, e->plen, m->now) < 0)
		m->oom = 1;
}

/* ---- values ---- */

/* Blank, or "null" (a Polaris delete publishes toJson(null)): the key is absent. */
static int absent(const char *v, size_t n)
{
	size_t i = 0, j = n;
	while (i < j && strchr(" \t\r\n", v[i]))
		i++;
	while (j > i && strchr(" \t\r\n", v[j - 1]))
		j--;
	return i == j || (j - i == 4 && memcmp(v + i, "null", 4) == 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A list's value: a JSON array of ids, sorted and made unique. -1 if it is not one. */
static int parse_ids(const char *v, size_t n, char ***out, size_t *n_out, struct gw_err *err)
{
	*out = NULL;
	*n_out = 0;
	if (!v)
		return 0;
	json_error_t jerr;
	json_t *a = json_loadb(v, n, 0, &jerr);
	if (!a)
		return gw_errf(err, "not JSON (%.200s)", jerr.text);
	if (!json_is_array(a)) {
		json_decref(a);
		return gw_errf(err, "not a JSON array of ids");
	}
	size_t k = json_array_size(a), got = 0;
	char **ids = calloc(k ? k : 1, sizeof *ids);
	if (!ids) {
		json_decref(a);
		return gw_errf(err, "out of memory");
	}
	for (size_t i = 0; i < k; i++) {
		const json_t *s = json_array_get(a, i);
		if (!json_is_string(s)) {
			for (size_t j = 0; j < got; j++)
				free(ids[j]);
			free(ids);
			json_decref(a);
			return gw_errf(err, "element %zu is not an id (a string)", i);
		}
		if (!json_string_length(s))
			continue;
		if (!(ids[got] = strdup(json_string_value(s)))) {
			for (size_t j = 0; j < got; j++)
				free(ids[j]);
			free(ids);
			json_decref(a);
			return gw_errf(err, "out of memory");
		}
		got++;
	}
	json_decref(a);
	qsort(ids, got, sizeof *ids, cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < got; i++) {
		if (u && strcmp(ids[u - 1], ids[i]) == 0)
			free(ids[i]);
		else
			ids[u++] = ids[i];
	}
	*out = ids;
	*n_out = u;
	return 0;
}

/* Parse e's value into its ids; a bad value keeps the ids held (the last good list). */
static void reparse(struct node_map *m, struct entry *e, char ***ids, size_t *n)
{
	struct gw_err err = {0};
	if (parse_ids(e->value, e->vlen, ids, n, &err) != 0) {
		atomic_fetch_add(&m->n_bad, 1);
		LOG_W(m->a.log, m->a.type, "%s: list %s: %s; keeping its last good members",
		      m->a.server, e->key, err.msg);
		*ids = NULL;
		*n = (size_t)-1;
	}
}

/* ---- membership ---- */

static void ref(struct node_map *m, struct entry *e);
static void unref(struct node_map *m, struct entry *e);

/* What a list's member `id` names: its item key (group g) and the lists below it. */
struct child {
	char key[1024];
	size_t klen;
	enum kind kind;
	int list, group;
	const char *p, *s;
};

static size_t children(const struct node_map *m, const struct entry *l, const char *id,
                       struct child out[4])
{
	size_t n = 0;
	const char *P = m->prefix;
#define ADD(k_, l_, g_, p_, s_, ...)                                                               \
	do {                                                                                       \
		int w_ = snprintf(out[n].key, sizeof out[n].key, __VA_ARGS__);                     \
		if (w_ > 0 && (size_t)w_ < sizeof out[n].key) {                                    \
			out[n].klen = (size_t)w_;                                                  \
			out[n].kind = (k_);                                                        \
			out[n].list = (l_);                                                        \
			out[n].group = (g_);                                                       \
			out[n].p = (p_);                                                           \
			out[n].s = (s_);                                                           \
			n++;                                                                       \
		}                                                                                  \
	} while (0)
	switch (l->list) {
	case L_PLUGIN:
		if (m->want[GW_GROUP_PLUGIN])
			ADD(K_ITEM, 0, GW_GROUP_PLUGIN, NULL, NULL, "%splugin.%s", P, id);
		if (m->want[GW_GROUP_SELECTOR] || m->want[GW_GROUP_RULE])
			ADD(K_LIST, L_SELECTOR, -1, id, NULL, "%sselector.%s.list", P, id);
		if (m->want[GW_GROUP_PROXY_SELECTOR])
			ADD(K_LIST, L_PROXY, -1, id, NULL, "%sproxy.selector.%s.list", P, id);
		if (m->want[GW_GROUP_DISCOVER_UPSTREAM])
			ADD(K_LIST, L_DISC, -1, id, NULL, "%sdiscovery.%s.list", P, id);
		break;
	case L_SELECTOR:
		if (m->want[GW_GROUP_SELECTOR])
			ADD(K_ITEM, 0, GW_GROUP_SELECTOR, NULL, NULL, "%sselector.%s.%s", P, l->p,
			    id);
		if (m->want[GW_GROUP_RULE])
			ADD(K_LIST, L_RULE, -1, l->p, id, "%srule.%s.%s.list", P, l->p, id);
		break;
	case L_RULE:
		ADD(K_ITEM, 0, GW_GROUP_RULE, NULL, NULL, "%srule.%s.%s.%s", P, l->p, l->s, id);
		break;
	case L_AUTH:
		ADD(K_ITEM, 0, GW_GROUP_APP_AUTH, NULL, NULL, "%sauth.%s", P, id);
		break;
	case L_META:
		ADD(K_ITEM, 0, GW_GROUP_META_DATA, NULL, NULL, "%smeta.%s", P, id);
		break;
	case L_PROXY:
		ADD(K_ITEM, 0, GW_GROUP_PROXY_SELECTOR, NULL, NULL, "%sproxy.selector.%s.%s", P,
		    l->p, id);
		break;
	case L_DISC:
		ADD(K_ITEM, 0, GW_GROUP_DISCOVER_UPSTREAM, NULL, NULL, "%sdiscovery.%s.%s", P, l->p,
		    id);
		break;
	}
#undef ADD
	return n;
}

/* Give an unreferenced entry the role a list gives it. 0, or -1 on out of memory. */
static int assume(struct node_map *m, struct entry *e, const struct child *c)
{
	free(e->path);
	free(e->p);
	free(e->s);
	nmap_free_ids(e);
	e->path = e->p = e->s = NULL;
	e->kind = (uint8_t)c->kind;
	e->list = (uint8_t)c->list;
	e->group = c->group;
	if (c->kind == K_ITEM) {
		const char *dir = kv_group_dir((enum gw_group)c->group);
		size_t cap = strlen(NODE_MIRROR_ROOT) + strlen(dir) + e->klen + 3;
		if (!(e->path = malloc(cap)))
			return -1;
		e->plen = (size_t)snprintf(e->path, cap, NODE_MIRROR_ROOT "/%s/%s", dir,
		                           e->key + m->plen);
		return 0;
	}
	if ((c->p && !(e->p = strdup(c->p))) || (c->s && !(e->s = strdup(c->s))))
		return -1;
	size_t n;
	reparse(m, e, &e->ids, &n);
	e->n_ids = n == (size_t)-1 ? 0 : n;
	return 0;
}

static void ref_children(struct node_map *m, struct entry *l, const char *id, int up)
{
	struct child c[4];
	size_t n = children(m, l, id, c);
	for (size_t i = 0; i < n; i++) {
		struct entry *e =
		    up ? nmap_add(m, c[i].key, c[i].klen) : nmap_find(m, c[i].key, c[i].klen);
		if (!e)
			continue;
		if (up && e->refs == 0 && !e->root &&
		    (e->kind != c[i].kind || e->list != c[i].list)) {
			if (assume(m, e, &c[i]) != 0) {
				m->oom = 1;
				continue;
			}
		}
		/* a key two roles would share (an auth id "list") keeps its first role */
		if (e->kind != c[i].kind || e->list != c[i].list || e->group != c[i].group)
			continue;
		if (up)
			ref(m, e);
		else
			unref(m, e);
	}
}

void nmap_activate(struct node_map *m, struct entry *e)
{
	if (e->kind == K_ITEM && e->value)
		feed_put(m, e);
	else if (e->kind == K_LIST)
		for (size_t i = 0; i < e->n_ids; i++)
			ref_children(m, e, e->ids[i], 1);
}

static void deactivate(struct node_map *m, struct entry *e)
{
	if (e->kind == K_ITEM)
		feed_delete(m, e);
	else if (e->kind == K_LIST)
		for (size_t i = 0; i < e->n_ids; i++)
			ref_children(m, e, e->ids[i], 0);
}

static void ref(struct node_map *m, struct entry *e)
{
	nmap_acct(m, e, -1);
	e->refs++;
	nmap_acct(m, e, +1);
	if (e->refs == 1) {
		m->gen++;
		nmap_activate(m, e);
	}
}

static void unref(struct node_map *m, struct entry *e)
{
	if (e->refs == 0)
		return;
	nmap_acct(m, e, -1);
	e->refs--;
	nmap_acct(m, e, +1);
	if (e->refs > 0)
		return;
	m->gen++;
	deactivate(m, e);
	/* not watched any more: what was read of it goes stale, unless every read gives it */
	if (!m->a.complete || !e->value)
		nmap_drop(m, e);
}

/* ---- a value changes ---- */

struct doc_items {
	char **paths;
	size_t n, cap;
	struct node_map *m;
	struct entry *e;
	int feed;
};

static int doc_item(void *ctx, const char *path, size_t plen, const char *value, size_t vlen)
{
	struct doc_items *d = ctx;
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 16;
		char **p = realloc(d->paths, cap * sizeof *p);
		if (!p)
			return -1;
		d->paths = p;
		d->cap = cap;
	}
	if (!(d->paths[d->n] = strndup(path, plen)))
		return -1;
	d->n++;
	if (d->feed == 1 && kv_mirror_put(d->m->mirror, path, plen, value, vlen, 1, d->m->now) < 0)
		return -1;
	if (d->feed == 2 && kv_mirror_full_put(d->m->mirror, path, plen, value, vlen, 1) < 0)
		return -1;
	return 0;
}

/* A document's new value (NULL: gone): its items put, those it no longer has deleted.
 * feed: 1 events, 2 a full read's puts, 0 the mirror is not told (inside a full read). */
void nmap_doc_changed(struct node_map *m, struct entry *e, int feed)
{
	struct doc_items d = {NULL, 0, 0, m, e, feed};
	if (e->value) {
		struct gw_err err = {0};
		int rc = node_whole_explode(m->layout.dirs[e->group], e->value, e->vlen, doc_item,
		                            &d, &err);
		if (rc != 0) {
			for (size_t i = 0; i < d.n; i++)
				free(d.paths[i]);
			free(d.paths);
			if (rc > 0 || !err.msg[0]) {
				m->oom = 1;
				return;
			}
			atomic_fetch_add(&m->n_bad, 1);
			LOG_W(m->a.log, m->a.type,
			      "%s: document %s: %s; keeping its last good items", m->a.server,
			      e->key, err.msg);
			return;
		}
	}
	if (d.n)
		qsort(d.paths, d.n, sizeof *d.paths, cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < d.n; i++) {
		if (u && strcmp(d.paths[u - 1], d.paths[i]) == 0)
			free(d.paths[i]);
		else
			d.paths[u++] = d.paths[i];
	}
	/* the old items the new document lacks (both sorted) */
	for (size_t i = 0, j = 0; i < e->n_ids; i++) {
		while (j < u && strcmp(d.paths[j], e->ids[i]) < 0)
			j++;
		if ((j == u || strcmp(d.paths[j], e->ids[i]) != 0) && feed == 1 &&
		    kv_mirror_delete(m->mirror, e->ids[i], strlen(e->ids[i]), m->now) < 0)
			m->oom = 1;
	}
	nmap_free_ids(e);
	e->ids = d.paths;
	e->n_ids = u;
}

/* A list's new members: those that came referenced, those that went unreferenced. */
static void list_changed(struct node_map *m, struct entry *e)
{
	char **ids;
	size_t n;
	reparse(m, e, &ids, &n);
	if (n == (size_t)-1)
		return;
	char **old = e->ids;
	size_t n_old = e->n_ids;
	e->ids = ids;
	e->n_ids = n;
	if (e->refs > 0 || e->root) {
		size_t i = 0, j = 0;
		while (i < n_old || j < n) {
			int c = i == n_old ? 1 : j == n ? -1 : strcmp(old[i], ids[j]);
			if (c < 0)
				ref_children(m, e, old[i++], 0);
			else if (c > 0)
				ref_children(m, e, ids[j++], 1);
			else
				i++, j++;
		}
	}
	for (size_t i = 0; i < n_old; i++)
		free(old[i]);
	free(old);
}

int nmap_set(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
             const char *tag)
{
	if (value && absent(value, vlen))
		value = NULL;
	struct entry *e = value ? nmap_add(m, key, klen) : nmap_find(m, key, klen);
	if (!e)
		return m->oom ? -1 : 0;
	nmap_acct(m, e, -1);
	e->seen = m->epoch;
	nmap_acct(m, e, +1);
	snprintf(e->tag, sizeof e->tag, "%s", value && tag ? tag : "");
	if (value ? e->value && e->vlen == vlen && memcmp(e->value, value, vlen) == 0 : !e->value)
		return 0;
	char *v = NULL;
	if (value && !(v = malloc(vlen + 1))) {
		m->oom = 1;
		return -1;
	}
	if (v) {
		memcpy(v, value, vlen);
		v[vlen] = '\0';
	}
	uint64_t gen = m->gen;
	nmap_acct(m, e, -1);
	free(e->value);
	e->value = v;
	e->vlen = v ? vlen : 0;
	e->rev = ++m->seq;
	nmap_acct(m, e, +1);
	int wanted = e->refs > 0 || e->root;
	if (e->kind == K_ITEM && wanted) {
		if (v)
			feed_put(m, e);
		else
			feed_delete(m, e);
	} else if (e->kind == K_LIST) {
		list_changed(m, e);
	} else if (e->kind == K_DOC) {
		nmap_doc_changed(m, e, m->in_full ? 0 : 1);
	}
	int changed = ((e->kind == K_ITEM || e->kind == K_DOC) && wanted) || m->gen != gen;
	if (!e->value && !wanted)
		nmap_drop(m, e); /* an absent key nobody asks for (e is gone) */
	return m->oom ? -1 : changed;
}

int node_put(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
             const char *tag, int64_t now_ms)
{
	m->now = now_ms;
	return nmap_set(m, key, klen, value ? value : "", value ? vlen : 0, tag);
}

int node_delete(struct node_map *m, const char *key, size_t klen, int64_t now_ms)
{
	m->now = now_ms;
	return nmap_set(m, key, klen, NULL, 0, NULL);
}
/* ---- life ---- */

static int add_root(struct node_map *m, const char *key, enum kind kind, int list, int group)
{
	struct entry *e = nmap_add(m, key, strlen(key));
	if (!e)
		return -1;
	e->kind = (uint8_t)kind;
	e->list = (uint8_t)list;
	e->group = group;
	e->root = 1;
	e->refs = 1;
	nmap_acct(m, e, +1);
	return 0;
}

struct node_map *node_new(const struct node_args *a, struct gw_err *err)
{
	struct node_map *m = calloc(1, sizeof *m);
	if (!m) {
		gw_errf(err, "out of memory");
		return NULL;
	}
	m->a = *a;
	m->epoch = 1;
	if (kv_layout_init(&m->layout, NODE_MIRROR_ROOT, a->groups, a->n_groups, err) != 0) {
		free(m);
		return NULL;
	}
	for (size_t i = 0; i < a->n_groups; i++)
		m->want[a->groups[i]] = 1;
	if (!(m->prefix = strdup(a->prefix ? a->prefix : "")))
		goto oom;
	m->plen = strlen(m->prefix);
	struct kv_mirror_args ma = {&m->layout, a->ingest, a->log,
	                            a->type,    a->server, a->settle_ms};
	if (!(m->mirror = kv_mirror_new(&ma, err)))
		goto fail;
	char key[512];
	if (a->layout == NODE_LAYOUT_WHOLE) {
		for (size_t i = 0; i < a->n_groups; i++) {
			enum gw_group g = a->groups[i];
			const char *d = a->doc_names ? a->doc_names[g] : whole_docs[g];
			if (d && add_root(m, d, K_DOC, 0, (int)g) != 0)
				goto oom;
		}
	} else {
		const int *w = m->want;
		if (w[GW_GROUP_PLUGIN] || w[GW_GROUP_SELECTOR] || w[GW_GROUP_RULE] ||
		    w[GW_GROUP_PROXY_SELECTOR] || w[GW_GROUP_DISCOVER_UPSTREAM]) {
			snprintf(key, sizeof key, "%splugin.list", m->prefix);
			if (add_root(m, key, K_LIST, L_PLUGIN, -1) != 0)
				goto oom;
		}
		if (w[GW_GROUP_APP_AUTH]) {
			snprintf(key, sizeof key, "%sauth.list", m->prefix);
			if (add_root(m, key, K_LIST, L_AUTH, -1) != 0)
				goto oom;
		}
		if (w[GW_GROUP_META_DATA]) {
			snprintf(key, sizeof key, "%smeta.list", m->prefix);
			if (add_root(m, key, K_LIST, L_META, -1) != 0)
				goto oom;
		}
	}
	return m;
oom:
	gw_errf(err, "out of memory");
fail:
	node_free(m);
	return NULL;
}

static int free_all(struct htab_link *l, void *arg)
{
	(void)arg;
	nmap_entry_free((struct entry *)l);
	return 1;
}

void node_free(struct node_map *m)
{
	if (!m)
		return;
	htab_remove_if(&m->keys, free_all, NULL);
	htab_free(&m->keys);
	kv_mirror_free(m->mirror);
	kv_layout_free(&m->layout);
	free(m->prefix);
	free(m);
}
