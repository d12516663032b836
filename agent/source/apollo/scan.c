/*
 * The walk of a full configs reply (see scan.h). Two passes over what the walk collects:
 * the first checks the whole reply and lists the members whose value differs from the
 * held one (spans into the reply), a set of every key seen finding a key given twice and,
 * when fewer held keys were seen than are held, the held keys that are gone; the second
 * hands those on and edits the held map. The set is the agent's hash table (core/htab.h)
 * over entries allocated in blocks, so an entry never moves.
 */
#include "source/apollo/scan.h"

#include <stdlib.h>
#include <string.h>

#include "core/htab.h"
#include "core/jlex.h"
#include "core/jspan.h"

#define BLOCK 4096

struct seen {
	struct htab_link link; /* first: the table's */
	const char *key;       /* decoded key bytes (in the reply, or in `own`) */
	size_t len;
};

struct block {
	struct block *next;
	size_t used;
	struct seen e[BLOCK];
};

/* A member whose value differs: spans into the reply. */
struct diff {
	const char *key; /* decoded (the reply's bytes, or a copy in `own`) */
	size_t klen;
	const char *value; /* raw, between the quotes */
	size_t vlen;
	int esc;
};

struct walk {
	struct htab set;
	struct block *blocks;
	struct diff *diffs;
	size_t n_diffs, cap_diffs;
	char **own; /* decoded keys and values we allocated */
	size_t n_own, cap_own;
	size_t matched; /* members whose key is held */
};

static int eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct seen *s = (const struct seen *)e;
	return s->len == len && memcmp(s->key, key, len) == 0;
}

static char *keep(struct walk *w, size_t len)
{
	if (w->n_own == w->cap_own) {
		size_t cap = w->cap_own ? 2 * w->cap_own : 16;
		char **grown = realloc(w->own, cap * sizeof *grown);
		if (!grown)
			return NULL;
		w->own = grown;
		w->cap_own = cap;
	}
	char *p = malloc(len ? len : 1);
	if (p)
		w->own[w->n_own++] = p;
	return p;
}

/* Add key to the set: 1 added, 0 already there (a key twice), -1 out of memory. */
static int see(struct walk *w, const char *key, size_t len)
{
	uint64_t h = htab_hash(key, len);
	if (htab_reserve(&w->set) != 0)
		return -1;
	struct htab_link **at = htab_find(&w->set, h, eq, key, len);
	if (*at)
		return 0;
	if (!w->blocks || w->blocks->used == BLOCK) {
		struct block *b = malloc(sizeof *b);
		if (!b)
			return -1;
		b->next = w->blocks;
		b->used = 0;
		w->blocks = b;
	}
	struct seen *s = &w->blocks->e[w->blocks->used++];
	s->key = key;
	s->len = len;
	htab_insert(&w->set, at, &s->link, h);
	return 1;
}

static int add_diff(struct walk *w, const char *key, size_t klen, const char *value, size_t vlen,
                    int esc)
{
	if (w->n_diffs == w->cap_diffs) {
		size_t cap = w->cap_diffs ? 2 * w->cap_diffs : 16;
		struct diff *grown = realloc(w->diffs, cap * sizeof *grown);
		if (!grown)
			return -1;
		w->diffs = grown;
		w->cap_diffs = cap;
	}
	w->diffs[w->n_diffs++] = (struct diff){key, klen, value, vlen, esc};
	return 0;
}

static void walk_free(struct walk *w)
{
	htab_free(&w->set);
	while (w->blocks) {
		struct block *next = w->blocks->next;
		free(w->blocks);
		w->blocks = next;
	}
	for (size_t i = 0; i < w->n_own; i++)
		free(w->own[i]);
	free(w->own);
	free(w->diffs);
}

/* The members of "configurations": 1 all taken, 0 not taken, -1 out of memory. */
static int walk_configurations(struct walk *w, const char *p, const char *end, json_t *held,
                               const char **after)
{
	struct jspan_iter it;
	struct jspan_member m;
	if (jspan_object_begin(&it, p, end) != 0)
		return 0;
	int r;
	while ((r = jspan_object_key(&it, &m)) == 1) {
		const char *key = m.key;
		size_t klen = m.key_len;
		if (!m.key_plain) { /* valid (jspan checked it), but with escapes or UTF-8 */
			char *d = keep(w, klen);
			if (!d)
				return -1;
			klen = jlex_decode(m.key, m.key + m.key_len, d);
			key = d;
		}
		if (*m.value != '"')
			return 0; /* not a string: reply.c refuses it with its message */
		int esc = 0;
		const char *vend = jlex_string_end(m.value + 1, end, &esc);
		if (!vend)
			return 0;
		jspan_object_done(&it, &m, vend);
		int s = see(w, key, klen);
		if (s <= 0)
			return s; /* a key twice: reply.c refuses it */
		const char *raw = m.value + 1;
		size_t rlen = (size_t)(vend - 1 - raw);
		json_t *was = json_object_getn(held, key, klen);
		if (was)
			w->matched++;
		if (was && !esc && json_string_length(was) == rlen &&
		    memcmp(json_string_value(was), raw, rlen) == 0)
			continue;
		if (was && esc) {
			/* decode to compare: an escaped value rarely changes, so the copy is
			 * kept only when it differs */
			char *d = malloc(rlen ? rlen : 1);
			if (!d)
				return -1;
			size_t dl = jlex_decode(raw, raw + rlen, d);
			int same = json_string_length(was) == dl &&
			           memcmp(json_string_value(was), d, dl) == 0;
			free(d);
			if (same)
				continue;
		}
		if (add_diff(w, key, klen, raw, rlen, esc) != 0)
			return -1;
	}
	if (r != 0)
		return 0;
	*after = it.p;
	return 1;
}

/* p at true, false or null: the byte after it, or NULL. (What follows is checked by the
 * walk: a ',' or '}' after whitespace.) */
static const char *literal_end(const char *p, const char *end)
{
	static const char *const lits[] = {"true", "false", "null"};
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(lits[i]);
		if ((size_t)(end - p) >= l && memcmp(p, lits[i], l) == 0)
			return p + l;
	}
	return NULL;
}

/* The top level: 1 taken (configurations walked, the release key found), 0 not. */
static int walk_reply(struct walk *w, const char *body, size_t len, json_t *held, const char **rk,
                      size_t *rk_len, int *rk_esc)
{
	const char *end = body + len;
	struct jspan_iter it;
	struct jspan_member m;
	if (jspan_object_begin(&it, jspan_ws(body, end), end) != 0)
		return 0;
	const char *names[16];
	size_t lens[16], n = 0;
	int have_conf = 0;
	*rk = NULL;
	int r;
	while ((r = jspan_object_key(&it, &m)) == 1) {
		if (!m.key_plain || n == 16)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (lens[i] == m.key_len && memcmp(names[i], m.key, m.key_len) == 0)
				return 0; /* a member twice */
		names[n] = m.key;
		lens[n++] = m.key_len;
		if (m.key_len == 14 && memcmp(m.key, "configurations", 14) == 0) {
			const char *after;
			int c = walk_configurations(w, m.value, end, held, &after);
			if (c <= 0)
				return c;
			jspan_object_done(&it, &m, after);
			have_conf = 1;
			continue;
		}
		if (*m.value == '{' || *m.value == '[')
			return 0; /* configurationChanges, or anything else: reply.c's */
		/* a scalar, checked as jansson checks it */
		const char *vend = NULL;
		int esc = 0;
		if (*m.value == '"')
			vend = jlex_string_end(m.value + 1, end, &esc);
		else if (*m.value == '-' || (*m.value >= '0' && *m.value <= '9'))
			vend = jlex_number_end(m.value, end);
		else
			vend = literal_end(m.value, end);
		if (!vend)
			return 0;
		if (m.key_len == 10 && memcmp(m.key, "releaseKey", 10) == 0) {
			if (*m.value != '"')
				return 0;
			*rk = m.value + 1;
			*rk_len = (size_t)(vend - 1 - *rk);
			*rk_esc = esc;
		}
		jspan_object_done(&it, &m, vend);
	}
	if (r != 0 || !have_conf || !*rk)
		return 0;
	/* nothing but whitespace after the reply */
	return jspan_ws(it.p, end) == end ? 1 : 0;
}

/* Hand on what differs and edit held: 0, or -1 (fn stopped, out of memory). */
static int apply(struct walk *w, json_t *held, apollo_diff_fn fn, void *ctx, long *changed)
{
	size_t held_n = json_object_size(held); /* before the new keys go in */
	for (size_t i = 0; i < w->n_diffs; i++) {
		const struct diff *d = &w->diffs[i];
		const char *v = d->value;
		size_t vl = d->vlen;
		char *dec = NULL;
		if (d->esc) {
			if (!(dec = malloc(vl ? vl : 1)))
				return -1;
			vl = jlex_decode(d->value, d->value + d->vlen, dec);
			v = dec;
		}
		json_t *js = json_stringn_nocheck(v, vl); /* jlex checked it as jansson does */
		int rc = -1;
		if (js && fn(ctx, d->key, d->klen, v, vl) != 0)
			json_decref(js);
		else if (js) /* takes js, even when it fails */
			rc = json_object_setn_new_nocheck(held, d->key, d->klen, js) == 0 ? 0 : -1;
		free(dec);
		if (rc != 0)
			return -1;
		(*changed)++;
	}
	if (w->matched >= held_n)
		return 0;
	/* fewer held keys came back than are held: find the ones gone (copied out: held is
	 * not changed while it is iterated) */
	size_t cap = held_n - w->matched, n = 0;
	char **gone = calloc(cap, sizeof *gone);
	size_t *glen = calloc(cap, sizeof *glen);
	int rc = gone && glen ? 0 : -1;
	const char *k;
	size_t klen;
	json_t *v;
	json_object_keylen_foreach(held, k, klen, v)
	{
		if (rc != 0 || n == cap)
			break;
		/* NULL: no slots, the reply had no key at all */
		struct htab_link **at = htab_find(&w->set, htab_hash(k, klen), eq, k, klen);
		if (at && *at)
			continue;
		if (!(gone[n] = malloc(klen ? klen : 1))) {
			rc = -1;
			break;
		}
		memcpy(gone[n], k, klen);
		glen[n++] = klen;
	}
	for (size_t i = 0; i < n; i++) {
		if (rc == 0 && (fn(ctx, gone[i], glen[i], NULL, 0) != 0 ||
		                json_object_deln(held, gone[i], glen[i]) != 0))
			rc = -1;
		else if (rc == 0)
			(*changed)++;
		free(gone[i]);
	}
	free(gone);
	free(glen);
	return rc;
}

int apollo_scan_release(const char *body, size_t len, json_t *held, apollo_diff_fn fn, void *ctx,
                        char **release_key, long *changed)
{
	*release_key = NULL;
	*changed = 0;
	struct walk w = {0};
	const char *rk;
	size_t rk_len = 0;
	int rk_esc = 0;
	int r = walk_reply(&w, body, len, held, &rk, &rk_len, &rk_esc);
	if (r == 1) {
		char *key = malloc(rk_len + 1);
		if (!key) {
			r = -1;
		} else {
			size_t n = rk_esc ? jlex_decode(rk, rk + rk_len, key) : rk_len;
			if (!rk_esc)
				memcpy(key, rk, rk_len);
			key[n] = '\0';
			if (memchr(key, '\0', n)) { /* jansson allows no NUL in a string anyway */
				free(key);
				r = 0;
			} else if (apply(&w, held, fn, ctx, changed) != 0) {
				free(key);
				r = -1;
			} else {
				*release_key = key;
			}
		}
	}
	walk_free(&w);
	return r;
}
