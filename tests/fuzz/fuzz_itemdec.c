/*
 * libFuzzer target: the direct item decoder (model/itemdec.c) against the reference filler
 * it replaced (tests/unit/itemref.c: jansson's tree, then the tables). The first input byte picks
 * the group, the rest is the item's text. Both must give the same verdict, the same
 * message (so the same error class: not JSON, wrong shape, missing key) and, when they
 * accept, the same item: key, name, raw JSON and every typed field down to the nested
 * lists. The decoder is an optimisation, never a second set of rules: any difference
 * aborts.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fields.h"
#include "model/itemdec.h"
#include "../unit/itemref.h"
#include "model/groups.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_text(const char *a, const char *b)
{
	if (!a != !b || (a && strcmp(a, b) != 0))
		abort();
}

/* Two typed structs described by `fields`, field by field. */
static void same_fields(const struct field *fields, size_t n, const void *x, const void *y)
{
	for (size_t i = 0; i < n; i++) {
		const struct field *f = &fields[i];
		const char *a = (const char *)x + f->off, *b = (const char *)y + f->off;
		switch (f->kind) {
		case K_STR:
		case K_STR_OR_NUM:
			same_text(*(const char *const *)a, *(const char *const *)b);
			break;
		case K_INT:
			if (*(const int64_t *)a != *(const int64_t *)b)
				abort();
			break;
		case K_BOOL:
			if (*(const enum gw_bool *)a != *(const enum gw_bool *)b)
				abort();
			break;
		default: {
			const struct list_shape *ls = fields_list(f->kind);
			size_t na = *(const size_t *)((const char *)x + f->count_off);
			size_t nb = *(const size_t *)((const char *)y + f->count_off);
			const unsigned char *la = *(const void *const *)a,
			                    *lb = *(const void *const *)b;
			if (na != nb || !la != !lb || (na && !la))
				abort();
			for (size_t j = 0; j < na; j++)
				same_fields(ls->fields, ls->n, la + j * ls->size,
				            lb + j * ls->size);
		}
		}
	}
}

static void same_item(enum gw_group g, const struct gw_item *a, const struct gw_item *b)
{
	if (a->group != b->group || a->json_len != b->json_len ||
	    memcmp(a->json, b->json, a->json_len) != 0)
		abort();
	same_text(a->key, b->key);
	same_text(a->name, b->name);
	const struct group_shape *sh = fields_group(g);
	if (!a->plugin != !b->plugin || !a->selector != !b->selector || !a->rule != !b->rule ||
	    !a->app_auth != !b->app_auth || !a->meta != !b->meta)
		abort();
	if (sh->fields) {
		const void *ta = *(const void *const *)((const char *)a + sh->item_ptr_off);
		const void *tb = *(const void *const *)((const char *)b + sh->item_ptr_off);
		if (!ta || !tb)
			abort();
		same_fields(sh->fields, sh->n_fields, ta, tb);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum gw_group g = (enum gw_group)(data[0] % GW_GROUP_COUNT);
	const char *raw = (const char *)data + 1;
	size_t len = size - 1;
	struct group_data *gd_ref = group_data_new(g), *gd_dec = group_data_new(g);
	struct itemdec *dec = itemdec_new();
	if (!gd_ref || !gd_dec || !dec)
		abort();
	struct gw_err err_ref = {0}, err_dec = {0};
	int syn_ref = 0, syn_dec = 0;
	struct item_ctx ref = {.gd = gd_ref,
	                       .mem = &gd_ref->arena,
	                       .err = &err_ref,
	                       .group = gw_group_name(g),
	                       .index = 7,
	                       .syntax = &syn_ref};
	struct item_ctx dc = {.gd = gd_dec,
	                      .mem = &gd_dec->arena,
	                      .err = &err_dec,
	                      .group = gw_group_name(g),
	                      .index = 7,
	                      .syntax = &syn_dec};
	struct gw_item a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);

	int rc_ref = itemref_item(&ref, g, raw, len, &a);
	int rc_dec = itemdec_item(dec, &dc, g, raw, len, &b);
	/* twice on the same scratch: nothing of one item leaks into the next */
	struct gw_item b2;
	memset(&b2, 0, sizeof b2);
	struct gw_err err_dec2 = {0};
	int syn_dec2 = 0;
	struct item_ctx dc2 = {.gd = gd_dec,
	                       .mem = &gd_dec->arena,
	                       .err = &err_dec2,
	                       .group = gw_group_name(g),
	                       .index = 7,
	                       .syntax = &syn_dec2};
	int rc_dec2 = itemdec_item(dec, &dc2, g, raw, len, &b2);

	if (rc_ref != rc_dec || syn_ref != syn_dec || strcmp(err_ref.msg, err_dec.msg) != 0) {
		fprintf(stderr, "reference: %d %d '%s'\ndecoder:   %d %d '%s'\n", rc_ref, syn_ref,
		        err_ref.msg, rc_dec, syn_dec, err_dec.msg);
		abort();
	}
	if (rc_dec2 != rc_dec || syn_dec2 != syn_dec || strcmp(err_dec2.msg, err_dec.msg) != 0)
		abort();
	if (rc_ref == 0) {
		same_item(g, &a, &b);
		same_item(g, &a, &b2);
	}
	/* the check alone (what the model keeps: model/item.h) refuses exactly what the full
	 * decode refuses, with its message, and finds the same key, where it says it is */
	struct gw_err err_chk = {0};
	int syn_chk = 0;
	struct item_ctx ck = {.gd = gd_dec,
	                      .mem = &gd_dec->arena,
	                      .err = &err_chk,
	                      .group = gw_group_name(g),
	                      .index = 7,
	                      .syntax = &syn_chk};
	struct itemdec_key key;
	int rc_chk = itemdec_check(dec, &ck, g, raw, len, &key);
	if (rc_chk != rc_dec || syn_chk != syn_dec || strcmp(err_chk.msg, err_dec.msg) != 0)
		abort();
	if (rc_chk == 0 && (strlen(key.str) != key.len || strcmp(key.str, b.key) != 0 ||
	                    (key.plain && (key.at < raw || key.at + key.len > raw + len ||
	                                   memcmp(key.at, key.str, key.len) != 0))))
		abort();
	itemdec_free(dec);
	group_data_unref(gd_ref);
	group_data_unref(gd_dec);
	return 0;
}
