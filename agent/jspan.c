/*
 * JSON span scanner (see jspan.h). A few dozen lines of pointer walking instead of a
 * second parser: strings are skipped honouring backslash escapes, containers by depth.
 */
#include "jspan.h"

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
		if (match)
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

long jspan_elements(const char *p, const char *end,
                    int (*fn)(void *ctx, size_t i, const char *start, size_t len), void *ctx)
{
	if (p >= end || *p != '[')
		return -1;
	p = jspan_ws(p + 1, end);
	size_t i = 0;
	while (p < end && *p != ']') {
		const char *v = jspan_skip(p, end);
		if (!v || fn(ctx, i, p, (size_t)(v - p)) != 0)
			return -1;
		i++;
		p = jspan_ws(v, end);
		if (p < end && *p == ',')
			p = jspan_ws(p + 1, end);
	}
	return p < end ? (long)i : -1;
}
