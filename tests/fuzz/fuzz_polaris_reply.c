/*
 * libFuzzer target: bytes as a Polaris answer (source/polaris/reply.c: GetConfigFile's and
 * WatchConfigFile's ConfigClientResponse), and the same bytes as a file name put into a
 * WatchConfigFile body (source/polaris/wire.c), which must come back out of a JSON parser
 * as the name it was built from whenever the name is text a JSON string can hold (valid
 * UTF-8 without NUL). Any crash, leak, sanitizer report or abort is a bug; the input that
 * found it goes into tests/fuzz/regress/polaris_reply/ and is replayed by every run.
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "source/polaris/reply.h"
#include "source/polaris/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct polaris_reply r;
	struct gw_err err;
	if (polaris_reply_parse((const char *)data, size, &r, &err) == 0)
		polaris_reply_free(&r);

	struct strbuf b = {0};
	polaris_watch_begin(&b);
	size_t at;
	polaris_watch_add(&b, "default", "shenyu", (const char *)data, size, size, &at);
	polaris_watch_end(&b);
	char *body = strbuf_finish(&b);
	if (!body)
		return 0;
	polaris_watch_patch(body, at, UINT64_MAX - size);
	json_error_t je;
	json_t *doc = json_loads(body, 0, &je);
	/* jansson refuses what is not UTF-8 (or holds a NUL): then the name was not text */
	if (doc) {
		json_t *f = json_array_get(json_object_get(doc, "watch_files"), 0);
		const json_t *name = json_object_get(f, "file_name");
		if (json_string_length(name) != size ||
		    memcmp(json_string_value(name), data, size) != 0)
			abort();
		json_decref(doc);
	} else if (memchr(data, 0, size) == NULL) {
		/* the body is JSON whenever the name is UTF-8: check that jansson refused the
		 * name, not the body around it */
		json_t *s = json_stringn((const char *)data, size);
		if (s)
			abort();
	}
	free(body);
	return 0;
}
