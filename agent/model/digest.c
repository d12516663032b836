/*
 * Item digests and the set identity of event-source versions (see digest.h), on OpenSSL's
 * EVP interface. The algorithm is fetched once per context (OpenSSL 3 otherwise looks it up
 * at every init, which costs more than hashing a small item).
 */
#include "model/digest.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct digester {
	EVP_MD_CTX *ctx;
	EVP_MD *fetched; /* OpenSSL 3; NULL before */
	const EVP_MD *md;
};

struct digester *digester_new(void)
{
	struct digester *d = calloc(1, sizeof *d);
	if (!d || !(d->ctx = EVP_MD_CTX_new())) {
		free(d);
		return NULL;
	}
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
	d->fetched = EVP_MD_fetch(NULL, "SHA256", NULL);
	d->md = d->fetched;
#endif
	if (!d->md)
		d->md = EVP_sha256();
	return d;
}

void digester_free(struct digester *d)
{
	if (!d)
		return;
	EVP_MD_CTX_free(d->ctx);
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
	EVP_MD_free(d->fetched);
#endif
	free(d);
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

static int sha256(struct digester *d, const void *data, size_t len, unsigned char out[32])
{
	unsigned int n = 0;
	if (EVP_DigestInit_ex(d->ctx, d->md, NULL) != 1 ||
	    EVP_DigestUpdate(d->ctx, data, len) != 1 || EVP_DigestFinal_ex(d->ctx, out, &n) != 1 ||
	    n < 16)
		return -1;
	return 0;
}

int digest_item(struct digester *d, const char *json, size_t len, struct item_digest *out)
{
	unsigned char h[EVP_MAX_MD_SIZE];
	if (sha256(d, json, len, h) != 0)
		return -1;
	out->lo = le64(h);
	out->hi = le64(h + 8);
	return 0;
}

void digest_add(struct item_digest *sum, const struct item_digest *x)
{
	uint64_t lo = sum->lo + x->lo;
	sum->hi += x->hi + (lo < x->lo);
	sum->lo = lo;
}

void digest_sub(struct item_digest *sum, const struct item_digest *x)
{
	uint64_t lo = sum->lo - x->lo;
	sum->hi -= x->hi + (sum->lo < x->lo);
	sum->lo = lo;
}

int digest_identity(struct digester *d, const struct item_digest *sum, size_t n, char out[33])
{
	unsigned char in[24], h[EVP_MAX_MD_SIZE];
	put_le64(in, sum->lo);
	put_le64(in + 8, sum->hi);
	put_le64(in + 16, (uint64_t)n);
	if (sha256(d, in, sizeof in, h) != 0) {
		snprintf(out, 33, "%s", "00000000000000000000000000000000");
		return -1;
	}
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
	return 0;
}
