/*
 * libFuzzer target: the admin-reply parser (reply.c, model.c, jspan.c), the code that reads
 * untrusted bytes from the network. Any crash, leak or sanitizer report is a bug; the
 * input that found it goes into tests/fuzz/regress/ and is replayed by every check run.
 */
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "source/http/reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum gw_group all[] = {GW_GROUP_PLUGIN,
	                                    GW_GROUP_SELECTOR,
	                                    GW_GROUP_RULE,
	                                    GW_GROUP_APP_AUTH,
	                                    GW_GROUP_META_DATA,
	                                    GW_GROUP_PROXY_SELECTOR,
	                                    GW_GROUP_DISCOVER_UPSTREAM,
	                                    GW_GROUP_AI_PROXY_API_KEY};
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err;
	/* every subset size exercises "missing group" paths as well as full parses */
	size_t n = size ? (size_t)(data[0] % GW_GROUP_COUNT) + 1 : GW_GROUP_COUNT;
	if (reply_parse_fetch((const char *)data, size, all, n, "fuzz", NULL, out, &err) == 0) {
		/* again with the first result as the previous version: the carry-over path */
		struct group_data *again[GW_GROUP_COUNT];
		if (reply_parse_fetch((const char *)data, size, all, n, "fuzz", out, again, &err) ==
		    0)
			for (int g = 0; g < GW_GROUP_COUNT; g++)
				group_data_unref(again[g]);
		for (int g = 0; g < GW_GROUP_COUNT; g++) {
			if (!out[g])
				continue;
			for (size_t i = 0; i < out[g]->n_items; i++) {
				char key[4096];
				(void)group_data_find(
				    out[g], gd_key_str(&out[g]->items[i], key, sizeof key));
			}
			group_data_unref(out[g]);
		}
	}
	struct group_data *one;
	if (model_parse_group(GW_GROUP_RULE, (const char *)data, size, "fuzz", &one, &err) == 0)
		group_data_unref(one);
	return 0;
}
