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

/*
 * Strict walking of objects and arrays, for parsing a large document piece by piece: the
 * structure between values (braces, brackets, commas, colons, keys) is checked here; the
 * caller hands each value span to jansson, which checks the rest. Together every byte of
 * the document is validated, without ever building a tree of the whole of it.
 */
struct jspan_iter {
	const char *p, *end;
	int n; /* members/elements returned so far */
};

struct jspan_member {
	const char *key; /* the key's raw bytes between the quotes */
	size_t key_len;
	int key_plain; /* no escapes and printable ASCII: raw bytes are the key */
	const char *value;
	size_t value_len;
};

/* p at '{' (or '['): 0, or -1 if it is not. */
int jspan_object_begin(struct jspan_iter *it, const char *p, const char *end);
int jspan_array_begin(struct jspan_iter *it, const char *p, const char *end);
/* 1: a member/element; 0: the container closed (it->p is just after it); -1: malformed. */
int jspan_object_next(struct jspan_iter *it, struct jspan_member *m);
int jspan_array_next(struct jspan_iter *it, const char **value, size_t *len);

/*
 * Members whose value the caller walks itself, so a large value is read once, not first
 * skipped and then parsed: jspan_object_key() returns like jspan_object_next() but stops
 * at the value (m->value is its first byte, m->value_len 0, it->p there). Then exactly one
 * of: jspan_object_skip() (skips it; 0, or -1 if malformed), or jspan_object_done() with
 * the byte after the value once the caller has parsed it.
 */
int jspan_object_key(struct jspan_iter *it, struct jspan_member *m);
int jspan_object_skip(struct jspan_iter *it, struct jspan_member *m);
void jspan_object_done(struct jspan_iter *it, struct jspan_member *m, const char *vend);

/*
 * The next element is exactly the len bytes of `text`, an object or array that was
 * validated before (an item of the held version): consume it and return 1. A container
 * ends at its own closing bracket, so identical bytes are the identical, valid value and
 * need no walk: a memcmp instead of a scan. 0, with the iterator unchanged, when the
 * next element is anything else, the array ends or is malformed (the caller then walks
 * it with jspan_array_next(), which says which).
 */
int jspan_array_next_same(struct jspan_iter *it, const char *text, size_t len);

/* Compare a member's key with `key` (decoding escapes if needed). 1 equal, 0 not, -1 invalid. */
int jspan_key_is(const struct jspan_member *m, const char *key);

#endif
