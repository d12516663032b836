/*
 * Reference counting and key index of a group version (see groupdata.h). The index is a
 * sorted array of item positions: diffing two versions is then a merge of two sorted
 * lists, O(n), with no hash table to allocate.
 */
#include "model/groupdata.h"

#include <stdlib.h>
#include <string.h>

struct group_data *group_data_new(enum gw_group group)
{
	struct group_data *gd = calloc(1, sizeof *gd);
	if (!gd)
		return NULL;
	atomic_init(&gd->refs, 1);
	gd->group = group;
	arena_init(&gd->arena);
	return gd;
}

struct group_data *group_data_ref(struct group_data *gd)
{
	if (gd)
		atomic_fetch_add_explicit(&gd->refs, 1, memory_order_relaxed);
	return gd;
}

void group_data_unref(struct group_data *gd)
{
	if (!gd || atomic_fetch_sub_explicit(&gd->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (size_t i = 0; i < gd->n_stores; i++)
		gd_store_unref(gd->stores[i]);
	free(gd->heap_items);
	arena_free(&gd->arena);
	free(gd);
}

struct gd_store *gd_store_new(void)
{
	struct gd_store *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	arena_init(&s->arena);
	return s;
}

struct gd_store *gd_store_wrap(char *text, size_t len)
{
	struct gd_store *s = gd_store_new();
	if (s) {
		s->text = text;
		s->text_len = len;
	}
	return s;
}

char *gd_store_unwrap(struct gd_store *s)
{
	char *text = s->text;
	s->text = NULL;
	gd_store_unref(s);
	return text;
}

size_t gd_store_bytes(const struct gd_store *s)
{
	return s->arena.total + (s->text ? s->text_len : 0) +
	       (s->text_of && s->text_of->text ? s->text_of->text_len : 0);
}

void group_data_seal(struct group_data *gd, const struct gd_store *text)
{
	if (!text || !text->text)
		return;
	const char *lo = text->text, *hi = text->text + text->text_len;
	for (size_t i = 0; i < gd->n_items; i++) {
		const char *j = gd->items[i].json;
		if (j >= lo && j < hi)
			((char *)j)[gd->items[i].json_len] = '\0'; /* the text is ours: see .h */
	}
}

struct gd_store *gd_store_ref(struct gd_store *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

void gd_store_unref(struct gd_store *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	arena_free(&s->arena);
	free(s->text);
	gd_store_unref(s->text_of);
	free(s);
}

/* qsort has no context argument in C11; sort (key pointer, index) pairs instead. */
struct keyed {
	const char *key;
	uint32_t idx;
};

static int cmp_keyed(const void *a, const void *b)
{
	const struct keyed *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

int group_data_link(struct group_data *gd)
{
	gd->item_ptrs =
	    arena_alloc(&gd->arena, (gd->n_items ? gd->n_items : 1) * sizeof *gd->item_ptrs);
	if (!gd->item_ptrs)
		return -1;
	for (size_t i = 0; i < gd->n_items; i++) {
		gd->items[i].size = sizeof gd->items[i];
		gd->item_ptrs[i] = &gd->items[i];
	}
	return 0;
}

enum gd_index group_data_index(struct group_data *gd, size_t *dup)
{
	gd->by_key = arena_alloc(&gd->arena, (gd->n_items ? gd->n_items : 1) * sizeof *gd->by_key);
	if (!gd->by_key || group_data_link(gd) < 0)
		return GD_INDEX_NO_MEMORY;
	if (gd->n_items == 0)
		return GD_INDEX_DISTINCT;
	struct keyed *tmp = malloc(gd->n_items * sizeof *tmp);
	if (!tmp)
		return GD_INDEX_NO_MEMORY;
	int sorted = 1;
	for (size_t i = 0; i < gd->n_items; i++) {
		tmp[i].key = gd->items[i].key;
		tmp[i].idx = (uint32_t)i;
		if (i && sorted && strcmp(tmp[i - 1].key, tmp[i].key) >= 0)
			sorted = 0;
	}
	if (!sorted)
		qsort(tmp, gd->n_items, sizeof *tmp, cmp_keyed);
	enum gd_index result = GD_INDEX_DISTINCT;
	for (size_t i = 0; i < gd->n_items; i++) {
		gd->by_key[i] = tmp[i].idx;
		if (i && result == GD_INDEX_DISTINCT && strcmp(tmp[i - 1].key, tmp[i].key) == 0) {
			result = GD_INDEX_DUPLICATE;
			if (dup)
				*dup = tmp[i - 1].idx > tmp[i].idx ? tmp[i - 1].idx : tmp[i].idx;
		}
	}
	free(tmp);
	return result;
}

size_t group_data_rank(const struct group_data *gd, const char *key, int *found)
{
	size_t lo = 0, hi = gd ? gd->n_items : 0;
	*found = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(gd->items[gd->by_key[mid]].key, key);
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

const struct gw_item *group_data_find(const struct group_data *gd, const char *key)
{
	int found;
	size_t r = group_data_rank(gd, key, &found);
	return found ? &gd->items[gd->by_key[r]] : NULL;
}
