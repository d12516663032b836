/*
 * Admin JSON -> typed, immutable group versions (see model.h).
 *
 * The reply is walked once, in place (jspan.h): envelope, groups, each group's item list.
 * Each item that differs from the held version is decoded straight into the version's
 * pool by the direct decoder (itemdec.h; the typed fields of the ABI are described by the
 * tables of fields.h); an item byte-identical to the held one is shared with it. A field
 * of the wrong type refuses the whole group version, naming group, item and field,
 * because a gateway must never run on half a version.
 *
 * Each item's raw JSON text is cut from the original body (jspan.h), not re-serialised,
 * so subscribers see exactly what the admin sent.
 */
#include "model/model.h"

#include <inttypes.h>
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/jspan.h"
#include "model/fields.h"
#include "model/groups.h"
#include "model/itemdec.h"
#include "model/keys.h"

static int copy_item(struct item_ctx *c, const struct gd_item *old, const char *raw,
                     struct gd_item *it)
{
	if (gd_item_copy(it, c->mem, old, c->adopt ? raw : NULL) != 0)
		return gw_errf(c->err, "group %s: out of memory", c->group);
	c->gd->json_bytes += old->json_len;
	return 0;
}

/* Where the previous version's item with the same key is, found without parsing (only
 * plain string keys; anything unusual returns -1 and takes the full path). */
static long same_key_pos(const struct group_data *prev, enum gw_group g, const char *raw,
                         size_t len)
{
	const char *field = key_single_field(g);
	if (!prev || !field)
		return -1;
	const char *v = jspan_member(raw, raw + len, field);
	if (!v || v >= raw + len || *v != '"')
		return -1;
	const char *q = memchr(v + 1, '"', (size_t)(raw + len - v - 1));
	if (!q || memchr(v + 1, '\\', (size_t)(q - v - 1)))
		return -1;
	char key[256];
	size_t klen = (size_t)(q - v - 1);
	if (klen == 0 || klen >= sizeof key)
		return -1;
	memcpy(key, v + 1, klen);
	key[klen] = '\0';
	int found;
	size_t r = group_data_rank(prev, key, &found);
	return found ? (long)group_data_at(prev, r) : -1;
}

/* A small scalar value span through jansson (validates it fully). */
static json_t *scalar(const char *v, size_t len)
{
	return json_loadb(v, len, JSON_DECODE_ANY, NULL);
}

/* The md5 tag travels back in the listener's "md5,time" form parameter, in snapshot files
 * and in log lines: only letters and digits (the admin's is hex) are safe in all three. */
static int valid_md5(const json_t *md5)
{
	if (!json_is_string(md5))
		return 0;
	const char *s = json_string_value(md5);
	size_t n = json_string_length(md5);
	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

/*
 * Building one version's item list. Items are compared with the held version (`prev`)
 * before anything is walked: the element at the cursor is first tried against prev's item
 * at the same position with jspan_array_next_same(), a memcmp of its text; equal bytes are
 * the same valid item, shared (its 16 bytes copied, pointing into prev's pool) without
 * scanning or parsing it. Only an element that differs is walked and parsed into the new
 * version's own pool; the cursor then moves past prev's item with the same key (or one
 * place on, when the key cannot be read without parsing), so an insertion, a removal or a
 * change costs one miss, not a miss for every item after it.
 */
struct build {
	struct item_ctx c;
	const struct group_data *prev;
	int share;                 /* prev's items can be shared (else they are copied) */
	int16_t map[GD_MAX_POOLS]; /* prev's pool index -> ours; -1: not adopted yet */
	struct gd_item *vec;       /* the items while the list grows */
	uint8_t *vst;              /* their pools */
	size_t cap, j;             /* j: the cursor in prev */
	int same_keys;             /* every item has the key prev has at its position */
	int presize;               /* a whole group: room for prev's count at once */
	struct itemdec *dec;       /* the decoder's scratch, made at the first item decoded */
};

/* Item j of prev as the next item (its text is at raw in the new reply): shared, or
 * copied when prev cannot be shared. */
static int take_old(struct build *b, size_t j, const char *raw, struct gd_item *it, uint8_t *st)
{
	const struct group_data *prev = b->prev;
	const struct gd_item *old = &prev->items[j];
	if (!b->share) {
		*st = 0;
		return copy_item(&b->c, old, raw, it);
	}
	uint8_t from = prev->item_pool[j];
	if (b->map[from] < 0) {
		struct group_data *gd = b->c.gd;
		gd->pools[gd->n_pools] = gd_pool_ref(prev->pools[from]);
		b->map[from] = (int16_t)gd->n_pools++;
	}
	*it = *old;
	*st = (uint8_t)b->map[from];
	b->c.gd->json_bytes += old->json_len;
	return 0;
}

static int parse_item(struct build *b, const char *raw, size_t len, struct gd_item *it, uint8_t *st,
                      long *k)
{
	struct item_ctx *c = &b->c;
	enum gw_group g = c->gd->group;
	*k = -1;
	if (*raw != '{')
		return item_err_not_object(c, item_text_type_at(raw, raw + len));
	long old = same_key_pos(b->prev, g, raw, len);
	if (old >= 0) {
		const struct gd_item *o = &b->prev->items[old];
		*k = old;
		if (o->json_len == len && memcmp(o->json, raw, len) == 0)
			return take_old(b, (size_t)old, raw, it, st);
	}
	*st = 0;
	if (!b->dec && !(b->dec = itemdec_new()))
		return item_err_oom(c);
	struct itemdec_key key;
	if (itemdec_check(b->dec, c, g, raw, len, &key) != 0)
		return -1;
	if (len > GD_ITEM_MAX)
		return gw_errf(c->err, "group %s item %zu: larger than %zu bytes", c->group,
		               c->index, (size_t)GD_ITEM_MAX);
	/* the usual key is a plain string inside the JSON, which stays where it is (adopted)
	 * or is copied once; any other key is kept after a copy of it (model/item.h) */
	const char *json = c->adopt ? raw : NULL;
	if (key.plain && !json && !(json = arena_strndup(c->mem, raw, len)))
		return item_err_oom(c);
	if (!key.plain || gd_item_plain(it, json, len, json + (key.at - raw), key.len) != 0) {
		if (gd_item_keyed(it, c->mem, raw, len, key.str, key.len) != 0)
			return item_err_oom(c);
	}
	c->gd->json_bytes += len;
	return 0;
}

static int grow(struct build *b)
{
	size_t cap = b->cap ? 2 * b->cap : 256;
	struct gd_item *v = realloc(b->vec, cap * sizeof *v);
	if (v)
		b->vec = v;
	uint8_t *s = v ? realloc(b->vst, cap) : NULL;
	if (!s)
		return gw_errf(b->c.err, "group %s: out of memory", b->c.group);
	b->vst = s;
	b->cap = cap;
	return 0;
}

/* The 'data' array at v ('['): its items into b->vec. The byte after it, or NULL. */
static const char *build_items(struct build *b, const char *v, const char *end)
{
	struct item_ctx *c = &b->c;
	const struct group_data *prev = b->prev;
	size_t n_prev = prev ? prev->n_items : 0;
	struct jspan_iter it;
	jspan_array_begin(&it, v, end);
	if (n_prev && b->presize) { /* room for the held count and a few more: a change
		                     * rarely adds many */
		b->cap = n_prev + 16;
		b->vec = malloc(b->cap * sizeof *b->vec);
		b->vst = malloc(b->cap);
		if (!b->vec || !b->vst) {
			gw_errf(c->err, "group %s: out of memory", c->group);
			return NULL;
		}
	}
	for (;;) {
		if (c->index == b->cap && grow(b) != 0)
			return NULL;
		struct gd_item *dst = &b->vec[c->index];
		uint8_t *st = &b->vst[c->index];
		size_t j = b->j;
		c->key = NULL;
		if (j < n_prev &&
		    jspan_array_next_same(&it, prev->items[j].json, prev->items[j].json_len) == 1) {
			if (take_old(b, j, it.p - prev->items[j].json_len, dst, st) != 0)
				return NULL;
			b->j = j + 1;
		} else if (j + 1 < n_prev &&
		           jspan_array_next_same(&it, prev->items[j + 1].json,
		                                 prev->items[j + 1].json_len) == 1) {
			/* prev's item j was removed */
			if (take_old(b, j + 1, it.p - prev->items[j + 1].json_len, dst, st) != 0)
				return NULL;
			b->j = j + 2;
		} else {
			const char *iv;
			size_t ilen;
			long k;
			int r = jspan_array_next(&it, &iv, &ilen);
			if (r == 0)
				break;
			if (r < 0) {
				*c->syntax = 1;
				gw_errf(c->err,
				        "group %s: invalid JSON in 'data' (malformed or truncated "
				        "array)",
				        c->group);
				return NULL;
			}
			if (parse_item(b, iv, ilen, dst, st, &k) != 0)
				return NULL;
			b->j = k >= 0 ? (size_t)k + 1 : j + 1;
		}
		b->same_keys = b->same_keys && c->index < n_prev &&
		               gd_keycmp(dst, &prev->items[c->index]) == 0;
		c->gd->n_items = ++c->index;
	}
	return it.p;
}

/* The built list into the version's arena and its key index (prev's when the keys are
 * prev's keys in prev's places). 0, or -1 with err set. */
static int build_finish(struct build *b)
{
	struct group_data *gd = b->c.gd;
	const char *gname = b->c.group;
	size_t n = gd->n_items;
	/* the list becomes the version's as it is (shrunk in place: no copy, no second
	 * array of 100,000 items at the peak of a full sync) */
	struct gd_item *items = b->vec ? realloc(b->vec, (n ? n : 1) * sizeof *items) : NULL;
	if (items)
		b->vec = NULL;
	gd->items = gd->heap_items = items;
	/* every item in pool 0 (a group parsed whole, usually): zeroed pages from calloc,
	 * which cost no memory until written (a byte per item: 1 MiB at 1,000,000) */
	size_t i = 0;
	while (i < n && !b->vst[i])
		i++;
	if (i == n)
		gd->item_pool = gd->heap_pool = calloc(n ? n : 1, 1);
	else if ((gd->item_pool = arena_alloc(&gd->arena, n)))
		memcpy(gd->item_pool, b->vst, n);
	if (!gd->items || !gd->item_pool)
		return gw_errf(b->c.err, "group %s: out of memory", gname);
	const struct group_data *prev = b->prev;
	if (b->same_keys && prev && n == prev->n_items) {
		/* none when prev is in key order: nor is this one */
		if (group_data_share_index(gd, prev) != 0)
			return gw_errf(b->c.err, "group %s: out of memory", gname);
		return 0;
	}
	size_t dup;
	enum gd_index ix = group_data_index(gd, &dup);
	if (ix == GD_INDEX_NO_MEMORY)
		return gw_errf(b->c.err, "group %s: out of memory", gname);
	if (ix == GD_INDEX_DUPLICATE) {
		char key[300], shown[300];
		gd_key_str(&gd->items[dup], key, sizeof key);
		return gw_errf(b->c.err,
		               "group %s: duplicate key '%s' (item %zu repeats an earlier item)",
		               gname, key_display(gd->group, key, shown, sizeof shown), dup);
	}
	return 0;
}

/* A pool that has kept many replaced items, or many pools: copy instead of sharing, so
 * the next version starts over with one pool holding exactly its items. */
static int shareable(const struct group_data *prev)
{
	if (!prev || prev->n_pools == 0 || prev->n_pools >= GD_MAX_POOLS)
		return 0;
	size_t held = 0;
	for (size_t i = 0; i < prev->n_pools; i++)
		held += gd_pool_bytes(prev->pools[i]);
	return held <= 4 * prev->json_bytes + (1u << 20);
}

/* A snapshot document's "group" member names `gname`. */
static int group_is(const json_t *grp, const char *gname)
{
	return json_is_string(grp) && strcmp(json_string_value(grp), gname) == 0;
}

/* A new version with its own pool (index 0) ready for items. */
static struct group_data *version_new(enum gw_group g)
{
	struct group_data *gd = group_data_new(g);
	if (!gd)
		return NULL;
	gd->pools = arena_alloc(&gd->arena, GD_MAX_POOLS * sizeof *gd->pools);
	if (!gd->pools || !(gd->pools[0] = gd_pool_new())) {
		group_data_unref(gd);
		return NULL;
	}
	gd->n_pools = 1;
	return gd;
}

/*
 * One ConfigData object starting at `text` (whitespace first is fine):
 * {"md5":..,"lastModifyTime":..,"data":[..]} (and, in snapshot files, "group"). With
 * `stop` NULL the object must fill [text, end); else text may follow it and *stop is the
 * byte after it. Items are parsed one at a time (or shared with `prev` when their text is
 * unchanged) while the 'data' member is walked, so no tree of the whole group is built and
 * its bytes are read once. *syntax is set when the failure is text that is not JSON (not
 * when it is JSON of the wrong shape), so the caller knows to ask jansson where it is.
 * One piece: one walk of the object's members, each case filling the version under
 * construction and the state the items' loop shares with them (the pool, the shared
 * items of prev, the position), freed at one exit.
 */
static int parse_config_text(enum gw_group g, const char *text, const char *end, const char **stop,
                             struct gd_pool *owner, const char *source,
                             const struct group_data *prev, struct group_data **out, int *syntax,
                             struct gw_err *err)
{
	const char *gname = gw_group_name(g);
	struct jspan_iter it;
	struct jspan_member m;
	const char *data = NULL;
	json_t *md5 = NULL, *lmt = NULL, *grp = NULL;
	int r, rc = -1;
	struct build b = {0};
	int64_t received = gw_mono_us();

	if (jspan_object_begin(&it, text, end) != 0)
		return gw_errf(err, "group %s: expected an object, got %s", gname,
		               jspan_ws(text, end) < end
		                   ? item_text_type_at(jspan_ws(text, end), end)
		                   : "nothing");
	b.c = (struct item_ctx){.err = err, .group = gname, .syntax = syntax};
	b.prev = prev;
	b.share = shareable(prev);
	/* a group parsed whole (nothing held to share) points into the reply's text instead
	 * of copying it: the text is then kept instead of a copy of 95% of it */
	b.c.adopt = owner && owner->text && !b.share && text >= owner->text &&
	            end <= owner->text + owner->text_len;
	b.same_keys = prev != NULL;
	b.presize = 1;
	for (size_t i = 0; i < GD_MAX_POOLS; i++)
		b.map[i] = -1;
	while ((r = jspan_object_key(&it, &m)) == 1) {
		json_t **slot = NULL;
		if (jspan_key_is(&m, "data") == 1) {
			if (data) {
				gw_errf(err, "group %s: duplicate key 'data'", gname);
				goto out;
			}
			data = m.value;
			if (*data != '[') { /* refused below, after the envelope's own checks */
				if (jspan_object_skip(&it, &m) != 0)
					break;
				continue;
			}
			if (!(b.c.gd = version_new(g))) {
				gw_errf(err, "group %s: out of memory", gname);
				goto out;
			}
			b.c.mem = &b.c.gd->pools[0]->arena;
			if (b.c.adopt)
				b.c.gd->pools[0]->text_of = gd_pool_ref(owner);
			const char *vend = build_items(&b, data, end);
			if (!vend)
				goto out;
			jspan_object_done(&it, &m, vend);
			continue;
		}
		if (jspan_object_skip(&it, &m) != 0)
			break;
		if (jspan_key_is(&m, "md5") == 1)
			slot = &md5;
		else if (jspan_key_is(&m, "lastModifyTime") == 1)
			slot = &lmt;
		else if (jspan_key_is(&m, "group") == 1)
			slot = &grp;
		json_t *v = scalar(m.value, m.value_len);
		if (!v || (slot && *slot)) {
			json_decref(v);
			*syntax = 1;
			gw_errf(err, "group %s: %s", gname, v ? "duplicate key" : "invalid JSON");
			goto out;
		}
		if (slot)
			*slot = v;
		else
			json_decref(v);                    /* unknown member: valid, ignored */
		if (slot == &grp && !group_is(grp, gname)) /* before its items are parsed */
			break;
	}
	if (grp && !group_is(grp, gname)) {
		gw_errf(err, "group %s: the document says it is group %s", gname,
		        json_is_string(grp) ? json_string_value(grp) : "(not a string)");
		goto out;
	}
	if (r != 0 || (!stop && jspan_ws(it.p, end) != end)) {
		*syntax = 1;
		gw_errf(err, "group %s: invalid JSON (malformed or truncated object)", gname);
		goto out;
	}
	if (!valid_md5(md5)) {
		gw_errf(err, "group %s: 'md5' must be 1 to 64 letters and digits", gname);
		goto out;
	}
	if (!json_is_integer(lmt)) {
		gw_errf(err, "group %s: 'lastModifyTime' must be an integer, got %s", gname,
		        lmt ? item_json_type(lmt) : "nothing");
		goto out;
	}
	if (!data || *data != '[') {
		gw_errf(err, "group %s: 'data' must be an array, got %s", gname,
		        data ? item_text_type_at(data, end) : "nothing");
		goto out;
	}
	struct group_data *gd = b.c.gd;
	snprintf(gd->md5, sizeof gd->md5, "%s", json_string_value(md5));
	gd->last_modify_time = json_integer_value(lmt);
	snprintf(gd->server, sizeof gd->server, "%s", source ? source : "");
	gd->received_us = received;
	if (build_finish(&b) != 0)
		goto out;
	if (stop)
		*stop = it.p;
	*out = gd;
	b.c.gd = NULL;
	rc = 0;
out:
	free(b.vec);
	free(b.vst);
	itemdec_free(b.dec);
	json_decref(md5);
	json_decref(lmt);
	json_decref(grp);
	group_data_unref(b.c.gd);
	return rc;
}

/* On a syntax error the streaming walk knows that, not where: ask jansson for the position
 * (this whole-document parse happens only on the error path). */
int model_syntax_error(const char *text, size_t len, const char *prefix, struct gw_err *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (root) { /* the walk is stricter than jansson (e.g. text after the value) */
		json_decref(root);
		return -1;
	}
	return gw_errf(err, "%sinvalid JSON at line %d column %d: %s", prefix, je.line, je.column,
	               je.text);
}

/* Which of want[] is group name `m`'s key; -1 if none. */
static int wanted(const struct jspan_member *m, const enum gw_group *want, size_t n_want)
{
	for (size_t i = 0; i < n_want; i++)
		if (jspan_key_is(m, gw_group_name(want[i])) == 1)
			return (int)i;
	return -1;
}

/* The data object walked member by member, each wanted group through parse_config_text()
 * (which walks its value once, in place), the others validated and ignored. */
static int parse_groups(const char *data, const char *end, const char **stop, struct gd_pool *owner,
                        const enum gw_group *want, size_t n_want, const char *source,
                        struct group_data *const prev[GW_GROUP_COUNT],
                        struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		out[g] = NULL;
	*syntax = 0;
	const char *p = jspan_ws(data, end);
	struct jspan_iter it;
	struct jspan_member m;
	int r, rc = -1;

	if (p == end || *p != '{') {
		/* a value that is not an object, or nothing at all (then the text is not JSON) */
		*syntax = p == end;
		return gw_errf(err, "'data' must be an object keyed by group, got %s",
		               p < end ? item_text_type_at(p, end) : "nothing");
	}
	jspan_object_begin(&it, p, end);
	while ((r = jspan_object_key(&it, &m)) == 1) {
		int i = wanted(&m, want, n_want);
		if (i < 0) {
			json_t *v = NULL; /* validated, then ignored */
			if (jspan_object_skip(&it, &m) != 0 ||
			    !(v = scalar(m.value, m.value_len))) {
				*syntax = 1;
				gw_errf(err, "invalid JSON in an unrequested group");
				goto out;
			}
			json_decref(v);
			continue;
		}
		enum gw_group g = want[i];
		if (out[g]) {
			gw_errf(err, "group %s: appears twice in the reply", gw_group_name(g));
			goto out;
		}
		const char *vend;
		if (parse_config_text(g, m.value, end, &vend, owner, source, prev ? prev[g] : NULL,
		                      &out[g], syntax, err) != 0)
			goto out;
		jspan_object_done(&it, &m, vend);
	}
	if (r < 0 || (!stop && jspan_ws(it.p, end) != end)) {
		*syntax = 1;
		gw_errf(err, "invalid JSON: malformed 'data' object");
		goto out;
	}
	for (size_t i = 0; i < n_want; i++)
		if (!out[want[i]]) {
			gw_errf(err, "group %s: missing from the reply", gw_group_name(want[i]));
			goto out;
		}
	if (stop)
		*stop = it.p;
	rc = 0;
out:
	if (rc != 0)
		for (int g = 0; g < GW_GROUP_COUNT; g++) {
			group_data_unref(out[g]);
			out[g] = NULL;
		}
	return rc;
}

int model_parse_groups(const char *data, size_t len, const enum gw_group *want, size_t n_want,
                       const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                       struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	return parse_groups(data, data + len, NULL, NULL, want, n_want, source, prev, out, syntax,
	                    err);
}

int model_parse_groups_at(const char *data, const char *end, const char **stop,
                          struct gd_pool *owner, const enum gw_group *want, size_t n_want,
                          const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                          struct group_data *out[GW_GROUP_COUNT], int *syntax, struct gw_err *err)
{
	return parse_groups(data, end, stop, owner, want, n_want, source, prev, out, syntax, err);
}

int model_parse_group(enum gw_group group, const char *text, size_t len, const char *source,
                      struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	int syntax = 0;
	if (parse_config_text(group, text, text + len, NULL, NULL, source, NULL, out, &syntax,
	                      err) == 0)
		return 0;
	if (syntax) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "group %s: ", gw_group_name(group));
		model_syntax_error(text, len, prefix, err);
	}
	return -1;
}

int model_parse_array(enum gw_group g, const char *text, size_t len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	const char *gname = gw_group_name(g), *end = text + len;
	const char *p = jspan_ws(text, end);
	int syntax = 0, rc = -1;
	if (p == end || *p != '[')
		return gw_errf(err, "group %s: 'data' must be an array", gname);
	struct build b = {0};
	b.c = (struct item_ctx){.err = err, .group = gname, .syntax = &syntax};
	b.prev = prev;
	b.share = shareable(prev);
	b.same_keys = prev != NULL;
	for (size_t i = 0; i < GD_MAX_POOLS; i++)
		b.map[i] = -1;
	if (!(b.c.gd = version_new(g))) {
		gw_errf(err, "group %s: out of memory", gname);
		goto out;
	}
	b.c.mem = &b.c.gd->pools[0]->arena;
	b.c.gd->received_us = gw_mono_us();
	const char *vend = build_items(&b, p, end);
	if (!vend)
		goto out;
	if (jspan_ws(vend, end) != end) {
		syntax = 1;
		gw_errf(err, "group %s: invalid JSON: text after the 'data' array", gname);
		goto out;
	}
	snprintf(b.c.gd->server, sizeof b.c.gd->server, "%s", source ? source : "");
	if (build_finish(&b) != 0)
		goto out;
	*out = b.c.gd;
	b.c.gd = NULL;
	rc = 0;
out:
	free(b.vec);
	free(b.vst);
	itemdec_free(b.dec);
	group_data_unref(b.c.gd);
	if (rc != 0 && syntax) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "group %s: ", gname);
		model_syntax_error(text, len, prefix, err);
	}
	return rc;
}
