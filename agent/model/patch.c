/*
 * patch(previous, upserts, deletes) for event sources (see patch.h). The result's item
 * list is worked out on the items themselves; the new version is then made the one way
 * every version is made, by the model's parser over the items' raw JSON (items unchanged
 * since prev are copied, not parsed again), so keys, typed fields and their checks are
 * exactly those of a fetched version.
 */
#include "model/patch.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "model/model.h"
#include "model/groups.h"

void model_canonical_md5(const struct group_data *gd, char out[33])
{
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestInit_ex(ctx, EVP_md5(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		snprintf(out, 33, "%s", "00000000000000000000000000000000");
		return;
	}
	EVP_DigestUpdate(ctx, "[", 1);
	for (size_t i = 0; gd && i < gd->n_items; i++) {
		const struct gw_item *it = &gd->items[gd->by_key ? gd->by_key[i] : i];
		if (i)
			EVP_DigestUpdate(ctx, ",", 1);
		EVP_DigestUpdate(ctx, it->json, it->json_len);
	}
	EVP_DigestUpdate(ctx, "]", 1);
	EVP_DigestFinal_ex(ctx, sum, &n);
	EVP_MD_CTX_free(ctx);
	for (unsigned int i = 0; i < n && i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", sum[i]);
}

/* One group's items as the data object the model parses: {"G":{"md5":..,"data":[..]}}. */
static int parse_list(enum gw_group g, const struct gw_item *const *items, size_t n,
                      const char *array, size_t array_len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err)
{
	struct strbuf b = {0};
	size_t need = 64 + array_len;
	for (size_t i = 0; i < n; i++)
		need += items[i]->json_len + 1;
	strbuf_reserve(&b, need);
	strbuf_addf(&b, "{\"%s\":{\"md5\":\"0\",\"lastModifyTime\":0,\"data\":", gw_group_name(g));
	if (array) {
		strbuf_add(&b, array, array_len);
	} else {
		strbuf_add(&b, "[", 1);
		for (size_t i = 0; i < n; i++) {
			if (i)
				strbuf_add(&b, ",", 1);
			strbuf_add(&b, items[i]->json, items[i]->json_len);
		}
		strbuf_add(&b, "]", 1);
	}
	strbuf_add(&b, "}}", 2);
	size_t len = b.len;
	char *text = strbuf_finish(&b);
	if (!text)
		return gw_errf(err, "group %s: out of memory", gw_group_name(g));
	struct group_data *prevs[GW_GROUP_COUNT] = {NULL};
	struct group_data *got[GW_GROUP_COUNT] = {NULL};
	prevs[g] = (struct group_data *)prev; /* only read */
	int syntax = 0;
	int rc = model_parse_groups(text, len, &g, 1, source, prevs, got, &syntax, err);
	if (rc != 0 && syntax)
		model_syntax_error(text, len, "", err);
	free(text);
	if (rc != 0)
		return -1;
	got[g]->md5[0] = '\0';
	*out = got[g];
	return 0;
}

int model_parse_items(enum gw_group group, const char *text, size_t len, const char *source,
                      const struct group_data *prev, struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	/* the model's walk checks the array itself; the wrapper must not let text that is
	 * not one array close it early, so refuse anything that does not look like one */
	while (len && (*text == ' ' || *text == '\n' || *text == '\r' || *text == '\t'))
		text++, len--;
	while (len && (text[len - 1] == ' ' || text[len - 1] == '\n' || text[len - 1] == '\r' ||
	               text[len - 1] == '\t'))
		len--;
	if (len < 2 || text[0] != '[' || text[len - 1] != ']')
		return gw_errf(err, "group %s: 'data' must be an array", gw_group_name(group));
	return parse_list(group, NULL, 0, text, len, source, prev, out, err);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The result's item list (pointers into prev and upserts); *changed if it differs. */
static const struct gw_item **result_list(const struct patch *p, size_t *n, int *changed)
{
	const struct group_data *prev = p->prev, *up = p->upserts;
	size_t n_prev = prev ? prev->n_items : 0, n_up = up ? up->n_items : 0;
	const struct gw_item **v = malloc((n_prev + n_up + 1) * sizeof *v);
	const char **dels = p->n_deletes ? malloc(p->n_deletes * sizeof *dels) : NULL;
	if (!v || (p->n_deletes && !dels)) {
		free(v);
		free(dels);
		return NULL;
	}
	*n = 0;
	*changed = 0;
	if (p->replace) {
		for (size_t i = 0; i < n_up; i++)
			v[(*n)++] = &up->items[i];
		*changed = !prev || n_prev != n_up;
		for (size_t i = 0; !*changed && i < n_up; i++) {
			const struct gw_item *a = &prev->items[i], *b = &up->items[i];
			*changed = strcmp(a->key, b->key) != 0 || a->json_len != b->json_len ||
			           memcmp(a->json, b->json, a->json_len) != 0;
		}
		free(dels);
		return v;
	}
	if (dels) {
		memcpy(dels, p->deletes, p->n_deletes * sizeof *dels);
		qsort(dels, p->n_deletes, sizeof *dels, cmp_str);
	}
	for (size_t i = 0; i < n_prev; i++) {
		const struct gw_item *old = &prev->items[i];
		const struct gw_item *u = up ? group_data_find(up, old->key) : NULL;
		if (u) {
			v[(*n)++] = u;
			if (u->json_len != old->json_len || memcmp(u->json, old->json, u->json_len))
				*changed = 1;
		} else if (dels && bsearch(&old->key, dels, p->n_deletes, sizeof *dels, cmp_str)) {
			*changed = 1;
		} else {
			v[(*n)++] = old;
		}
	}
	for (size_t i = 0; i < n_up; i++)
		if (!prev || !group_data_find(prev, up->items[i].key)) {
			v[(*n)++] = &up->items[i];
			*changed = 1;
		}
	free(dels);
	return v;
}

int model_patch(const struct patch *p, struct group_data **out, struct gw_err *err)
{
	*out = NULL;
	size_t n;
	int changed;
	const struct gw_item **items = result_list(p, &n, &changed);
	if (!items)
		return gw_errf(err, "group %s: out of memory", gw_group_name(p->group));
	if (!changed && !p->force) {
		free(items);
		return 0;
	}
	/* the items are copied, not parsed again, from where most of them come: a full list
	 * from the upserts, anything else from prev */
	const struct group_data *from = p->replace && p->upserts ? p->upserts : p->prev;
	struct group_data *gd;
	int rc = parse_list(p->group, items, n, NULL, 0, p->source, from, &gd, err);
	free(items);
	if (rc != 0)
		return -1;
	model_canonical_md5(gd, gd->md5);
	if (!p->force && p->prev && strcmp(gd->md5, p->prev->md5) == 0) {
		group_data_unref(gd); /* the same items in another order */
		return 0;
	}
	int64_t t = p->now_ms;
	if (p->prev && t <= p->prev->last_modify_time)
		t = p->prev->last_modify_time + 1;
	gd->last_modify_time = t;
	*out = gd;
	return 0;
}
