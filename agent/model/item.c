/*
 * The compact item (item.h): making one, and its key as a C string for the few who need
 * one (messages, the journal's records).
 */
#include "model/item.h"

#include "core/jlex.h"
#include "core/jspan.h"

const char *gd_key_str(const struct gd_item *it, char *buf, size_t cap)
{
	size_t n;
	const char *k = gd_key(it, &n);
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, k, n);
	buf[n] = '\0';
	return buf;
}

char *gd_key_dup(const struct gd_item *it, struct arena *a)
{
	size_t n;
	const char *k = gd_key(it, &n);
	return arena_strndup(a, k, n);
}

int gd_item_plain(struct gd_item *it, const char *json, size_t len, const char *key, size_t klen)
{
	size_t off = (size_t)(key - json);
	if (len > GD_ITEM_MAX || klen >= (1u << GD_KEY_LEN_BITS) ||
	    off >= ((size_t)1 << (32 - GD_KEY_LEN_BITS)) - 1)
		return -1;
	it->json = json;
	it->json_len = (uint32_t)len;
	it->key = (uint32_t)(off << GD_KEY_LEN_BITS) | (uint32_t)klen;
	return 0;
}

int gd_item_keyed(struct gd_item *it, struct arena *a, const char *json, size_t len,
                  const char *key, size_t klen)
{
	if (len > GD_ITEM_MAX)
		return -1;
	char *p = arena_alloc_align(a, len + klen + 2, 1);
	if (!p)
		return -1;
	memcpy(p, json, len);
	p[len] = '\0';
	memcpy(p + len + 1, key, klen);
	p[len + 1 + klen] = '\0';
	it->json = p;
	it->json_len = (uint32_t)len;
	it->key = GD_KEY_AFTER;
	return 0;
}

int gd_item_copy(struct gd_item *dst, struct arena *a, const struct gd_item *src, const char *json)
{
	if (src->key == GD_KEY_AFTER) {
		size_t klen;
		const char *k = gd_key(src, &klen);
		return gd_item_keyed(dst, a, src->json, src->json_len, k, klen);
	}
	if (!json && !(json = arena_strndup(a, src->json, src->json_len)))
		return -1;
	*dst = *src;
	dst->json = json;
	return 0;
}

const char *gd_item_member(const struct gd_item *it, const char *member, size_t *raw)
{
	const char *end = it->json + it->json_len;
	const char *v = jspan_member(it->json, end, member);
	if (!v || v >= end || *v != '"')
		return NULL;
	int esc = 0;
	const char *q = jlex_string_end(v + 1, end, &esc);
	if (!q)
		return NULL;
	*raw = (size_t)(q - v - 2);
	return v + 1;
}

char *gd_item_decode(const char *v, size_t raw, char *out)
{
	out[jlex_decode(v, v + raw, out)] = '\0';
	return out;
}

const char *gd_item_text(const struct gd_item *it, const char *member, char *buf, size_t cap)
{
	size_t raw;
	const char *v = gd_item_member(it, member, &raw);
	return v && raw < cap ? gd_item_decode(v, raw, buf) : NULL;
}
