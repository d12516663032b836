/*
 * patch(previous, upserts, deletes) for event sources (see patch.h): the event's keys are
 * looked up in the held version's key index (a binary search each), which turns the event
 * into positional edits (replace where the key is held, append where it is not, remove),
 * and model/edit.h makes the version from them. A full list (MYSELF, a REFRESH that
 * replaces) is the parsed list itself, stamped.
 */
#include "model/patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "model/edit.h"
#include "model/groups.h"
#include "model/keys.h"
#include "model/model.h"

int model_parse_items(enum gw_group group, const char *text, size_t len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err)
{
	return model_parse_array(group, text, len, source, prev, out, err);
}

void model_stamp(struct group_data *gd, const struct group_data *prev, const char *source,
                 int64_t now_ms)
{
	int64_t t = now_ms;
	if (prev && t <= prev->last_modify_time)
		t = prev->last_modify_time + 1;
	gd->last_modify_time = t;
	gd->provisional = 0;
	snprintf(gd->server, sizeof gd->server, "%s", source ? source : "");
}

/* An edit and the order it was made in (edits at one position keep it). */
struct pending {
	struct edit e;
	size_t seq;
};

static int cmp_pending(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;
	if (x->e.at != y->e.at)
		return x->e.at < y->e.at ? -1 : 1;
	if ((x->e.op == EDIT_INSERT) != (y->e.op == EDIT_INSERT))
		return x->e.op == EDIT_INSERT ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Where key is in gd (an index of gd->items), or -1. */
static long position(const struct group_data *gd, const char *key)
{
	int found;
	size_t r = group_data_rank(gd, key, &found);
	return found ? (long)group_data_at(gd, r) : -1;
}

/* The held plugins an upsert renames: another key, the same id, and not upserted itself.
 * A linear look at the held list, made only for a group with an alias (PLUGIN: the
 * gateway's plugins, tens of items); the ids are read into `a`. */
static size_t renamed(const struct group_data *prev, const struct group_data *up,
                      const struct gd_item *u, struct pending *v, size_t nv, size_t *seq,
                      struct arena *a)
{
	const char *id = key_alias(GW_GROUP_PLUGIN, u, a);
	for (size_t j = 0; id && prev && j < prev->n_items; j++) {
		const struct gd_item *h = &prev->items[j];
		const char *hid = key_alias(GW_GROUP_PLUGIN, h, a);
		if (!hid || strcmp(hid, id) != 0 || gd_keycmp(h, u) == 0)
			continue;
		int upserted;
		group_data_rank_item(up, h, &upserted);
		if (!upserted)
			v[nv++] = (struct pending){{(size_t)j, EDIT_REMOVE, NULL}, (*seq)++};
	}
	return nv;
}

/* The event as edits of prev, sorted as model_edit wants them. NULL on out of memory. */
static struct edit *to_edits(const struct patch *p, size_t *n)
{
	const struct group_data *prev = p->prev, *up = p->upserts;
	size_t n_prev = prev ? prev->n_items : 0, n_up = up ? up->n_items : 0;
	int alias = p->group == GW_GROUP_PLUGIN;
	size_t cap = n_up + p->n_deletes + (alias ? n_up * n_prev : 0) + 1;
	struct pending *v = malloc(cap * sizeof *v);
	if (!v)
		return NULL;
	size_t nv = 0, seq = 0;
	struct arena ids;
	arena_init(&ids);
	for (size_t i = 0; i < n_up; i++) {
		const struct gd_item *u = &up->items[i];
		int found;
		size_t r = group_data_rank_item(prev, u, &found);
		long pos = found ? (long)group_data_at(prev, r) : -1;
		if (pos < 0)
			v[nv++] = (struct pending){{n_prev, EDIT_INSERT, u}, seq++};
		else if (!gd_same_json(&prev->items[pos], u))
			v[nv++] = (struct pending){{(size_t)pos, EDIT_REPLACE, u}, seq++};
		if (alias)
			nv = renamed(prev, up, u, v, nv, &seq, &ids);
	}
	arena_free(&ids);
	for (size_t i = 0; i < p->n_deletes; i++) {
		long pos = group_data_find(up, p->deletes[i]) ? -1 : position(prev, p->deletes[i]);
		if (pos >= 0)
			v[nv++] = (struct pending){{(size_t)pos, EDIT_REMOVE, NULL}, seq++};
	}
	qsort(v, nv, sizeof *v, cmp_pending);
	struct edit *e = malloc((nv ? nv : 1) * sizeof *e);
	size_t k = 0;
	for (size_t i = 0; e && i < nv; i++) {
		/* one removal per position (a key deleted twice, or deleted and renamed) */
		if (k && v[i].e.op == EDIT_REMOVE && e[k - 1].op == EDIT_REMOVE &&
		    e[k - 1].at == v[i].e.at)
			continue;
		e[k++] = v[i].e;
	}
	free(v);
	*n = k;
	return e;
}

int model_patch(const struct patch *p, struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	const struct group_data *prev = p->prev, *up = p->upserts;
	struct group_data *gd = NULL;
	int rc;
	if (p->replace) {
		if (!p->force && prev && model_same_items(prev, up))
			return 0;
		rc = model_whole(p->group, prev, up, &gd, err);
	} else {
		size_t n = 0;
		struct edit *e = to_edits(p, &n);
		if (!e)
			return gw_errf(err, "group %s: out of memory", gw_group_name(p->group));
		if (!n && !p->force) {
			free(e);
			return 0;
		}
		if (prev || up)
			rc = model_edit(prev, up, e, n, &gd, err);
		else
			rc = model_whole(p->group, NULL, NULL, &gd, err);
		free(e);
	}
	if (rc != 0)
		return -1;
	model_stamp(gd, prev, p->source, p->now_ms);
	gd->received_us = up && up->received_us ? up->received_us : gw_mono_us();
	*out = gd;
	return 0;
}
