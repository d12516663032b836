/*
 * libFuzzer target: bytes of a /configs reply as the Apollo source reads them
 * (source/apollo/reply.c), then what the source does with it (source/apollo/diff.c): the
 * key-by-key diff of a full reply against a held map, or an incremental reply's changes
 * applied to it. The same bytes go through the fast walk of a full reply
 * (source/apollo/scan.c), which must either leave the reply alone or end exactly where the
 * parser and the diff end (the same new map, the same count): a difference traps. The same
 * bytes are also read as the meta service's list. Any crash, leak, sanitizer report or trap
 * is a bug; the input that found it goes into tests/fuzz/regress/apollo_release/ and is
 * replayed by every run.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "source/apollo/diff.h"
#include "source/apollo/reply.h"
#include "source/apollo/scan.h"

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
	json_t *held = json_pack("{s:s, s:s, s:s}", "ns.plugin.list", "[\"waf\"]", "ns.plugin.waf",
	                         "{}", "k", "v");
	json_t *walked = json_deep_copy(held);
	struct apollo_release r;
	int parsed = apollo_parse_release((const char *)data, size, &r, &err) == 0;
	size_t n = 0;
	long diffed = -1;
	if (parsed) {
		if (r.configurations)
			diffed = apollo_diff(held, r.configurations, count, &n);
		else
			apollo_apply_changes(held, r.changes, count, &n);
	}
	char *key = NULL;
	long changed = 0;
	size_t m = 0;
	int took = apollo_scan_release((const char *)data, size, walked, count, &m, &key, &changed);
	if (took == 1 && (!parsed || !r.configurations || changed != diffed ||
	                  (size_t)changed != m || !json_equal(walked, r.configurations) || !key))
		__builtin_trap();
	if (took == 0 && m != 0)
		__builtin_trap();
	free(key);
	if (parsed)
		apollo_release_free(&r);
	json_decref(walked);
	json_decref(held);

	char **urls;
	size_t k;
	if (apollo_parse_services((const char *)data, size, &urls, &k, &err) == 0)
		apollo_urls_free(urls, k);
	return 0;
}
