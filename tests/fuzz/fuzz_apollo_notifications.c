/*
 * libFuzzer target: bytes of a /notifications/v2 reply as the Apollo source reads them
 * (source/apollo/reply.c), for the namespace it follows. Any crash, leak or sanitizer
 * report is a bug; the input that found it goes into tests/fuzz/regress/apollo_notifications/
 * and is replayed by every run.
 */
#include <stddef.h>
#include <stdint.h>

#include "source/apollo/reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_err err;
	int64_t id = 0;
	apollo_parse_notifications((const char *)data, size, "application", &id, &err);
	return 0;
}
