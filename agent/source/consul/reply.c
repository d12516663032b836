/*
 * Consul's KV answers (see reply.h): a one-pass scanner over the body, strict where it
 * reads (the array, each entry object, Key, ModifyIndex, Value) and in what it skips
 * (any other member's value, walked by a recursive-descent skipper bounded in depth, so a
 * hostile body nested a million deep is refused, not followed).
 */
#include "source/consul/reply.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jlex.h"

/* Unknown members nested deeper than this are refused (Consul's are scalars). */
#define SKIP_DEPTH_MAX 32

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static const char *skip_value(const char *p, const char *end, int depth);

/* p after '[' or '{': the byte after the matching close, or NULL. */
static const char *skip_container(const char *p, const char *end, int object, int depth)
{
	char close = object ? '}' : ']';
	p = ws(p, end);
	if (p < end && *p == close)
		return p + 1;
	for (;;) {
		if (object) {
			int esc = 0;
			if (p >= end || *p != '"' || !(p = jlex_string_end(p + 1, end, &esc)))
				return NULL;
			p = ws(p, end);
			if (p >= end || *p != ':')
				return NULL;
			p = ws(p + 1, end);
		}
		if (!(p = skip_value(p, end, depth)))
			return NULL;
		p = ws(p, end);
		if (p < end && *p == ',') {
			p = ws(p + 1, end);
			continue;
		}
		if (p < end && *p == close)
			return p + 1;
		return NULL;
	}
}

static const char *skip_literal(const char *p, const char *end, const char *lit)
{
	size_t n = strlen(lit);
	return (size_t)(end - p) >= n && memcmp(p, lit, n) == 0 ? p + n : NULL;
}

static const char *skip_value(const char *p, const char *end, int depth)
{
	if (p >= end)
		return NULL;
	int esc = 0;
	switch (*p) {
	case '"':
		esc = 0;
		return jlex_string_end(p + 1, end, &esc);
	case '{':
	case '[':
		if (depth >= SKIP_DEPTH_MAX)
			return NULL;
		return skip_container(p + 1, end, *p == '{', depth + 1);
	case 't':
		return skip_literal(p, end, "true");
	case 'f':
		return skip_literal(p, end, "false");
	case 'n':
		return skip_literal(p, end, "null");
	default:
		if (*p == '-' || (*p >= '0' && *p <= '9'))
			return jlex_number_end(p, end);
		return NULL;
	}
}

/* An unsigned decimal number at [p, q): 0, or -1 (a sign, a fraction, an exponent, over
 * INT64_MAX: the mirror's revisions and /status are int64, and jansson, whose number
 * rules core/jlex.h keeps, refuses larger integers; Consul's raft index never gets near). */
static int parse_u64(const char *p, const char *q, uint64_t *out)
{
	uint64_t v = 0;
	if (p == q)
		return -1;
	for (; p < q; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		unsigned d = (unsigned)(*p - '0');
		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* The scanners below read through const pointers; the parser owns the buffer and decodes
 * in place, so a position they return is taken back as the same place in its own buffer
 * (base, any pointer into it): an offset, not a cast. NULL stays NULL. */
static char *in_buf(char *base, const char *at)
{
	return at ? base + (at - base) : NULL;
}

enum member { M_OTHER, M_KEY, M_VALUE, M_MODIFY_INDEX };

static enum member member_of(const char *k, size_t n, int esc)
{
	if (esc)
		return M_OTHER; /* Consul's own names never hold escapes */
	if (n == 3 && memcmp(k, "Key", 3) == 0)
		return M_KEY;
	if (n == 5 && memcmp(k, "Value", 5) == 0)
		return M_VALUE;
	if (n == 11 && memcmp(k, "ModifyIndex", 11) == 0)
		return M_MODIFY_INDEX;
	return M_OTHER;
}

static int fail(struct gw_err *err, size_t i, const char *what)
{
	return gw_errf(err, "the KV answer is not Consul's list of entries: entry %zu: %s", i,
	               what);
}

/* p at '{': one entry into e; the byte after its '}', or NULL with err. */
static char *parse_entry(char *p, const char *end, size_t i, struct consul_entry *e,
                         struct gw_err *err)
{
	int has_key = 0, has_index = 0;
	memset(e, 0, sizeof *e);
	p = in_buf(p, ws(p + 1, end));
	if (p < end && *p == '}')
		return fail(err, i, "an empty object"), NULL;
	for (;;) {
		int esc = 0;
		if (p >= end || *p != '"')
			return fail(err, i, "expected a member name"), NULL;
		char *name = p + 1;
		char *q = in_buf(p, jlex_string_end(name, end, &esc));
		if (!q)
			return fail(err, i, "a member name is not a valid string"), NULL;
		enum member m = member_of(name, (size_t)(q - 1 - name), esc);
		p = in_buf(p, ws(q, end));
		if (p >= end || *p != ':')
			return fail(err, i, "expected ':'"), NULL;
		p = in_buf(p, ws(p + 1, end));
		esc = 0;
		if (m == M_KEY) {
			if (p >= end || *p != '"' ||
			    !(q = in_buf(p, jlex_string_end(p + 1, end, &esc))))
				return fail(err, i, "Key is not a valid string"), NULL;
			e->key = p + 1;
			e->key_len =
			    esc ? jlex_decode(p + 1, q - 1, p + 1) : (size_t)(q - 1 - (p + 1));
			if (memchr(e->key, '\0', e->key_len))
				return fail(err, i, "Key holds a NUL"), NULL;
			has_key = 1;
		} else if (m == M_VALUE) {
			if (p < end && *p == 'n') {
				if (!(q = in_buf(p, skip_literal(p, end, "null"))))
					return fail(err, i, "Value is neither a string nor null"),
					       NULL;
				e->value = NULL;
				e->value_len = 0;
			} else {
				if (p >= end || *p != '"')
					return fail(err, i, "Value is neither a string nor null"),
					       NULL;
				/* found, not checked: most values belong to unchanged keys and are
				 * never read (consul_value_text checks the few that are). A quote
				 * after a backslash may be escaped: that one value is walked as
				 * JSON now. */
				char *v = p + 1;
				q = memchr(v, '"', (size_t)(end - v));
				if (q && q > v && q[-1] == '\\')
					q = in_buf(
					    p, jlex_string_end(v, end, &esc)); /* after its quote */
				else if (q)
					q++; /* after the quote memchr found */
				if (!q)
					return fail(err, i, "Value is not a valid string"), NULL;
				e->value = v;
				e->value_len = (size_t)(q - 1 - v);
			}
		} else if (m == M_MODIFY_INDEX) {
			if (p >= end || !(q = in_buf(p, jlex_number_end(p, end))) ||
			    parse_u64(p, q, &e->modify_index) != 0)
				return fail(err, i, "ModifyIndex is not an unsigned integer"), NULL;
			has_index = 1;
		} else if (!(q = in_buf(p, skip_value(p, end, 0)))) {
			return fail(err, i,
			            "a member's value is not valid JSON (or nested too deeply)"),
			       NULL;
		}
		p = in_buf(p, ws(q, end));
		if (p < end && *p == ',') {
			p = in_buf(p, ws(p + 1, end));
			continue;
		}
		if (p < end && *p == '}')
			break;
		return fail(err, i, "expected ',' or '}'"), NULL;
	}
	if (!has_key)
		return fail(err, i, "no Key"), NULL;
	if (!has_index)
		return fail(err, i, "no ModifyIndex"), NULL;
	return p + 1;
}

int consul_parse_list(char *body, size_t len, struct consul_reply *out, struct gw_err *err)
{
	out->entries = NULL;
	out->n = 0;
	const char *end = body + len;
	char *p = in_buf(body, ws(body, end));
	if (p >= end || *p != '[')
		return gw_errf(err, "the KV answer is not a JSON array (%s)",
		               p >= end ? "empty" : "it begins otherwise");
	size_t cap = 0;
	p = in_buf(p, ws(p + 1, end));
	if (p < end && *p == ']') {
		p++;
	} else {
		for (;;) {
			if (p >= end || *p != '{') {
				consul_reply_free(out);
				return fail(err, out->n, "not an object");
			}
			if (out->n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				struct consul_entry *g = realloc(out->entries, ncap * sizeof *g);
				if (!g) {
					consul_reply_free(out);
					return gw_errf(err, "out of memory for %zu entries", ncap);
				}
				out->entries = g;
				cap = ncap;
			}
			if (!(p = parse_entry(p, end, out->n, &out->entries[out->n], err))) {
				consul_reply_free(out);
				return -1;
			}
			out->n++;
			p = in_buf(p, ws(p, end));
			if (p < end && *p == ',') {
				p = in_buf(p, ws(p + 1, end));
				continue;
			}
			if (p < end && *p == ']') {
				p++;
				break;
			}
			size_t at = out->n;
			consul_reply_free(out);
			return fail(err, at, "expected ',' or ']' after it");
		}
	}
	if (ws(p, end) != end) {
		consul_reply_free(out);
		return gw_errf(err, "the KV answer has bytes after its array");
	}
	return 0;
}

void consul_reply_free(struct consul_reply *r)
{
	free(r->entries);
	r->entries = NULL;
	r->n = 0;
}

/* The header's value at [*v, *vend) if line is "name: value\r\n" (name case-blind). */
static int header_value(const char *line, size_t len, const char *name, const char **v,
                        const char **vend)
{
	size_t n = strlen(name);
	if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return 0;
	const char *p = line + n + 1, *e = line + len;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	while (e > p && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*v = p;
	*vend = e;
	return 1;
}

void consul_header_line(struct consul_headers *h, const char *line, size_t len)
{
	const char *v, *e;
	/* a status line starts a new answer's headers (curl reports each one's) */
	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		memset(h, 0, sizeof *h);
		return;
	}
	if (header_value(line, len, "X-Consul-Index", &v, &e)) {
		uint64_t x;
		if (parse_u64(v, e, &x) == 0) {
			h->has_index = 1;
			h->bad_index = 0;
			h->index = x;
		} else {
			h->has_index = 0;
			h->bad_index = 1;
		}
	} else if (header_value(line, len, "X-Consul-Results-Filtered-By-ACLs", &v, &e)) {
		h->acl_filtered = (size_t)(e - v) == 4 && strncasecmp(v, "true", 4) == 0;
	}
}

int consul_value_text(struct consul_entry *e)
{
	if (!e->value)
		return 0;
	char *v = e->value;
	int esc = 0;
	/* the closing quote is the byte after the value (consul_parse_list found it) */
	const char *q = jlex_string_end(v, v + e->value_len + 1, &esc);
	if (q != v + e->value_len + 1)
		return -1;
	if (esc)
		e->value_len = jlex_decode(v, v + e->value_len, v);
	return 0;
}
