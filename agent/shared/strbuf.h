/*
 * A growable string, the one the agent builds text with (URLs, form bodies, headers, reply
 * bodies, expanded configuration values). Out of memory is sticky: once an append fails,
 * later appends do nothing and strbuf_finish() returns NULL, so a caller can build a whole
 * string and check once at the end. The text is always NUL-terminated once allocated.
 */
#ifndef GW_STRBUF_H
#define GW_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *p;
	size_t len, cap;
	int oom;
};

/* Append; 0, or -1 if out of memory (now or earlier). */
int strbuf_add(struct strbuf *b, const char *s, size_t n);
int strbuf_adds(struct strbuf *b, const char *s);
int strbuf_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Percent-encode everything but RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~): right
 * for a query component and for an application/x-www-form-urlencoded value. */
int strbuf_add_escaped(struct strbuf *b, const char *s);
/* Make room for `cap` bytes in all (the terminating NUL included) at once, when the final
 * size is known, instead of doubling up to it. 0 or -1. */
int strbuf_reserve(struct strbuf *b, size_t cap);
/* The NUL-terminated string (caller frees; "" if nothing was added), or NULL on out of
 * memory. Resets b. */
char *strbuf_finish(struct strbuf *b);
/* Free the text and start again. */
void strbuf_reset(struct strbuf *b);

#endif
