/*
 * The agent's own item: 16 bytes, held by value in a version's list (groupdata.h), so a
 * million small items cost what their JSON costs plus 16 bytes each, not the 88-byte
 * struct gw_item of the ABI and a pointer to it (bench/README.md, "Issue 30 item 9").
 *
 * An item is its raw JSON (NUL-terminated at json[json_len], exactly as the admin sent it)
 * and where its key is: for the usual key, a plain JSON string of the item (no escape),
 * the offset and length of its bytes inside the JSON; for any other (escaped, made of two
 * fields like AI_PROXY_API_KEY's selectorId::proxyApiKey, or out of the offset's range),
 * GD_KEY_AFTER: the key, NUL-terminated, follows the JSON's NUL (the JSON is then a copy
 * in the item's pool). Everything else (the display name, the typed view, PLUGIN's id) is
 * read from the JSON when it is needed: the ABI's items are made from these on delivery
 * (model/abi.h). Two items are the same item when their JSON pointers are equal (versions
 * share unchanged items: the same bytes of the same pool).
 */
#ifndef GW_MODEL_ITEM_H
#define GW_MODEL_ITEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/arena.h"

struct gd_item {
	const char *json;
	uint32_t json_len;
	uint32_t key; /* (offset << GD_KEY_LEN_BITS) | length, or GD_KEY_AFTER */
};

#define GD_KEY_LEN_BITS 12
#define GD_KEY_AFTER    UINT32_MAX
/* The largest item JSON an item can hold (its length is 32 bits). */
#define GD_ITEM_MAX UINT32_MAX

/* The key's bytes (not NUL-terminated unless stored after the JSON) and their number. */
static inline const char *gd_key(const struct gd_item *it, size_t *len)
{
	if (it->key == GD_KEY_AFTER) {
		const char *k = it->json + it->json_len + 1;
		*len = strlen(k);
		return k;
	}
	*len = it->key & ((1u << GD_KEY_LEN_BITS) - 1);
	return it->json + (it->key >> GD_KEY_LEN_BITS);
}

/* Byte order of two keys, as strcmp orders NUL-terminated ones. */
static inline int gd_keycmp_span(const char *a, size_t na, const char *b, size_t nb)
{
	int c = memcmp(a, b, na < nb ? na : nb);
	return c ? c : (na > nb) - (na < nb);
}

static inline int gd_keycmp(const struct gd_item *a, const struct gd_item *b)
{
	size_t na, nb;
	const char *ka = gd_key(a, &na), *kb = gd_key(b, &nb);
	return gd_keycmp_span(ka, na, kb, nb);
}

/* The item's key against a NUL-terminated one. */
static inline int gd_keycmp_str(const struct gd_item *a, const char *key)
{
	size_t na;
	const char *ka = gd_key(a, &na);
	return gd_keycmp_span(ka, na, key, strlen(key));
}

/* The same item text: shared (one pointer) or byte-identical. */
static inline int gd_same_json(const struct gd_item *a, const struct gd_item *b)
{
	return a->json == b->json ||
	       (a->json_len == b->json_len && memcmp(a->json, b->json, a->json_len) == 0);
}

/* Whether `it` is one of the n items at `list` (compared as addresses: it may point
 * anywhere), and if so which: *at. */
static inline int gd_item_in(const struct gd_item *it, const struct gd_item *list, size_t n,
                             size_t *at)
{
	uintptr_t off = (uintptr_t)it - (uintptr_t)list;
	if (!list || off % sizeof *list || off / sizeof *list >= n)
		return 0;
	*at = off / sizeof *list;
	return 1;
}

/* The key NUL-terminated in buf (cut to cap - 1 bytes: for messages). Returns buf. */
const char *gd_key_str(const struct gd_item *it, char *buf, size_t cap);

/* The key NUL-terminated in arena a (whole). NULL on out of memory. */
char *gd_key_dup(const struct gd_item *it, struct arena *a);

/* A top-level string member of the item's JSON (e.g. "pluginName"): its raw bytes between
 * the quotes (still escaped; *raw of them), or NULL when it is absent or not a string. */
const char *gd_item_member(const struct gd_item *it, const char *member, size_t *raw);

/* Raw string bytes gd_item_member found, decoded into out (room for raw + 1 bytes: decoding
 * never lengthens), NUL-terminated. Returns out. */
char *gd_item_decode(const char *v, size_t raw, char *out);

/* A string member decoded into buf: NULL when it is absent, not a string, or longer than
 * cap - 1. What the typed view would hold, for the threads that never read one. */
const char *gd_item_text(const struct gd_item *it, const char *member, char *buf, size_t cap);

/* An item whose JSON is `json` (len bytes, NUL-terminated at json[len] by the time anyone
 * reads it) and whose key is the plain string [key, key + klen) inside it. 0, or -1 when
 * the key's place does not fit the encoding (then gd_item_keyed). */
int gd_item_plain(struct gd_item *it, const char *json, size_t len, const char *key, size_t klen);

/* An item with a copy of `json` in arena a and its key (klen bytes, any) stored after it.
 * 0, or -1 on out of memory. */
int gd_item_keyed(struct gd_item *it, struct arena *a, const char *json, size_t len,
                  const char *key, size_t klen);

/* src copied into arena a (its JSON, and its key when stored after it), or with `json`
 * non-NULL (the same bytes elsewhere: an adopted reply) pointing there when its key allows.
 * 0, or -1 on out of memory. */
int gd_item_copy(struct gd_item *dst, struct arena *a, const struct gd_item *src, const char *json);

#endif
