/*
 * Framing of the watch stream (see stream.h). One pass over every byte: the scan state
 * (depth, string, escape) survives between feeds, so an object cut into many chunks is
 * scanned once, not again from its start at every chunk. Nesting counts {} and [] alike;
 * whether they pair up correctly is left to the JSON parser that reads the object.
 */
#include "source/etcd/stream.h"

#include <string.h>

/* Deeper than any etcd answer; bounds the counter. */
#define MAX_DEPTH 512

void etcd_stream_init(struct etcd_stream *s, size_t max)
{
	memset(s, 0, sizeof *s);
	s->max = max;
}

void etcd_stream_reset(struct etcd_stream *s)
{
	strbuf_reset(&s->buf);
	s->pos = 0;
	s->depth = 0;
	s->in_str = 0;
	s->esc = 0;
	s->too_large = 0;
}

static int is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Drop the first n bytes of buf (an object handed on, or whitespace). */
static void consume(struct etcd_stream *s, size_t n)
{
	memmove(s->buf.p, s->buf.p + n, s->buf.len - n);
	s->buf.len -= n;
	s->pos -= n;
	if (s->buf.p)
		s->buf.p[s->buf.len] = '\0';
}

int etcd_stream_feed(struct etcd_stream *s, const char *data, size_t n, etcd_stream_fn fn,
                     void *arg, struct gw_err *err)
{
	while (n > 0) {
		/* between objects: whitespace is skipped without buffering it */
		if (s->buf.len == 0) {
			while (n > 0 && is_space(*data)) {
				data++;
				n--;
			}
			if (n == 0)
				return 0;
			if (*data != '{')
				return gw_errf(err,
				               "watch stream: expected a JSON object, got byte "
				               "0x%02x",
				               (unsigned char)*data);
		}
		/* take what fits under the cap; the rest waits for the next round */
		size_t room = s->max + 1 - s->buf.len;
		size_t take = n < room ? n : room;
		if (strbuf_add(&s->buf, data, take) != 0)
			return gw_errf(err, "watch stream: out of memory");
		data += take;
		n -= take;

		size_t start = 0; /* where the current object starts in buf */
		for (; s->pos < s->buf.len; s->pos++) {
			char c = s->buf.p[s->pos];
			if (s->in_str) {
				if (s->esc)
					s->esc = 0;
				else if (c == '\\')
					s->esc = 1;
				else if (c == '"')
					s->in_str = 0;
				continue;
			}
			if (s->depth == 0) {
				if (is_space(c)) {
					start = s->pos + 1;
					continue;
				}
				if (c != '{')
					return gw_errf(err,
					               "watch stream: expected a JSON object, got "
					               "byte 0x%02x",
					               (unsigned char)c);
			}
			if (c == '"') {
				s->in_str = 1;
			} else if (c == '{' || c == '[') {
				if (++s->depth > MAX_DEPTH)
					return gw_errf(err, "watch stream: nesting deeper than %d",
					               MAX_DEPTH);
			} else if (c == '}' || c == ']') {
				if (--s->depth == 0) {
					/* one object: hand it on with a NUL after it */
					size_t end = s->pos + 1;
					char saved = s->buf.p[end];
					s->buf.p[end] = '\0';
					int rc = fn(arg, s->buf.p + start, end - start);
					s->buf.p[end] = saved;
					if (rc != 0) {
						s->pos = end;
						consume(s, end);
						return rc;
					}
					start = end;
				}
			}
		}
		if (start > 0)
			consume(s, start);
		if (s->buf.len > s->max) {
			s->too_large = 1;
			return gw_errf(err, "watch stream: an answer larger than %zu bytes",
			               s->max);
		}
	}
	return 0;
}
