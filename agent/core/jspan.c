/*
 * JSON span scanner (see jspan.h). A few dozen lines of pointer walking instead of a
 * second parser: strings are skipped honouring backslash escapes, containers by depth.
 */
#include "core/jspan.h"

#include <jansson.h>
#include <string.h>

const char *jspan_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p at '"': the byte after the closing quote. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		if (!q)
			return NULL;
		/* count backslashes before the quote: an even number means it closes */
		const char *b = q;
		while (b > p && b[-1] == '\\')
			b--;
		if (((q - b) & 1) == 0)
			return q + 1;
		p = q;
	}
	return NULL;
}

const char *jspan_skip(const char *p, const char *end)
{
	if (p >= end)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p != '{' && *p != '[') {
		while (p < end && !strchr(",]} \t\r\n", *p))
			p++;
		return p;
	}
	int depth = 0;
	while (p < end) {
		char c = *p;
		if (c == '"') {
			p = skip_string(p, end);
			if (!p)
				return NULL;
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']') {
			if (--depth == 0)
				return p + 1;
		}
		p++;
	}
	return NULL;
}

static int key_equals(const char *k, size_t klen, const char *key)
{
	if (!memchr(k, '\\', klen))
		return klen == strlen(key) && memcmp(k, key, klen) == 0;
	/* rare: an escaped key; let jansson decode the quoted token */
	json_t *s = json_loadb(k - 1, klen + 2, JSON_DECODE_ANY, NULL);
	int eq = json_is_string(s) && strcmp(json_string_value(s), key) == 0;
	json_decref(s);
	return eq;
}

const char *jspan_member(const char *p, const char *end, const char *key)
{
	if (p >= end || *p != '{')
		return NULL;
	p = jspan_ws(p + 1, end);
	while (p < end && *p == '"') {
		const char *kend = skip_string(p, end);
		if (!kend)
			return NULL;
		int match = key_equals(p + 1, (size_t)(kend - p - 2), key);
		p = jspan_ws(kend, end);
		if (p >= end || *p != ':')
			return NULL;
		p = jspan_ws(p + 1, end);
		if (match && p < end)
			return p;
		p = jspan_skip(p, end);
		if (!p)
			return NULL;
		p = jspan_ws(p, end);
		if (p < end && *p == ',')
			p = jspan_ws(p + 1, end);
	}
	return NULL;
}

static int begin(struct jspan_iter *it, const char *p, const char *end, char open)
{
	it->p = jspan_ws(p, end);
	it->end = end;
	it->n = 0;
	if (it->p >= end || *it->p != open)
		return -1;
	it->p++;
	return 0;
}

int jspan_object_begin(struct jspan_iter *it, const char *p, const char *end)
{
	return begin(it, p, end, '{');
}

int jspan_array_begin(struct jspan_iter *it, const char *p, const char *end)
{
	return begin(it, p, end, '[');
}

/* Before a member/element: '}'/']' closes (only if nothing came yet or after a value),
 * ',' separates. Returns 1 if another one follows, 0 if closed, -1 if malformed. */
static int step(struct jspan_iter *it, char close)
{
	const char *p = jspan_ws(it->p, it->end);
	if (p >= it->end)
		return -1;
	if (*p == close) {
		it->p = p + 1;
		return 0;
	}
	if (it->n > 0) {
		if (*p != ',')
			return -1;
		p = jspan_ws(p + 1, it->end);
		if (p >= it->end || *p == close)
			return -1; /* a trailing comma */
	}
	it->p = p;
	return 1;
}

int jspan_object_key(struct jspan_iter *it, struct jspan_member *m)
{
	int r = step(it, '}');
	if (r <= 0)
		return r;
	const char *p = it->p;
	if (*p != '"')
		return -1;
	const char *kend = skip_string(p, it->end);
	if (!kend)
		return -1;
	m->key = p + 1;
	m->key_len = (size_t)(kend - p - 2);
	m->key_plain = 1;
	for (size_t i = 0; i < m->key_len; i++) {
		unsigned char c = (unsigned char)m->key[i];
		if (c == '\\' || c < 0x20 || c >= 0x7f) {
			m->key_plain = 0;
			break;
		}
	}
	if (!m->key_plain) { /* rare: escapes or non-ASCII; make sure the key is valid */
		json_t *k = json_loadb(m->key - 1, m->key_len + 2, JSON_DECODE_ANY, NULL);
		int ok = json_is_string(k);
		json_decref(k);
		if (!ok)
			return -1;
	}
	p = jspan_ws(kend, it->end);
	if (p >= it->end || *p != ':')
		return -1;
	p = jspan_ws(p + 1, it->end);
	if (p >= it->end)
		return -1;
	m->value = p;
	m->value_len = 0;
	it->p = p;
	return 1;
}

int jspan_object_skip(struct jspan_iter *it, struct jspan_member *m)
{
	const char *vend = jspan_skip(m->value, it->end);
	if (!vend || vend == m->value)
		return -1;
	jspan_object_done(it, m, vend);
	return 0;
}

void jspan_object_done(struct jspan_iter *it, struct jspan_member *m, const char *vend)
{
	m->value_len = (size_t)(vend - m->value);
	it->p = vend;
	it->n++;
}

int jspan_object_next(struct jspan_iter *it, struct jspan_member *m)
{
	int r = jspan_object_key(it, m);
	if (r <= 0)
		return r;
	return jspan_object_skip(it, m) == 0 ? 1 : -1;
}

int jspan_array_next(struct jspan_iter *it, const char **value, size_t *len)
{
	int r = step(it, ']');
	if (r <= 0)
		return r;
	const char *vend = jspan_skip(it->p, it->end);
	if (!vend || vend == it->p)
		return -1;
	*value = it->p;
	*len = (size_t)(vend - it->p);
	it->p = vend;
	it->n++;
	return 1;
}

int jspan_key_is(const struct jspan_member *m, const char *key)
{
	if (m->key_plain)
		return m->key_len == strlen(key) && memcmp(m->key, key, m->key_len) == 0;
	json_t *s = json_loadb(m->key - 1, m->key_len + 2, JSON_DECODE_ANY, NULL);
	int r = json_is_string(s) ? strcmp(json_string_value(s), key) == 0 : -1;
	json_decref(s);
	return r;
}

int jspan_array_next_same(struct jspan_iter *it, const char *text, size_t len)
{
	if (len < 2 || (*text != '{' && *text != '['))
		return 0; /* only a container is sure to end where the old one ended */
	const char *saved = it->p;
	if (step(it, ']') != 1 || (size_t)(it->end - it->p) < len ||
	    memcmp(it->p, text, len) != 0) {
		it->p = saved;
		return 0;
	}
	it->p += len;
	it->n++;
	return 1;
}
