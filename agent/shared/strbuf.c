/*
 * The growable string (see strbuf.h). Capacity doubles from 64 bytes, so appending n bytes
 * one at a time costs O(n) in all.
 */
#include "shared/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int strbuf_reserve(struct strbuf *b, size_t cap)
{
	if (b->oom)
		return -1;
	if (cap <= b->cap)
		return 0;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static int grow(struct strbuf *b, size_t more)
{
	if (b->oom)
		return -1;
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < b->len + more + 1)
		cap *= 2;
	return strbuf_reserve(b, cap);
}

int strbuf_add(struct strbuf *b, const char *s, size_t n)
{
	if (grow(b, n) != 0)
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int strbuf_adds(struct strbuf *b, const char *s)
{
	return strbuf_add(b, s, strlen(s));
}

int strbuf_addf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || grow(b, (size_t)n) != 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int strbuf_add_escaped(struct strbuf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			strbuf_add(b, (const char *)p, 1);
		} else {
			char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
			strbuf_add(b, esc, 3);
		}
	}
	return b->oom ? -1 : 0;
}

char *strbuf_finish(struct strbuf *b)
{
	if (b->oom || grow(b, 0) != 0) {
		strbuf_reset(b);
		return NULL;
	}
	b->p[b->len] = '\0';
	char *p = b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void strbuf_reset(struct strbuf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
	b->oom = 0;
}
