/*
 * libFuzzer target: bytes of a Consul KV answer as the Consul source reads them: the body
 * of a recursive read (source/consul/reply.c, which decodes escaped keys in place and
 * skips unknown members with a bounded depth), every entry's span checked to lie inside the
 * body and its value checked and base64-decoded as the diff would; and the same bytes cut into
 * lines read as response headers (X-Consul-Index and the ACL filter flag). Any crash, leak or
 * sanitizer report is a bug; the input that found it goes into
 * tests/fuzz/regress/consul_kv/ and is replayed by every run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/b64.h"
#include "source/consul/reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the parser writes into the body (decoding keys in place): a copy of its own */
	char *body = malloc(size ? size : 1);
	if (!body)
		return 0;
	memcpy(body, data, size);
	struct consul_reply r;
	struct gw_err err;
	if (consul_parse_list(body, size, &r, &err) == 0) {
		for (size_t i = 0; i < r.n; i++) {
			const struct consul_entry *e = &r.entries[i];
			if (e->key < body || e->key + e->key_len > body + size)
				abort();
			if (e->value && (e->value < body || e->value + e->value_len > body + size))
				abort();
			char *v;
			size_t vlen;
			if (e->value && consul_value_text(&r.entries[i]) == 0 &&
			    b64_decode(e->value, e->value_len, &v, &vlen) == B64_OK)
				free(v);
		}
		consul_reply_free(&r);
	}
	free(body);

	struct consul_headers h = {0};
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		consul_header_line(&h, p, n);
		p += n;
	}
	return 0;
}
