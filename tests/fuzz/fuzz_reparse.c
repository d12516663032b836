/*
 * libFuzzer target: the held-version path of the reply parser (model.c: items found
 * unchanged by a memcmp against the held version are shared, not walked or parsed;
 * jspan_array_next_same; a parse that keeps the reply's text). The input is two replies,
 * the held one and the next, split at the first NUL byte. The next reply parsed on the
 * held version, and into a kept copy of its text, must give exactly what a fresh parse of
 * it gives: the same verdict and the same items. Sharing is an optimisation, never a
 * second set of rules, so any difference aborts (and is a bug, like a crash or a leak).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "source/http/reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const enum gw_group all[] = {GW_GROUP_PLUGIN,
                                    GW_GROUP_SELECTOR,
                                    GW_GROUP_RULE,
                                    GW_GROUP_APP_AUTH,
                                    GW_GROUP_META_DATA,
                                    GW_GROUP_PROXY_SELECTOR,
                                    GW_GROUP_DISCOVER_UPSTREAM,
                                    GW_GROUP_AI_PROXY_API_KEY};

static void unref_all(struct group_data *v[GW_GROUP_COUNT])
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(v[g]);
}

/* The same verdict and, on success, the same items in the same order. */
static void assert_same(int rc_a, struct group_data *a[GW_GROUP_COUNT], int rc_b,
                        struct group_data *b[GW_GROUP_COUNT])
{
	if (rc_a != rc_b)
		abort();
	for (int g = 0; rc_a == 0 && g < GW_GROUP_COUNT; g++) {
		if (!a[g] != !b[g])
			abort();
		if (!a[g])
			continue;
		if (a[g]->n_items != b[g]->n_items || strcmp(a[g]->md5, b[g]->md5) != 0)
			abort();
		struct arena keys;
		arena_init(&keys);
		for (size_t i = 0; i < a[g]->n_items; i++) {
			/* the same text and key (names and views are read from the text) */
			const struct gd_item *x = &a[g]->items[i], *y = &b[g]->items[i];
			const char *key = gd_key_dup(y, &keys);
			if (x->json_len != y->json_len || strlen(y->json) != y->json_len ||
			    memcmp(x->json, y->json, x->json_len) != 0 || gd_keycmp(x, y) != 0 ||
			    !key || group_data_find(b[g], key) != y)
				abort();
		}
		arena_free(&keys);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(text, '\0', size);
	size_t held_len = nul ? (size_t)(nul - text) : size;
	const char *next = nul ? nul + 1 : text;
	size_t next_len = nul ? size - held_len - 1 : size;
	size_t n = GW_GROUP_COUNT;
	struct group_data *held[GW_GROUP_COUNT], *fresh[GW_GROUP_COUNT], *shared[GW_GROUP_COUNT],
	    *kept[GW_GROUP_COUNT];
	struct gw_err err;

	if (reply_parse_fetch(text, held_len, all, n, "fuzz", NULL, held, &err) != 0)
		memset(held, 0, sizeof held);
	int rc_fresh = reply_parse_fetch(next, next_len, all, n, "fuzz", NULL, fresh, &err);
	int rc_shared = reply_parse_fetch(next, next_len, all, n, "fuzz", held, shared, &err);
	assert_same(rc_fresh, fresh, rc_shared, shared);

	char *copy = malloc(next_len + 1);
	if (copy) {
		memcpy(copy, next, next_len);
		copy[next_len] = '\0';
		int rc_kept =
		    reply_parse_fetch_adopt(&copy, next_len, all, n, "fuzz", held, kept, &err);
		unref_all(held); /* what the new versions share must outlive the held ones */
		memset(held, 0, sizeof held);
		assert_same(rc_fresh, fresh, rc_kept, kept);
		if (rc_kept == 0)
			unref_all(kept);
		free(copy);
	}
	unref_all(held);
	if (rc_fresh == 0)
		unref_all(fresh);
	if (rc_shared == 0)
		unref_all(shared);
	return 0;
}
