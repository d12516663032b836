/*
 * ShenYu's node layout over the path stores' mirror (node.h). Every key read is one entry
 * of a hash table; an entry knows what it is (an item, a list of which kind, a document)
 * only once a list or the root set names it, so an item read before its list is held aside
 * as an unknown key. `refs` counts the wanted lists naming an entry (roots hold one for
 * ever): an entry is wanted while refs > 0, and an item is live (in the mirror) while it
 * is wanted and has a value. A list's change references the members that came and
 * unreferences those that went, which cascades to the lists below them, so a change costs
 * what changed. A full read ends by counting every reference again from the roots (one
 * pass over the table), which is simpler than undoing a half-read store and costs what a
 * full read costs anyway.
 *
 * Mirror paths are "/n/{group dir}/{key without the prefix}" (whole documents: "/n/{group
 * dir}/{member}[/{id}]"): only the group's directory and the order matter to the mirror.
 */
#include "source/node/node.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/htab.h"
#include "model/groups.h"
#include "source/kv/layout.h"
#include "source/node/whole.h"

#define ROOT "/n"

enum kind { K_UNKNOWN = 0, K_ITEM, K_LIST, K_DOC };
enum list { L_PLUGIN = 0, L_SELECTOR, L_RULE, L_AUTH, L_META, L_PROXY, L_DISC };

struct entry {
	struct htab_link link; /* first */
	char *key;
	size_t klen;
	char *value; /* NULL: absent (or not read yet) */
	size_t vlen;
	char tag[NODE_TAG_MAX];
	uint32_t refs;
	uint32_t seen; /* the epoch it was last read in; 0: never */
	int64_t rev;
	uint32_t slot; /* the transport's (node_wanted_slots) */
	uint8_t kind, list, live, root;
	int group;  /* items and documents: their group; lists: -1 */
	char *path; /* items: the mirror path */
	size_t plen;
	char *p, *s; /* lists: the plugin name and selector id they are under */
	char **ids;  /* lists: members of the last good value, sorted, unique; documents:
	              * the mirror paths of their items, sorted */
	size_t n_ids;
};

struct node_map {
	struct node_args a;
	char *prefix;
	size_t plen;
	char *docs[GW_GROUP_COUNT];
	int want[GW_GROUP_COUNT];
	struct kv_layout layout;
	struct kv_mirror *mirror;
	struct htab keys;
	uint32_t epoch;
	int in_full;
	int delivered; /* a full read has reached the mirror */
	int64_t now;   /* of the call in progress */
	int64_t seq;   /* revisions handed to the mirror */
	int oom;
	uint64_t gen;
	atomic_size_t n_keys, n_wanted, n_aside;
	size_t n_unread; /* wanted and not read in this epoch: node_unread() walks only if any */
	atomic_uint_fast64_t n_bad;
};

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

/* ---- the table ---- */

static int entry_eq(const struct htab_link *l, const void *key, size_t len)
{
	const struct entry *e = (const struct entry *)l;
	return e->klen == len && memcmp(e->key, key, len) == 0;
}

static struct entry *find(const struct node_map *m, const char *key, size_t len)
{
	struct htab_link **at = htab_find(&m->keys, htab_hash(key, len), entry_eq, key, len);
	return at ? (struct entry *)*at : NULL;
}

static void free_ids(struct entry *e)
{
	for (size_t i = 0; i < e->n_ids; i++)
		free(e->ids[i]);
	free(e->ids);
	e->ids = NULL;
	e->n_ids = 0;
}

static void entry_free(struct entry *e)
{
	free(e->key);
	free(e->value);
	free(e->path);
	free(e->p);
	free(e->s);
	free_ids(e);
	free(e);
}

/* The counters /status shows: what e adds to them (sign -1 before a change, +1 after). */
static void acct(struct node_map *m, const struct entry *e, int sign)
{
	if (e->refs > 0 && e->seen != m->epoch)
		m->n_unread += (size_t)sign;
	if (e->refs > 0)
		atomic_fetch_add(&m->n_wanted, (size_t)sign);
	else if (e->value && e->kind != K_LIST)
		atomic_fetch_add(&m->n_aside, (size_t)sign);
}

static struct entry *find_or_add(struct node_map *m, const char *key, size_t len)
{
	uint64_t h = htab_hash(key, len);
	struct htab_link **at = htab_find(&m->keys, h, entry_eq, key, len);
	if (at && *at)
		return (struct entry *)*at;
	struct entry *e = calloc(1, sizeof *e);
	if (!e || !(e->key = malloc(len + 1)) || htab_reserve(&m->keys) != 0) {
		if (e)
			free(e->key);
		free(e);
		m->oom = 1;
		return NULL;
	}
	memcpy(e->key, key, len);
	e->key[len] = '\0';
	e->klen = len;
	e->group = -1;
	at = htab_find(&m->keys, h, entry_eq, key, len);
	htab_insert(&m->keys, at, &e->link, h);
	atomic_fetch_add(&m->n_keys, 1);
	return e;
}

static void drop(struct node_map *m, struct entry *e)
{
	struct htab_link **at = htab_find(&m->keys, e->link.hash, entry_eq, e->key, e->klen);
	acct(m, e, -1);
	htab_remove(&m->keys, at);
	atomic_fetch_sub(&m->n_keys, 1);
	entry_free(e);
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
	free_ids(e);
	e->path = e->p = e->s = NULL;
	e->kind = (uint8_t)c->kind;
	e->list = (uint8_t)c->list;
	e->group = c->group;
	if (c->kind == K_ITEM) {
		const char *dir = kv_group_dir((enum gw_group)c->group);
		size_t cap = strlen(ROOT) + strlen(dir) + e->klen + 3;
		if (!(e->path = malloc(cap)))
			return -1;
		e->plen = (size_t)snprintf(e->path, cap, ROOT "/%s/%s", dir, e->key + m->plen);
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
		    up ? find_or_add(m, c[i].key, c[i].klen) : find(m, c[i].key, c[i].klen);
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

static void activate(struct node_map *m, struct entry *e)
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
	acct(m, e, -1);
	e->refs++;
	acct(m, e, +1);
	if (e->refs == 1) {
		m->gen++;
		activate(m, e);
	}
}

static void unref(struct node_map *m, struct entry *e)
{
	if (e->refs == 0)
		return;
	acct(m, e, -1);
	e->refs--;
	acct(m, e, +1);
	if (e->refs > 0)
		return;
	m->gen++;
	deactivate(m, e);
	/* not watched any more: what was read of it goes stale, unless every read gives it */
	if (!m->a.complete || !e->value)
		drop(m, e);
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
static void doc_changed(struct node_map *m, struct entry *e, int feed)
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
	free_ids(e);
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

static int set(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
               const char *tag)
{
	if (value && absent(value, vlen))
		value = NULL;
	struct entry *e = value ? find_or_add(m, key, klen) : find(m, key, klen);
	if (!e)
		return m->oom ? -1 : 0;
	acct(m, e, -1);
	e->seen = m->epoch;
	acct(m, e, +1);
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
	acct(m, e, -1);
	free(e->value);
	e->value = v;
	e->vlen = v ? vlen : 0;
	e->rev = ++m->seq;
	acct(m, e, +1);
	int wanted = e->refs > 0 || e->root;
	if (e->kind == K_ITEM && wanted) {
		if (v)
			feed_put(m, e);
		else
			feed_delete(m, e);
	} else if (e->kind == K_LIST) {
		list_changed(m, e);
	} else if (e->kind == K_DOC) {
		doc_changed(m, e, m->in_full ? 0 : 1);
	}
	int changed = ((e->kind == K_ITEM || e->kind == K_DOC) && wanted) || m->gen != gen;
	if (!e->value && !wanted)
		drop(m, e); /* an absent key nobody asks for (e is gone) */
	return m->oom ? -1 : changed;
}

int node_put(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
             const char *tag, int64_t now_ms)
{
	m->now = now_ms;
	return set(m, key, klen, value ? value : "", value ? vlen : 0, tag);
}

int node_delete(struct node_map *m, const char *key, size_t klen, int64_t now_ms)
{
	m->now = now_ms;
	return set(m, key, klen, NULL, 0, NULL);
}

/* ---- full reads ---- */

int node_full_begin(struct node_map *m)
{
	m->epoch++;
	m->in_full = 1;
	/* every wanted key is unread again */
	m->n_unread = 0;
	size_t slot = 0;
	struct htab_link *l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL)
		m->n_unread += ((struct entry *)l)->refs > 0;
	return 0;
}

int node_full_put(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
                  const char *tag)
{
	return set(m, key, klen, value ? value : "", value ? vlen : 0, tag) < 0 ? -1 : 0;
}

static int reset_refs(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	struct node_map *m = arg;
	acct(m, e, -1);
	e->refs = e->root;
	e->live = 0;
	acct(m, e, +1);
	return 0;
}

static int drop_unread(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	struct node_map *m = arg;
	if (e->seen == m->epoch || !e->value)
		return 0;
	acct(m, e, -1);
	free(e->value);
	e->value = NULL;
	e->vlen = 0;
	e->tag[0] = '\0';
	acct(m, e, +1);
	if (e->kind == K_LIST)
		free_ids(e);
	return 0;
}

static int drop_unwanted(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	struct node_map *m = arg;
	if (e->refs > 0 || e->root || (m->a.complete && e->value))
		return 0;
	acct(m, e, -1);
	atomic_fetch_sub(&m->n_keys, 1);
	entry_free(e);
	return 1;
}

/* Count every reference again from the roots and hand the mirror what is live. */
static int rebuild(struct node_map *m, enum kv_full_kind kind, int drop_missing)
{
	if (drop_missing)
		htab_remove_if(&m->keys, drop_unread, m);
	htab_remove_if(&m->keys, reset_refs, m);
	size_t slot = 0;
	struct htab_link *l = NULL;
	/* roots first: activating them may add entries, so collect them before */
	struct entry *roots[2 * GW_GROUP_COUNT];
	size_t n_roots = 0;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL)
		if (((struct entry *)l)->root && n_roots < 2 * GW_GROUP_COUNT)
			roots[n_roots++] = (struct entry *)l;
	for (size_t i = 0; i < n_roots; i++)
		activate(m, roots[i]);
	htab_remove_if(&m->keys, drop_unwanted, m);
	m->in_full = 0;
	m->gen++;
	if (m->oom || kv_mirror_full_begin(m->mirror) != 0)
		return -1;
	slot = 0;
	l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL) {
		struct entry *e = (struct entry *)l;
		if (e->kind == K_ITEM && e->live &&
		    kv_mirror_full_put(m->mirror, e->path, e->plen, e->value, e->vlen, e->rev) != 0)
			m->oom = 1;
		else if (e->kind == K_DOC)
			doc_changed(m, e, 2);
	}
	if (m->oom) {
		kv_mirror_full_abort(m->mirror);
		return -1;
	}
	m->delivered = 1;
	return kv_mirror_full_end(m->mirror, kind, m->now);
}

int node_full_end(struct node_map *m, enum kv_full_kind kind, int64_t now_ms)
{
	m->now = now_ms;
	return rebuild(m, kind, 1);
}

int node_full_abort(struct node_map *m, int64_t now_ms)
{
	m->now = now_ms;
	if (!m->delivered) {
		/* the first read: half of it is no version to offer (the snapshot stands);
		 * the next full read hands the mirror everything */
		m->in_full = 0;
		return 0;
	}
	return rebuild(m, KV_FULL_RECOVER, 0);
}

/* ---- what to read and watch ---- */

static size_t walk(const struct node_map *m, node_key_fn fn, void *ctx, int unread_only)
{
	size_t n = 0, slot = 0;
	struct htab_link *l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL) {
		const struct entry *e = (const struct entry *)l;
		if (e->refs == 0 && !e->root)
			continue;
		int read = e->seen == m->epoch && e->seen != 0;
		if (unread_only && read)
			continue;
		fn(ctx, e->key, e->klen, e->value ? e->tag : "", e->value != NULL, read);
		n++;
	}
	return n;
}

size_t node_wanted(const struct node_map *m, node_key_fn fn, void *ctx)
{
	return walk(m, fn, ctx, 0);
}

size_t node_unread(const struct node_map *m, node_key_fn fn, void *ctx)
{
	return m->n_unread ? walk(m, fn, ctx, 1) : 0;
}

size_t node_wanted_slots(struct node_map *m, node_slot_fn fn, void *ctx)
{
	size_t n = 0, slot = 0;
	struct htab_link *l = NULL;
	while ((l = htab_next(&m->keys, &slot, l)) != NULL) {
		struct entry *e = (struct entry *)l;
		if (e->refs == 0)
			continue;
		fn(ctx, e->key, e->klen, e->tag, e->value != NULL, &e->slot);
		n++;
	}
	return n;
}

uint32_t *node_slot(struct node_map *m, const char *key, size_t klen)
{
	struct entry *e = find(m, key, klen);
	return e ? &e->slot : NULL;
}

int node_is_wanted(const struct node_map *m, const char *key, size_t klen)
{
	const struct entry *e = find(m, key, klen);
	return e && (e->refs > 0 || e->root);
}

uint64_t node_wanted_gen(const struct node_map *m)
{
	return m->gen;
}

int64_t node_deadline(const struct node_map *m)
{
	return kv_mirror_deadline(m->mirror);
}

int node_flush(struct node_map *m, int64_t now_ms, int force)
{
	return kv_mirror_flush(m->mirror, now_ms, force);
}

void node_stats(struct node_map *m, struct node_stats *out)
{
	memset(out, 0, sizeof *out);
	kv_mirror_stats(m->mirror, &out->mirror);
	out->keys = atomic_load(&m->n_keys);
	out->wanted = atomic_load(&m->n_wanted);
	out->aside = atomic_load(&m->n_aside);
	out->bad_list = atomic_load(&m->n_bad);
}

/* ---- life ---- */

static int add_root(struct node_map *m, const char *key, enum kind kind, int list, int group)
{
	struct entry *e = find_or_add(m, key, strlen(key));
	if (!e)
		return -1;
	e->kind = (uint8_t)kind;
	e->list = (uint8_t)list;
	e->group = group;
	e->root = 1;
	e->refs = 1;
	acct(m, e, +1);
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
	if (kv_layout_init(&m->layout, ROOT, a->groups, a->n_groups, err) != 0) {
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
	entry_free((struct entry *)l);
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
