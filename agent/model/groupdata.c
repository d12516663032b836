/*
 * Reference counting and key index of a group version (see groupdata.h). The index is a
 * sorted array of item positions: diffing two versions is then a merge of two sorted
 * lists, O(n), with no hash table to allocate.
 */
#include "model/groupdata.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/search.h"

struct group_data *group_data_new(enum gw_group group)
{
	struct group_data *gd = calloc(1, sizeof *gd);
	if (!gd)
		return NULL;
	atomic_init(&gd->refs, 1);
	gd->group = group;
	arena_init(&gd->arena);
	arena_init(&gd->lazy);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	gd->born = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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
	for (size_t i = 0; i < gd->n_pools; i++)
		gd_pool_unref(gd->pools[i]);
	free(gd->heap_items);
	free(gd->heap_pool);
	free(gd->abi_items);
	htab_free(&gd->abi);
	if (gd->keys && atomic_fetch_sub_explicit(&gd->keys->refs, 1, memory_order_acq_rel) == 1)
		free(gd->keys);
	arena_free(&gd->arena);
	arena_free(&gd->lazy);
	free(gd);
}

struct gd_pool *gd_pool_new(void)
{
	struct gd_pool *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	arena_init(&s->arena);
	arena_init(&s->lazy);
	return s;
}

struct gd_pool *gd_pool_wrap(char *text, size_t len)
{
	struct gd_pool *s = gd_pool_new();
	if (s) {
		s->text = text;
		s->text_len = len;
	}
	return s;
}

char *gd_pool_unwrap(struct gd_pool *s)
{
	char *text = s->text;
	s->text = NULL;
	gd_pool_unref(s);
	return text;
}

size_t gd_pool_bytes(const struct gd_pool *s)
{
	return s->arena.total + (s->text ? s->text_len : 0) +
	       (s->text_of && s->text_of->text ? s->text_of->text_len : 0);
}

void group_data_seal(struct group_data *gd, const struct gd_pool *text)
{
	if (!text || !text->text)
		return;
	const char *lo = text->text, *hi = text->text + text->text_len;
	for (size_t i = 0; i < gd->n_items; i++) {
		const char *j = gd->items[i].json;
		if (j >= lo && j < hi) /* the text is ours (see .h): written through its owner */
			text->text[(size_t)(j - lo) + gd->items[i].json_len] = '\0';
	}
}

struct gd_pool *gd_pool_ref(struct gd_pool *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}

void gd_pool_unref(struct gd_pool *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	arena_free(&s->arena);
	htab_free(&s->abi);
	arena_free(&s->lazy);
	free(s->text);
	gd_pool_unref(s->text_of);
	free(s);
}

uint32_t *group_data_new_index(struct group_data *gd, size_t n)
{
	struct gd_keys *k = malloc(sizeof *k + (n ? n : 1) * sizeof k->pos[0]);
	if (!k)
		return NULL;
	atomic_init(&k->refs, 1);
	if (gd->keys && atomic_fetch_sub_explicit(&gd->keys->refs, 1, memory_order_acq_rel) == 1)
		free(gd->keys);
	gd->keys = k;
	return gd->by_key = k->pos;
}

int group_data_share_index(struct group_data *gd, const struct group_data *from)
{
	gd->by_key = NULL;
	if (!from->by_key)
		return 0;
	if (from->keys) {
		atomic_fetch_add_explicit(&from->keys->refs, 1, memory_order_relaxed);
		gd->keys = from->keys;
		gd->by_key = from->by_key;
		return 0;
	}
	if (!group_data_new_index(gd, from->n_items))
		return -1;
	memcpy(gd->by_key, from->by_key, from->n_items * sizeof *gd->by_key);
	return 0;
}

/* qsort_r (glibc's, _GNU_SOURCE): the index itself is sorted, by the keys of the items it
 * names, so no array of (key, index) pairs is made beside it (1.7 MB at 111,040 items). */
static int cmp_at(const void *a, const void *b, void *ctx)
{
	const struct group_data *gd = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = gd_keycmp(&gd->items[x], &gd->items[y]);
	return c ? c : (x > y) - (x < y);
}

enum gd_index group_data_index(struct group_data *gd, size_t *dup)
{
	size_t n = gd->n_items, i = 1;
	gd->by_key = NULL;
	/* an admin usually sends a group in key order: no index to make then */
	while (i < n && gd_keycmp(&gd->items[i - 1], &gd->items[i]) < 0)
		i++;
	if (i >= n)
		return GD_INDEX_DISTINCT;
	if (!group_data_new_index(gd, n))
		return GD_INDEX_NO_MEMORY;
	for (i = 0; i < n; i++)
		gd->by_key[i] = (uint32_t)i;
	qsort_r(gd->by_key, n, sizeof *gd->by_key, cmp_at, gd);
	for (i = 1; i < n; i++) {
		uint32_t a = gd->by_key[i - 1], b = gd->by_key[i];
		if (gd_keycmp(&gd->items[a], &gd->items[b]) == 0) {
			if (dup)
				*dup = a > b ? a : b;
			return GD_INDEX_DUPLICATE;
		}
	}
	return GD_INDEX_DISTINCT;
}

/* The key looked for, with its length measured once. */
struct sought {
	const char *p;
	size_t n;
};

static int key_cmp(const void *list, size_t rank, const void *key)
{
	const struct group_data *gd = list;
	const struct sought *k = key;
	size_t n;
	const char *have = gd_key(&gd->items[group_data_at(gd, rank)], &n);
	return gd_keycmp_span(have, n, k->p, k->n);
}

size_t group_data_rank(const struct group_data *gd, const char *key, int *found)
{
	struct sought k = {key, strlen(key)};
	return gw_search_rank(gd ? gd->n_items : 0, key_cmp, gd, &k, found);
}

size_t group_data_rank_item(const struct group_data *gd, const struct gd_item *it, int *found)
{
	struct sought k;
	k.p = gd_key(it, &k.n);
	return gw_search_rank(gd ? gd->n_items : 0, key_cmp, gd, &k, found);
}

const struct gd_item *group_data_find(const struct group_data *gd, const char *key)
{
	int found;
	size_t r = group_data_rank(gd, key, &found);
	return found ? &gd->items[group_data_at(gd, r)] : NULL;
}

const struct gd_delta *group_data_delta(const struct group_data *to, const struct group_data *from)
{
	if (!to || !from || to->delta.pred != from || to->delta.pred_born != from->born)
		return NULL;
	return &to->delta;
}
