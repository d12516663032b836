/*
 * libFuzzer target: bytes of a /configs reply as the Apollo source reads them
 * (source/apollo/reply.c), then what the source does with it (source/apollo/diff.c): the
 * key-by-key diff of a full reply against a held map, or an incremental reply's changes
 * applied to it. The same
 * bytes are also read as the meta service's list. Any crash, leak or sanitizer report is a
 * bug; the input that found it goes into tests/fuzz/regress/apollo_release/ and is
 * replayed by every run.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "source/apollo/diff.h"
#include "source/apollo/reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *ctx, const char *key, size_t klen, const char *value, size_t vlen)
{
	(void)key, (void)klen, (void)value, (void)vlen;
	(*(size_t *)ctx)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_err err;
	json_t *held =
	    json_pack("{s:s, s:s}", "ns.plugin.list", "[\"waf\"]", "ns.plugin.waf", "{}");
	struct apollo_release r;
	if (apollo_parse_release((const char *)data, size, &r, &err) == 0) {
		size_t n = 0;
		if (r.configurations)
			apollo_diff(held, r.configurations, count, &n);
		else
			apollo_apply_changes(held, r.changes, count, &n);
		apollo_release_free(&r);
	}
	json_decref(held);

	char **urls;
	size_t n;
	if (apollo_parse_services((const char *)data, size, &urls, &n, &err) == 0)
		apollo_urls_free(urls, n);
	return 0;
}
