/*
 * The ABI-1 adapter (see abi1.h). Each change is copied into ABI-1 shapes for the length
 * of one apply(): one gw1_item per item of the new list, plus one per item that only the
 * old version holds (removed ones and the old side of updates), all pointing at the same
 * strings and typed views as the ABI-2 items; the delta's new items point at their places
 * in that array, found through a table of their addresses.
 */
#include "deliver/abi1.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const struct gw_host *up(const struct gw1_host *h)
{
	const struct abi1 *a = h->priv; /* the adapter, which holds the ABI-2 host */
	return a->host2;
}

static void h1_log(const struct gw1_host *h, enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	up(h)->logv(up(h), level, fmt, ap);
	va_end(ap);
}

static void h1_error(const struct gw1_host *h, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	up(h)->errorv(up(h), fmt, ap);
	va_end(ap);
}

static enum gw_config_result h1_string(const struct gw1_host *h, const struct gw_config *c,
                                       const char *key, const char **out)
{
	return up(h)->config_string(up(h), c, key, out);
}

static enum gw_config_result h1_int(const struct gw1_host *h, const struct gw_config *c,
                                    const char *key, int64_t *out)
{
	return up(h)->config_int(up(h), c, key, out);
}

static enum gw_config_result h1_bool(const struct gw1_host *h, const struct gw_config *c,
                                     const char *key, int *out)
{
	return up(h)->config_bool(up(h), c, key, out);
}

static enum gw_config_result h1_duration(const struct gw1_host *h, const struct gw_config *c,
                                         const char *key, int64_t *out)
{
	return up(h)->config_duration_ms(up(h), c, key, out);
}

static enum gw_config_result h1_mode(const struct gw1_host *h, const struct gw_config *c,
                                     const char *key, unsigned *out)
{
	return up(h)->config_mode(up(h), c, key, out);
}

static int64_t h1_now(const struct gw1_host *h)
{
	return up(h)->now_ms(up(h));
}

/* ---------------------------------------------------------------- the face */

static int face_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct abi1 *a = *state; /* the loader passes the adapter in */
	a->state = NULL;
	if (a->desc->init) {
		int rc = a->desc->init(&a->host, config, &a->state);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static void copy_item(struct gw1_item *d, const struct gw_item *s)
{
	d->group = s->group;
	d->key = s->key;
	d->name = s->name;
	d->json = s->json;
	d->json_len = s->json_len;
	d->plugin = s->plugin;
	d->selector = s->selector;
	d->rule = s->rule;
	d->app_auth = s->app_auth;
	d->meta = s->meta;
}

/* Where the new list's items are in it, for the delta's new items: a small open-addressed
 * table of their addresses (the new list is an array of pointers to items that live
 * anywhere), so mapping costs one probe per item of the list and per delta entry. */
struct slots {
	const struct gw_item **key;
	size_t *at;
	size_t mask;
};

static size_t slot_of(const struct slots *t, const struct gw_item *it)
{
	size_t h = ((uintptr_t)it >> 3) * 0x9E3779B97F4A7C15ull;
	for (h &= t->mask; t->key[h] && t->key[h] != it; h = (h + 1) & t->mask)
		;
	return h;
}

static int slots_init(struct slots *t, const struct gw_change *c)
{
	size_t want = 2 * (c->n_added + c->n_updated) + 2, cap = 4;
	while (cap < want)
		cap *= 2;
	t->mask = cap - 1;
	t->key = calloc(cap, sizeof *t->key);
	t->at = malloc(cap * sizeof *t->at);
	if (!t->key || !t->at)
		return -1;
	for (size_t i = 0; i < c->n_added; i++)
		t->key[slot_of(t, c->added[i])] = c->added[i];
	for (size_t i = 0; i < c->n_updated; i++)
		t->key[slot_of(t, c->updated[i].new_item)] = c->updated[i].new_item;
	for (size_t i = 0; i <= t->mask; i++)
		t->at[i] = SIZE_MAX;
	return 0;
}

static void slots_free(struct slots *t)
{
	free(t->key);
	free(t->at);
}

/* The ABI-1 item for `it`: its slot in the new list if it is one, else a fresh copy (an
 * old item: only pointer identity is lost). */
static const struct gw1_item *map_item(const struct slots *t, struct gw1_item *items,
                                       struct gw1_item *extra, size_t *n_extra,
                                       const struct gw_item *it)
{
	size_t h = slot_of(t, it);
	if (t->key[h] == it && t->at[h] != SIZE_MAX)
		return &items[t->at[h]];
	copy_item(&extra[*n_extra], it);
	return &extra[(*n_extra)++];
}

static int face_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
	struct abi1 *a = state;
	size_t n_old = c->n_removed + c->n_updated;
	size_t n_items = c->n_items + n_old;
	size_t n_ptrs = c->n_added + c->n_removed;
	struct gw1_item *items = malloc((n_items + 1) * sizeof *items);
	const struct gw1_item **ptrs = malloc((n_ptrs + 1) * sizeof *ptrs);
	struct gw1_update *upd = malloc((c->n_updated + 1) * sizeof *upd);
	struct slots t = {0};
	if (!items || !ptrs || !upd || slots_init(&t, c) != 0) {
		free(items);
		free(ptrs);
		free(upd);
		slots_free(&t);
		host->error(host, "out of memory adapting the change to ABI 1");
		return -1;
	}
	for (size_t i = 0; i < c->n_items; i++) {
		copy_item(&items[i], c->items[i]);
		size_t h = slot_of(&t, c->items[i]);
		if (t.key[h] == c->items[i])
			t.at[h] = i;
	}
	struct gw1_item *extra = items + c->n_items;
	size_t n_extra = 0;
	for (size_t i = 0; i < c->n_added; i++)
		ptrs[i] = map_item(&t, items, extra, &n_extra, c->added[i]);
	for (size_t i = 0; i < c->n_removed; i++)
		ptrs[c->n_added + i] = map_item(&t, items, extra, &n_extra, c->removed[i]);
	for (size_t i = 0; i < c->n_updated; i++) {
		upd[i].old_item = map_item(&t, items, extra, &n_extra, c->updated[i].old_item);
		upd[i].new_item = map_item(&t, items, extra, &n_extra, c->updated[i].new_item);
	}
	struct gw1_change c1 = {
	    .group = c->group,
	    .group_name = c->group_name,
	    .version = c->version,
	    .previous = c->previous,
	    .items = items,
	    .n_items = c->n_items,
	    .added = ptrs,
	    .n_added = c->n_added,
	    .updated = upd,
	    .n_updated = c->n_updated,
	    .removed = ptrs + c->n_added,
	    .n_removed = c->n_removed,
	    .stale = c->stale,
	};
	if (!c1.previous.md5)
		c1.previous.last_modify_time = 0; /* what ABI 1 delivered on a first change */
	int rc = a->desc->apply(a->state, &c1);
	slots_free(&t);
	free(items);
	free(ptrs);
	free(upd);
	return rc;
}

static int64_t face_tick(void *state, const struct gw_host *host, int64_t now_ms)
{
	struct abi1 *a = state;
	return a->desc->tick ? a->desc->tick(a->state, now_ms) : -1;
}

static void face_fini(void *state, const struct gw_host *host)
{
	struct abi1 *a = state;
	if (a->desc->fini)
		a->desc->fini(a->state);
	a->state = NULL;
}

struct abi1 *abi1_new(const void *desc, const struct gw_host *host2)
{
	struct abi1 *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->desc = desc;
	a->face.abi = 1;
	a->face.size = sizeof a->face;
	a->face.name = a->desc->name;
	a->face.init = face_init;
	a->face.apply = a->desc->apply ? face_apply : NULL;
	a->face.tick = a->desc->tick ? face_tick : NULL;
	a->face.fini = face_fini;

	struct gw1_host *h = &a->host;
	h->abi = 1;
	h->agent_version = host2->agent_version;
	h->instance = host2->instance;
	h->log = h1_log;
	h->error = h1_error;
	h->config_string = h1_string;
	h->config_int = h1_int;
	h->config_bool = h1_bool;
	h->config_duration_ms = h1_duration;
	h->config_mode = h1_mode;
	h->now_ms = h1_now;
	a->host2 = host2;
	h->priv = a;
	return a;
}

void abi1_free(struct abi1 *a)
{
	free(a);
}
