/*
 * The reference incremental reader (cache_reader.h). Deliberately simple data structures
 * (sorted arrays, a linear list of the keys a poll must re-read): it is a specification in
 * code, checked against a full read, not a fast reader. The entries are parsed with
 * jansson, strictly, so an entry that is not valid JSON (a key badly escaped) fails the
 * poll instead of being read leniently.
 */
#include "cache_reader.h"

#include <gwsync/cache.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cache_reader_init(struct cache_reader *r, MDB_env *env, const char *const *groups,
                       size_t n_groups)
{
	memset(r, 0, sizeof *r);
	r->env = env;
	r->groups = calloc(n_groups, sizeof *r->groups);
	r->n_groups = n_groups;
	for (size_t i = 0; i < n_groups; i++)
		r->groups[i].name = groups[i];
}

/* ------------------------------------------------------------ the view */

static int keycmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

/* The index of key in g, or where it would go (*found says which). */
static size_t find(const struct cr_group *g, const char *key, size_t klen, int *found)
{
	size_t lo = 0, hi = g->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = keycmp(g->v[mid].key, g->v[mid].klen, key, klen);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

static char *dup(const void *p, size_t n)
{
	char *s = malloc(n + 1);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void upsert(struct cr_group *g, const MDB_val *k, const MDB_val *v)
{
	int found;
	size_t i = find(g, k->mv_data, k->mv_size, &found);
	if (found) {
		free(g->v[i].val);
	} else {
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 16;
			g->v = realloc(g->v, g->cap * sizeof *g->v);
		}
		memmove(g->v + i + 1, g->v + i, (g->n - i) * sizeof *g->v);
		g->n++;
		g->v[i].key = dup(k->mv_data, k->mv_size);
		g->v[i].klen = k->mv_size;
	}
	g->v[i].val = dup(v->mv_data, v->mv_size);
	g->v[i].vlen = v->mv_size;
}

static void delete (struct cr_group *g, const char *key, size_t klen)
{
	int found;
	size_t i = find(g, key, klen, &found);
	if (!found)
		return;
	free(g->v[i].key);
	free(g->v[i].val);
	memmove(g->v + i, g->v + i + 1, (g->n - i - 1) * sizeof *g->v);
	g->n--;
}

static void clear(struct cr_group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->v[i].key);
		free(g->v[i].val);
	}
	g->n = 0;
}

/* ------------------------------------------------------------ reading */

static int get_meta(MDB_txn *txn, MDB_dbi meta, const char *key, unsigned long long *out)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	if (mdb_get(txn, meta, &k, &v) != 0 || v.mv_size == 0 || v.mv_size > 20)
		return 0;
	char buf[24];
	memcpy(buf, v.mv_data, v.mv_size);
	buf[v.mv_size] = '\0';
	char *end;
	*out = strtoull(buf, &end, 10);
	return *end == '\0';
}

/* Reads group g whole into the view (an absent database: an empty group). */
static int read_group(struct cache_reader *r, MDB_txn *txn, struct cr_group *g)
{
	clear(g);
	r->groups_reread++;
	MDB_dbi dbi;
	int rc = mdb_dbi_open(txn, g->name, 0, &dbi);
	if (rc == MDB_NOTFOUND)
		return 0;
	MDB_cursor *c;
	if (rc || (rc = mdb_cursor_open(txn, dbi, &c)))
		return rc;
	MDB_val k, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		upsert(g, &k, &v); /* in key order: appends */
		r->items_read++;
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int full(struct cache_reader *r, MDB_txn *txn)
{
	r->how = CR_FULL;
	for (size_t i = 0; i < r->n_groups; i++) {
		int rc = read_group(r, txn, &r->groups[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/* The keys one incremental poll re-reads (a set per group: the fold of put and del, since
 * the final mdb_get decides upsert or delete) and the groups it re-reads whole. */
struct pending {
	struct cr_item *keys; /* val unused; key + group index in vlen */
	size_t n, cap;
	int *replace;
};

static void pend(struct pending *p, size_t group, const char *key, size_t klen)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->keys[i].vlen == group &&
		    keycmp(p->keys[i].key, p->keys[i].klen, key, klen) == 0)
			return;
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 16;
		p->keys = realloc(p->keys, p->cap * sizeof *p->keys);
	}
	p->keys[p->n].key = dup(key, klen);
	p->keys[p->n].klen = klen;
	p->keys[p->n].vlen = group;
	p->n++;
}

static void pending_free(struct pending *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->keys[i].key);
	free(p->keys);
	free(p->replace);
}

static long group_index(const struct cache_reader *r, const char *name)
{
	for (size_t i = 0; i < r->n_groups; i++)
		if (strcmp(r->groups[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* Folds one entry into p; -1 if it is not an entry this reader understands. */
static int fold(struct cache_reader *r, struct pending *p, const MDB_val *v)
{
	json_error_t jerr;
	json_t *e = json_loadb(v->mv_data, v->mv_size, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(e)) {
		json_decref(e);
		return -1;
	}
	const char *group = json_string_value(json_object_get(e, "group"));
	json_t *put = json_object_get(e, "put"), *del = json_object_get(e, "del");
	int replace = json_is_true(json_object_get(e, "replace"));
	int ok = group && (replace || (json_is_array(put) && json_is_array(del)));
	long g = ok ? group_index(r, group) : -1;
	if (ok && g >= 0) {
		if (replace)
			p->replace[g] = 1;
		json_t *lists[2] = {put, del};
		for (int l = 0; l < 2 && !replace; l++) {
			size_t i;
			json_t *k;
			json_array_foreach(lists[l], i, k)
			{
				if (!json_is_string(k)) {
					ok = 0;
					break;
				}
				pend(p, (size_t)g, json_string_value(k), json_string_length(k));
			}
		}
	}
	json_decref(e);
	return ok ? 0 : -1;
}

/* incremental()'s answer when the log cannot be used; LMDB's errors are errno values and
 * MDB_* codes, never -1. */
#define UNUSABLE (-1)

/* The walk g+1 .. G. 0 and the view updated; UNUSABLE with why_full set when the log cannot
 * be used (the caller reads whole); or an LMDB error. */
static int incremental(struct cache_reader *r, MDB_txn *txn, unsigned long long to)
{
	MDB_dbi log;
	int rc = mdb_dbi_open(txn, GW_CACHE_CHANGES_DB, 0, &log);
	if (rc == MDB_NOTFOUND) {
		snprintf(r->why_full, sizeof r->why_full, "no changes database");
		return UNUSABLE;
	}
	MDB_cursor *c;
	if (rc || (rc = mdb_cursor_open(txn, log, &c)))
		return rc;
	struct pending p = {0};
	p.replace = calloc(r->n_groups, sizeof *p.replace);
	unsigned long long want = r->gen + 1;
	char key[21];
	snprintf(key, sizeof key, "%020llu", want);
	MDB_val k = {20, key}, v;
	int usable = 1;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		snprintf(key, sizeof key, "%020llu", want);
		if (rc == MDB_NOTFOUND ||
		    (rc == 0 && (k.mv_size != 20 || memcmp(k.mv_data, key, 20)))) {
			snprintf(r->why_full, sizeof r->why_full, "gap at %llu", want);
			usable = 0;
			rc = 0;
			break;
		}
		if (rc)
			break;
		if (fold(r, &p, &v) != 0) {
			snprintf(r->why_full, sizeof r->why_full, "entry %llu unreadable", want);
			usable = 0;
			break;
		}
		if (want == to)
			break;
		want++;
	}
	mdb_cursor_close(c);
	if (rc || !usable) {
		pending_free(&p);
		return rc ? rc : UNUSABLE;
	}
	r->how = CR_INCREMENTAL;
	for (size_t g = 0; g < r->n_groups && rc == 0; g++)
		if (p.replace[g])
			rc = read_group(r, txn, &r->groups[g]);
	for (size_t i = 0; i < p.n && rc == 0; i++) {
		struct cr_group *g = &r->groups[p.keys[i].vlen];
		if (p.replace[p.keys[i].vlen])
			continue; /* read whole already, at this generation */
		MDB_dbi dbi;
		MDB_val ik = {p.keys[i].klen, p.keys[i].key}, iv;
		rc = mdb_dbi_open(txn, g->name, 0, &dbi);
		if (rc == 0)
			rc = mdb_get(txn, dbi, &ik, &iv);
		if (rc == 0) {
			upsert(g, &ik, &iv);
			r->items_read++;
		} else if (rc == MDB_NOTFOUND) { /* the key, or the whole database, is gone */
			delete (g, p.keys[i].key, p.keys[i].klen);
			rc = 0;
		}
	}
	pending_free(&p);
	return rc;
}

static int begin(MDB_env *env, MDB_txn **txn)
{
	int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, txn);
	if (rc == MDB_MAP_RESIZED) {
		mdb_env_set_mapsize(env, 0);
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, txn);
	}
	return rc;
}

int cache_reader_poll(struct cache_reader *r)
{
	r->how = CR_NOTHING;
	r->why_full[0] = '\0';
	r->items_read = r->groups_reread = 0;
	MDB_txn *txn;
	int rc = begin(r->env, &txn);
	if (rc)
		return rc;
	MDB_dbi meta;
	unsigned long long gen = 0, from = 0;
	int has_gen = 0, has_from = 0;
	rc = mdb_dbi_open(txn, GW_CACHE_META_DB, 0, &meta);
	if (rc == 0) {
		has_gen = get_meta(txn, meta, GW_CACHE_KEY_GENERATION, &gen);
		has_from = get_meta(txn, meta, GW_CACHE_KEY_CHANGES_FROM, &from);
	} else if (rc != MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return rc;
	}
	rc = 0;
	if (r->loaded && has_gen && gen == r->gen) {
		mdb_txn_abort(txn);
		return 0;
	}
	int whole = 1;
	if (!r->loaded)
		snprintf(r->why_full, sizeof r->why_full, "first load");
	else if (!has_gen || gen < r->gen)
		snprintf(r->why_full, sizeof r->why_full, "generation went back");
	else if (!has_from)
		snprintf(r->why_full, sizeof r->why_full, "no log");
	else if (from > r->gen + 1)
		snprintf(r->why_full, sizeof r->why_full, "behind the log (%llu, log from %llu)",
		         r->gen, from);
	else if ((rc = incremental(r, txn, gen)) == 0)
		whole = 0;
	if (whole && (rc == 0 || rc == UNUSABLE))
		rc = full(r, txn);
	mdb_txn_abort(txn);
	if (rc == 0) {
		r->gen = gen;
		r->loaded = 1;
	}
	return rc;
}

int cache_reader_same(const struct cache_reader *a, const struct cache_reader *b, char *diff,
                      size_t cap)
{
	if (a->n_groups != b->n_groups) {
		snprintf(diff, cap, "%zu groups against %zu", a->n_groups, b->n_groups);
		return 0;
	}
	for (size_t i = 0; i < a->n_groups; i++) {
		const struct cr_group *x = &a->groups[i], *y = &b->groups[i];
		for (size_t j = 0; j < x->n || j < y->n; j++) {
			if (j >= x->n || j >= y->n) {
				snprintf(diff, cap, "%s: %zu items against %zu", x->name, x->n,
				         y->n);
				return 0;
			}
			if (keycmp(x->v[j].key, x->v[j].klen, y->v[j].key, y->v[j].klen) ||
			    keycmp(x->v[j].val, x->v[j].vlen, y->v[j].val, y->v[j].vlen)) {
				snprintf(diff, cap, "%s item %zu: %.60s=%.60s against %.60s=%.60s",
				         x->name, j, x->v[j].key, x->v[j].val, y->v[j].key,
				         y->v[j].val);
				return 0;
			}
		}
	}
	return 1;
}

void cache_reader_free(struct cache_reader *r)
{
	for (size_t i = 0; i < r->n_groups; i++) {
		clear(&r->groups[i]);
		free(r->groups[i].v);
	}
	free(r->groups);
	memset(r, 0, sizeof *r);
}
