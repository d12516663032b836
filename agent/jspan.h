/*
 * Byte spans of JSON values inside a document jansson has already validated. jansson
 * gives us values, not their text; the file plugin and the diff need each item's raw JSON
 * exactly as the admin sent it (escapes, number spelling, key order). Rather than
 * re-serialising (slow, and never byte-exact) we walk the original text once.
 * Inputs are assumed well-formed; on anything unexpected the functions return NULL/-1
 * instead of reading past `end`.
 */
#ifndef GW_JSPAN_H
#define GW_JSPAN_H

#include <stddef.h>

/* First non-whitespace byte at or after p (end if none). */
const char *jspan_ws(const char *p, const char *end);

/* p at the first byte of a value: returns the byte after it, or NULL. */
const char *jspan_skip(const char *p, const char *end);

/* p at '{': the value of member `key` (first byte), or NULL if absent or malformed. Keys
 * written with escapes are compared after decoding. */
const char *jspan_member(const char *p, const char *end, const char *key);

/* p at '[': calls fn(ctx, index, start, len) for each element in order. Returns the count,
 * or -1 if malformed or fn returned non-zero. */
long jspan_elements(const char *p, const char *end,
                    int (*fn)(void *ctx, size_t i, const char *start, size_t len), void *ctx);

#endif
