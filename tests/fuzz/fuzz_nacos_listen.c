/*
 * libFuzzer target: a Nacos listener answer as the Nacos source reads it
 * (source/nacos/listen.c): URL-decoded, checked line by line, each changed key of the
 * configured group and tenant handed out. The first byte picks the tenant asked for ("",
 * "public" or "t1"). Any crash, leak or sanitizer report is a bug; the input that found it
 * goes into tests/fuzz/regress/nacos_listen/ and is replayed by every run.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "source/nacos/listen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_key(void *ctx, const char *id, size_t len)
{
	size_t *n = ctx;
	/* the id lies inside the decoded answer: touch every byte */
	for (size_t i = 0; i < len; i++)
		*n += (unsigned char)id[i] == 0xff;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const tenants[] = {"", "public", "t1"};
	const char *tenant = size ? tenants[data[0] % 3] : "";
	size_t n = 0;
	nacos_listen_parse((const char *)data, size, "DEFAULT_GROUP", tenant, on_key, &n);
	char md5[NACOS_MD5_HEX];
	nacos_md5_hex((const char *)data, size, md5);
	return md5[32] != '\0';
}
