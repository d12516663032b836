/*
 * The framing of etcd's watch stream: the JSON gateway answers POST /v3/watch with one
 * HTTP body that never ends by itself, a sequence of JSON objects ({"result":{...}} or
 * {"error":{...}}), each followed by a newline. Bytes arrive in chunks that cut objects
 * anywhere (inside a string, an escape, a number), so this finds where each top-level
 * object ends without parsing it: it tracks only strings, escapes and nesting, and hands
 * every complete object to a callback, which parses it (reply.h). Kept apart from the
 * transport so it is unit-tested and fuzzed on its own.
 */
#ifndef GW_ETCD_STREAM_H
#define GW_ETCD_STREAM_H

#include <stddef.h>

#include "core/error.h"
#include "shared/strbuf.h"

struct etcd_stream {
	struct strbuf buf; /* bytes of the object being framed (and nothing before it) */
	size_t max;        /* the largest object accepted */
	size_t pos;        /* how far buf has been scanned */
	int depth;         /* nesting of {} and [] at pos; 0: between objects */
	int in_str;        /* inside a string at pos */
	int esc;           /* after a backslash inside a string */
	int too_large;     /* the feed failed on an object over max (not on bad framing) */
};

/* Called with each complete object (text[len] is '\0'); 0 to go on, anything else stops
 * the feed, which returns that value. */
typedef int (*etcd_stream_fn)(void *arg, const char *text, size_t len);

void etcd_stream_init(struct etcd_stream *s, size_t max);
/* Forget everything buffered (a new stream starts). */
void etcd_stream_reset(struct etcd_stream *s);

/*
 * Take the next bytes of the stream: every object they complete goes to fn, in order.
 * Returns 0, fn's value if it stopped the feed, or -1 (err says why) if the stream is not
 * a sequence of objects (a byte other than whitespace between them, a closing bracket
 * that matches nothing) or an object exceeds max bytes, or on out of memory; after -1
 * the stream must be reset.
 */
int etcd_stream_feed(struct etcd_stream *s, const char *data, size_t n, etcd_stream_fn fn,
                     void *arg, struct gw_err *err);

#endif
