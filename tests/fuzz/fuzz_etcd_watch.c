/*
 * libFuzzer target: bytes of an etcd watch stream as the etcd source reads them: the
 * framing (source/etcd/stream.c) fed in chunks whose sizes come from the input itself, and
 * every object it frames parsed as a watch message (source/etcd/reply.c), keys and values
 * base64-decoded. The same bytes are also read as a range reply. Any crash, leak or
 * sanitizer report is a bug; the input that found it goes into
 * tests/fuzz/regress/etcd_watch/ and is replayed by every run.
 */
#include <stddef.h>
#include <stdint.h>

#include "source/etcd/reply.h"
#include "source/etcd/stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_object(void *arg, const char *text, size_t len)
{
	size_t *seen = arg;
	struct etcd_watch_msg m;
	struct gw_err err;
	if (etcd_parse_watch(text, len, &m, &err) == 0)
		etcd_watch_msg_free(&m);
	(*seen)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the first byte picks the chunk size: objects cut at every kind of place */
	size_t chunk = size ? (size_t)data[0] % 64 + 1 : 1;
	struct etcd_stream st;
	etcd_stream_init(&st, 1 << 16);
	struct gw_err err;
	size_t seen = 0;
	for (size_t i = 0; i < size; i += chunk) {
		size_t n = size - i < chunk ? size - i : chunk;
		if (etcd_stream_feed(&st, (const char *)data + i, n, on_object, &seen, &err) != 0)
			break;
	}
	etcd_stream_reset(&st);

	struct etcd_range r;
	if (etcd_parse_range((const char *)data, size, &r, &err) == 0)
		etcd_range_free(&r);
	return 0;
}
