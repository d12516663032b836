/*
 * libFuzzer target: bytes of a /configs reply as the Apollo source reads them
 * (source/apollo/reply.c), with a held map for an incremental reply to apply to, then the
 * key-by-key diff (source/apollo/diff.c) of what it parsed against that map. The same
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
	if (apollo_parse_release((const char *)data, size, held, &r, &err) == 0) {
		size_t n = 0;
		apollo_diff(held, r.configurations, count, &n);
		apollo_release_free(&r);
	}
	json_decref(held);

	char **urls;
	size_t n;
	if (apollo_parse_services((const char *)data, size, &urls, &n, &err) == 0)
		apollo_urls_free(urls, n);
	return 0;
}
