/*
 * The direct item decoder (itemdec.h). Hand-written because no library fills C structs
 * from JSON text without an intermediate tree, and that tree was the measured hot spot of
 * a full sync: jansson allocating and freeing a node for every value of every item
 * (malloc and free were the top symbols; bench/README.md, issue 13).
 *
 * Two steps per item, so that it refuses exactly what the reference refuses, with the
 * same message:
 *  1. walk(): one pass over the whole text that accepts exactly what jansson's
 *     json_loadb(JSON_REJECT_DUPLICATES) accepts: the grammar, the tokens (core/jlex.c:
 *     strings with their control characters, escapes, \u surrogate pairs, no \u0000,
 *     strict UTF-8; numbers with no leading zeros, integers within int64, reals that do
 *     not overflow), duplicate keys (after decoding) in every object, at most 2048
 *     nested values; and no NUL byte
 *     (jansson skips one right after a number or a literal; the reference refuses it too,
 *     itemref.c says why). It records where the value of each top-level member the
 *     group's table names begins (and, for strings, ends; for arrays, how many elements
 *     they hold). Any failure here is "not JSON", which the reference reports before
 *     anything else; the message then comes from jansson, on that error path only.
 *  2. fill(): the table's fields in table order from those spans, as the reference walks
 *     them, so the first wrong field is the one it names. The text is known valid here:
 *     nested lists are walked without checks, strings without escapes are one copy.
 * Both steps iterate over the text (no recursion on its nesting).
 */
#include "model/itemdec.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jlex.h"
#include "core/jspan.h"
#include "model/keys.h"

#define MAX_DEPTH 2048 /* jansson's JSON_PARSER_MAX_DEPTH: nested values, the item's own 1 */
#define MAX_SLOTS 16   /* the most fields of one table (SELECTOR's 15) */
_Static_assert(MAX_DEPTH == JSON_PARSER_MAX_DEPTH, "the nesting limit is jansson's");

/* A member's value as walk() found it. */
struct slot {
	const char *v;    /* its first byte; NULL: the member is absent */
	const char *vend; /* strings: the byte after the closing quote */
	size_t count;     /* arrays: the number of elements; SIZE_MAX: not counted */
	int esc;          /* strings: holds an escape (else its bytes are its value) */
};

/* A key of an open object, for the duplicate check: in the text when it has no escape,
 * else decoded into kbuf at `off` (kbuf moves when it grows). */
struct kref {
	const char *p;
	size_t off, len;
};

struct level {
	char close;   /* '}' or ']' */
	size_t keys;  /* the object's first key in keys[] */
	size_t kbuf;  /* and kbuf's length when it opened */
	size_t count; /* values begun in it */
};

/* What one group's items are walked for: its table, or for the newer groups (no typed
 * fields) the key fields and "name". */
struct dshape {
	const struct field *f;
	size_t n;
	int key[2]; /* slot of each key field; -1: none */
	int name;   /* slot of the display name (newer groups) */
	struct field own[3];
};

struct itemdec {
	struct level *lv;
	size_t n_lv, cap_lv;
	struct kref *keys;
	size_t n_keys, cap_keys;
	char *kbuf;
	size_t kbuf_len, kbuf_cap;
	char *kstr; /* itemdec_check's key, NUL-terminated */
	size_t kstr_cap;
	struct dshape shapes[GW_GROUP_COUNT];
};

static int field_index(const struct field *f, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp(f[i].json, name) == 0)
			return (int)i;
	return -1;
}

struct itemdec *itemdec_new(void)
{
	struct itemdec *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		struct dshape *s = &d->shapes[g];
		const struct group_shape *sh = fields_group((enum gw_group)g);
		if (sh->fields) {
			s->f = sh->fields;
			s->n = sh->n_fields;
		} else {
			for (size_t i = 0; i < 2 && key_field((enum gw_group)g, i); i++) {
				const char *k = key_field((enum gw_group)g, i);
				s->own[s->n++] = (struct field){k, strlen(k), K_STR, 0, 0};
			}
			s->own[s->n++] = (struct field){"name", 4, K_STR, 0, 0};
			s->f = s->own;
		}
		for (size_t i = 0; i < 2; i++)
			s->key[i] = field_index(s->f, s->n, key_field((enum gw_group)g, i));
		s->name = sh->fields ? -1 : field_index(s->f, s->n, "name");
	}
	return d;
}

void itemdec_free(struct itemdec *d)
{
	if (!d)
		return;
	free(d->lv);
	free(d->keys);
	free(d->kbuf);
	free(d->kstr);
	free(d);
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The slot of the field whose JSON name is the (decoded) key, or -1. */
static int match(const struct field *f, size_t n, const char *k, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].json_len == len && memcmp(f[i].json, k, len) == 0)
			return (int)i;
	return -1;
}

/* ------------------------------------------------------------------ step 1: walk */

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *n = realloc(*v, c * size);
	if (!n)
		return -1;
	*v = n;
	*cap = c;
	return 0;
}

static const char *key_bytes(const struct itemdec *d, const struct kref *k)
{
	return k->p ? k->p : d->kbuf + k->off;
}

static int cmp_kref(const void *a, const void *b)
{
	const struct kref *x = a, *y = b;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->p, y->p, x->len);
}

/* The keys of the object closing now are all different (after decoding). A handful are
 * compared pair by pair; many are sorted, so a huge object costs n log n, not n². */
static int keys_distinct(struct itemdec *d, size_t from)
{
	size_t n = d->n_keys - from;
	if (n < 2)
		return 1;
	struct kref *k = d->keys + from;
	if (n <= 16) {
		for (size_t i = 1; i < n; i++)
			for (size_t j = 0; j < i; j++)
				if (k[i].len == k[j].len &&
				    memcmp(key_bytes(d, &k[i]), key_bytes(d, &k[j]), k[i].len) == 0)
					return 0;
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		k[i].p = key_bytes(d, &k[i]); /* kbuf no longer moves for these */
	qsort(k, n, sizeof *k, cmp_kref);
	for (size_t i = 1; i < n; i++)
		if (cmp_kref(&k[i - 1], &k[i]) == 0)
			return 0;
	return 1;
}

/* p at a key's opening quote: the key onto the stack; the byte after its closing quote,
 * or NULL. *slot: the field it names in a top-level object (else -1). */
static const char *key(struct itemdec *d, const char *p, const char *end, const struct dshape *s,
                       int top, int *slot)
{
	int esc = 0;
	const char *q = jlex_string_end(p + 1, end, &esc);
	if (!q || grow((void **)&d->keys, &d->cap_keys, d->n_keys + 1, sizeof *d->keys) != 0)
		return NULL;
	struct kref *k = &d->keys[d->n_keys++];
	size_t raw = (size_t)(q - 1 - (p + 1));
	if (!esc) {
		*k = (struct kref){p + 1, 0, raw};
	} else {
		if (grow((void **)&d->kbuf, &d->kbuf_cap, d->kbuf_len + raw, 1) != 0)
			return NULL;
		size_t n = jlex_decode(p + 1, q - 1, d->kbuf + d->kbuf_len);
		*k = (struct kref){NULL, d->kbuf_len, n};
		d->kbuf_len += n;
	}
	*slot = top ? match(s->f, s->n, key_bytes(d, k), k->len) : -1;
	return q;
}

/* The whole item as json_loadb(JSON_REJECT_DUPLICATES) reads it; slots filled for the
 * top-level members s names. 0, or -1 when jansson would refuse the text. One piece: a
 * loop over the tokens with an explicit stack of open containers (no recursion on admin
 * input), whose every case reads and writes that stack; it is the hottest loop of a parse. */
static int walk(struct itemdec *d, const char *p, const char *end, const struct dshape *s,
                struct slot *slots)
{
	int pend = -1; /* the slot whose value is being read (top level only) */
	d->n_lv = d->n_keys = d->kbuf_len = 0;
	struct level *top;
	p = jspan_ws(p, end);
	if (p >= end || (*p != '{' && *p != '['))
		return -1; /* no JSON_DECODE_ANY: the text is an object or an array */

value:
	if (p >= end || d->n_lv >= MAX_DEPTH)
		return -1;
	if (d->n_lv > 0)
		d->lv[d->n_lv - 1].count++;
	if (d->n_lv == 1 && pend >= 0)
		slots[pend].v = p;
	switch (*p) {
	case '{':
	case '[':
		if (grow((void **)&d->lv, &d->cap_lv, d->n_lv + 1, sizeof *d->lv) != 0)
			return -1;
		top = &d->lv[d->n_lv++];
		*top = (struct level){*p == '{' ? '}' : ']', d->n_keys, d->kbuf_len, 0};
		p = jspan_ws(p + 1, end);
		if (p < end && *p == top->close)
			goto close;
		if (top->close == ']')
			goto value;
		goto key;
	case '"': {
		int esc = 0;
		p = jlex_string_end(p + 1, end, &esc);
		if (d->n_lv == 1 && pend >= 0)
			slots[pend].esc = esc;
		break;
	}
	case 't':
		p = end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
		break;
	case 'f':
		p = end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
		break;
	case 'n':
		p = end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
		break;
	default:
		p = *p == '-' || is_digit(*p) ? jlex_number_end(p, end) : NULL;
		break;
	}
	if (!p)
		return -1;

after:
	if (d->n_lv == 0)
		return jspan_ws(p, end) == end ? 0 : -1; /* nothing after the item's value */
	if (d->n_lv == 1 && pend >= 0) {
		slots[pend].vend = p;
		pend = -1;
	}
	p = jspan_ws(p, end);
	if (p >= end)
		return -1;
	top = &d->lv[d->n_lv - 1];
	if (*p == ',') {
		p = jspan_ws(p + 1, end);
		if (top->close == ']')
			goto value;
		goto key;
	}
	if (*p != top->close)
		return -1;

close:
	top = &d->lv[d->n_lv - 1];
	if (top->close == '}') {
		if (!keys_distinct(d, top->keys))
			return -1;
		d->n_keys = top->keys;
		d->kbuf_len = top->kbuf;
	}
	if (d->n_lv == 2 && pend >= 0)
		slots[pend].count = top->count;
	d->n_lv--;
	p++;
	goto after;

key:
	if (p >= end || *p != '"')
		return -1;
	{
		int sl;
		p = key(d, p, end, s, d->n_lv == 1, &sl);
		if (!p)
			return -1;
		if (d->n_lv == 1)
			pend = sl;
	}
	p = jspan_ws(p, end);
	if (p >= end || *p != ':')
		return -1;
	p = jspan_ws(p + 1, end);
	goto value;
}

/* ------------------------------------------------------------------ step 2: fill */

static int64_t int_at(const char *v)
{
	int neg = *v == '-';
	uint64_t u = 0;
	for (v += neg; is_digit(*v); v++)
		u = u * 10 + (uint64_t)(*v - '0');
	return neg ? (int64_t)(0 - u) : (int64_t)u; /* two's complement: INT64_MIN too */
}

/* A string slot's value, NUL-terminated, in a. Without escapes one copy; with them the
 * raw bytes are copied and decoded in place (decoding never lengthens). */
static char *string_at(struct arena *a, const struct slot *s)
{
	size_t raw = (size_t)(s->vend - s->v - 2);
	char *out = arena_strndup(a, s->v + 1, raw);
	if (out && s->esc)
		out[jlex_decode(out, out + raw, out)] = '\0';
	return out;
}

/* A typed string: through the intern table when there is one (decoded first if it holds
 * escapes), else its own copy. */
static const char *typed_string(struct item_ctx *c, const struct slot *s)
{
	if (!c->intern)
		return string_at(c->mem, s);
	size_t raw = (size_t)(s->vend - s->v - 2);
	if (!s->esc)
		return intern_get(c->intern, c->mem, s->v + 1, raw);
	char small[256], *buf = raw <= sizeof small ? small : malloc(raw);
	if (!buf)
		return NULL;
	const char *out =
	    intern_get(c->intern, c->mem, buf, jlex_decode(s->v + 1, s->vend - 1, buf));
	if (buf != small)
		free(buf);
	return out;
}

/* Strings an item already has, for its typed view to point at instead of copies. */
struct reuse {
	int key_slot; /* the slot of a single-field key, or -1 */
	const char *key;
	int name_slot; /* the display name's slot, or -1 */
	const char *name;
};

/* A valid string at v: the byte after it; *esc set when it holds an escape. */
static const char *valid_string_end(const char *v, int *esc)
{
	const char *p = v + 1;
	while (*p != '"') {
		if (*p == '\\') {
			*esc = 1;
			p += 2;
		} else {
			p++;
		}
	}
	return p + 1;
}

/* A valid object at p ('{'): slots for the members f names; the byte after it. */
static const char *valid_object(const char *p, const char *end, const struct field *f, size_t n,
                                struct slot *slots)
{
	p = jspan_ws(p + 1, end);
	while (*p == '"') {
		int kesc = 0;
		const char *q = valid_string_end(p, &kesc);
		int i;
		if (!kesc) {
			i = match(f, n, p + 1, (size_t)(q - p - 2));
		} else { /* rare: an escaped key; the names in tables are short */
			char k[64];
			i = (size_t)(q - p - 2) <= sizeof k
			        ? match(f, n, k, jlex_decode(p + 1, q - 1, k))
			        : -1;
		}
		const char *v = jspan_ws(jspan_ws(q, end) + 1, end);
		int esc = 0;
		p = *v == '"' ? valid_string_end(v, &esc) : jspan_skip(v, end);
		if (i >= 0)
			slots[i] = (struct slot){v, p, SIZE_MAX, esc};
		p = jspan_ws(p, end);
		if (*p == ',')
			p = jspan_ws(p + 1, end);
	}
	return p + 1;
}

static int fill(struct item_ctx *c, const char *end, const struct field *fields, size_t n,
                const struct slot *slots, void *dst, const struct reuse *r);

/* A list of nested objects (conditions, params, paths) into an arena array (dst NULL:
 * only checked). */
static int fill_list(struct item_ctx *c, const char *end, const struct field *f,
                     const struct slot *s, void *dst)
{
	const struct list_shape *ls = fields_list(f->kind);
	if (*s->v != '[')
		return item_err_field(c, f->json, "array", item_text_type(s->v));
	size_t count = s->count;
	const char *p = jspan_ws(s->v + 1, end);
	if (count == SIZE_MAX) { /* a list inside a list: count its elements first */
		count = 0;
		for (const char *q = p; *q != ']'; count++) {
			q = jspan_ws(jspan_skip(q, end), end);
			if (*q == ',')
				q = jspan_ws(q + 1, end);
		}
	}
	unsigned char *items = dst && count ? arena_calloc(c->mem, count * ls->size) : NULL;
	if (dst && count && !items)
		return item_err_oom(c);
	for (size_t i = 0; i < count; i++) {
		if (*p != '{')
			return item_err_field(c, f->json, "array of objects", item_text_type(p));
		struct slot es[MAX_SLOTS] = {{0}};
		p = valid_object(p, end, ls->fields, ls->n, es);
		if (fill(c, end, ls->fields, ls->n, es, items ? items + i * ls->size : NULL,
		         NULL) != 0)
			return -1;
		p = jspan_ws(p, end);
		if (*p == ',')
			p = jspan_ws(p + 1, end);
	}
	if (!dst)
		return 0;
	*(void **)((char *)dst + f->off) = items;
	*(size_t *)((char *)dst + f->count_off) = count;
	return 0;
}

/* A K_STR_OR_NUM number's text. */
static const char *number_text(struct item_ctx *c, const char *v)
{
	char num[32];
	int len = snprintf(num, sizeof num, "%" PRId64, int_at(v));
	return c->intern ? intern_get(c->intern, c->mem, num, (size_t)len)
	                 : arena_strndup(c->mem, num, (size_t)len);
}

/* The fields in table order from their slots, with the reference's rules and messages.
 * The key's and the name's slots take the strings the item has (r, may be NULL). With dst
 * NULL the fields are only checked: the same verdicts and messages, nothing made. */
static int fill(struct item_ctx *c, const char *end, const struct field *fields, size_t n,
                const struct slot *slots, void *dst, const struct reuse *r)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		const struct slot *s = &slots[i];
		const char *v = s->v;
		char *slot = dst ? (char *)dst + f->off : NULL;
		int null = !v || *v == 'n';
		switch (f->kind) {
		case K_STR:
		case K_STR_OR_NUM: {
			const char *copy;
			if (null)
				break;
			if (*v == '"') {
				if (!slot)
					break;
				if (r && (int)i == r->key_slot)
					copy = r->key;
				else if (r && (int)i == r->name_slot && r->name)
					copy = r->name;
				else
					copy = typed_string(c, s);
			} else if (f->kind == K_STR_OR_NUM && item_text_is_int(v)) {
				if (!slot)
					break;
				copy = number_text(c, v);
			} else {
				return item_err_field(c, f->json, "string", item_text_type(v));
			}
			if (!copy)
				return item_err_oom(c);
			*(const char **)slot = copy;
			break;
		}
		case K_INT:
			if (null) {
				if (slot)
					*(int64_t *)slot = GW_INT_UNSET;
			} else if (item_text_is_int(v)) {
				if (slot)
					*(int64_t *)slot = int_at(v);
			} else {
				return item_err_field(c, f->json, "integer", item_text_type(v));
			}
			break;
		case K_BOOL:
			if (null) {
				if (slot)
					*(enum gw_bool *)slot = GW_UNSET;
			} else if (*v == 't' || *v == 'f') {
				if (slot)
					*(enum gw_bool *)slot = *v == 't' ? GW_TRUE : GW_FALSE;
			} else {
				return item_err_field(c, f->json, "boolean", item_text_type(v));
			}
			break;
		default:
			if (!null && fill_list(c, end, f, s, dst) != 0)
				return -1;
			break;
		}
	}
	return 0;
}

/* A key field's slot holds a non-empty string (what keys.c's key_of demands). */
static int key_present(const struct slot *s)
{
	return s->v && *s->v == '"' && s->vend - s->v > 2;
}

/* The item's key (keys.h) from its slots into c->mem; NULL with c->err set. */
static const char *item_key(struct item_ctx *c, enum gw_group g, const struct dshape *ds,
                            const struct slot *slots)
{
	for (size_t i = 0; i < 2 && ds->key[i] >= 0; i++)
		if (!key_present(&slots[ds->key[i]])) {
			item_err_missing_key(c, g, key_field(g, i));
			return NULL;
		}
	char *first = string_at(c->mem, &slots[ds->key[0]]);
	if (!first || ds->key[1] < 0) {
		if (!first)
			item_err_oom(c);
		return first;
	}
	char *second = string_at(c->mem, &slots[ds->key[1]]);
	size_t n1 = first ? strlen(first) : 0, ns = strlen(KEY_SEPARATOR);
	size_t n2 = second ? strlen(second) : 0;
	char *k = second ? arena_alloc(c->mem, n1 + ns + n2 + 1) : NULL;
	if (!k) {
		item_err_oom(c);
		return NULL;
	}
	memcpy(k, first, n1);
	memcpy(k + n1, KEY_SEPARATOR, ns);
	memcpy(k + n1 + ns, second, n2 + 1);
	return k;
}

int itemdec_item(struct itemdec *d, struct item_ctx *c, enum gw_group g, const char *raw,
                 size_t len, struct gw_item *it)
{
	const struct dshape *ds = &d->shapes[g];
	const char *end = raw + len;
	struct slot slots[MAX_SLOTS] = {{0}};
	if (walk(d, raw, end, ds, slots) != 0)
		return item_err_not_json(c, raw, len);
	if (*jspan_ws(raw, end) != '{')
		return item_err_not_object(c, "array");
	if (item_set_json(c, g, raw, len, it) != 0)
		return -1;
	const char *key = item_key(c, g, ds, slots);
	if (!key)
		return -1;
	it->key = c->key = key;

	const struct group_shape *sh = fields_group(g);
	if (!sh->fields) {
		const struct slot *nm = &slots[ds->name];
		if (nm->v && *nm->v == '"')
			it->name = string_at(c->mem, nm);
		return 0;
	}
	void *typed = c->untyped ? NULL : arena_calloc(c->mem, sh->size);
	if (!c->untyped && !typed)
		return item_err_oom(c);
	struct reuse r = {ds->key[1] < 0 ? ds->key[0] : -1, key, -1, NULL};
	if (fill(c, end, sh->fields, sh->n_fields, slots, typed, &r) != 0)
		return -1;
	int ni = fields_name_index(g);
	if (typed) {
		*(void **)((char *)it + sh->item_ptr_off) = typed;
		if (ni >= 0)
			it->name = *(const char **)((char *)typed + sh->fields[ni].off);
		return 0;
	}
	/* untyped: the display name alone, as the typed view would have it (checked above) */
	const struct slot *nm = ni >= 0 ? &slots[ni] : NULL;
	if (!nm || !nm->v || *nm->v == 'n')
		return 0;
	if (ni == r.key_slot)
		it->name = key;
	else
		it->name = *nm->v == '"' ? string_at(c->mem, nm) : number_text(c, nm->v);
	return it->name ? 0 : item_err_oom(c);
}

int itemdec_typed(struct itemdec *d, struct item_ctx *c, const struct gw_item *it, void **typed)
{
	enum gw_group g = it->group;
	const struct dshape *ds = &d->shapes[g];
	const struct group_shape *sh = fields_group(g);
	const char *end = it->json + it->json_len;
	struct slot slots[MAX_SLOTS] = {{0}};
	*typed = NULL;
	if (!sh->fields)
		return 0;
	c->key = it->key;
	if (walk(d, it->json, end, ds, slots) != 0) /* it was checked: a decoder bug */
		return item_err_not_json(c, it->json, it->json_len);
	void *t = arena_calloc(c->mem, sh->size);
	if (!t)
		return item_err_oom(c);
	struct reuse r = {ds->key[1] < 0 ? ds->key[0] : -1, it->key, fields_name_index(g),
	                  it->name};
	if (fill(c, end, sh->fields, sh->n_fields, slots, t, &r) != 0)
		return -1;
	*typed = t;
	return 0;
}

/* The key (keys.h) NUL-terminated in d->kstr: its field decoded, or its two joined by
 * KEY_SEPARATOR; *len its length. 0 or -1 (out of memory). */
static int key_text(struct itemdec *d, const struct dshape *ds, const struct slot *slots,
                    size_t *len)
{
	const struct slot *a = &slots[ds->key[0]], *b = ds->key[1] >= 0 ? &slots[ds->key[1]] : NULL;
	size_t na = (size_t)(a->vend - a->v - 2), nb = b ? (size_t)(b->vend - b->v - 2) : 0;
	size_t ns = b ? strlen(KEY_SEPARATOR) : 0;
	if (grow((void **)&d->kstr, &d->kstr_cap, na + ns + nb + 1, 1) != 0)
		return -1;
	size_t n = jlex_decode(a->v + 1, a->vend - 1, d->kstr); /* never lengthens */
	if (b) {
		memcpy(d->kstr + n, KEY_SEPARATOR, ns);
		n += ns;
		n += jlex_decode(b->v + 1, b->vend - 1, d->kstr + n);
	}
	d->kstr[n] = '\0';
	*len = n;
	return 0;
}

int itemdec_check(struct itemdec *d, struct item_ctx *c, enum gw_group g, const char *raw,
                  size_t len, struct itemdec_key *k)
{
	const struct dshape *ds = &d->shapes[g];
	const char *end = raw + len;
	struct slot slots[MAX_SLOTS] = {{0}};
	if (walk(d, raw, end, ds, slots) != 0)
		return item_err_not_json(c, raw, len);
	if (*jspan_ws(raw, end) != '{')
		return item_err_not_object(c, "array");
	for (size_t i = 0; i < 2 && ds->key[i] >= 0; i++)
		if (!key_present(&slots[ds->key[i]]))
			return item_err_missing_key(c, g, key_field(g, i));
	if (key_text(d, ds, slots, &k->len) != 0)
		return item_err_oom(c);
	const struct slot *first = &slots[ds->key[0]];
	k->str = c->key = d->kstr;
	k->plain = ds->key[1] < 0 && !first->esc;
	k->at = first->v + 1;
	const struct group_shape *sh = fields_group(g);
	return sh->fields ? fill(c, end, sh->fields, sh->n_fields, slots, NULL, NULL) : 0;
}
