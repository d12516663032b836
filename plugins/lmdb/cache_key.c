/*
 * Long keys (docs/lmdb-cache.md, "Long keys"): LMDB refuses a key longer than its maximum
 * key size with MDB_BAD_VALSIZE, and an admin may well send a 600-character selector id or
 * a long API key (AI_PROXY_API_KEY's key is selectorId::proxyApiKey). Refusing the item
 * would refuse its whole group for ever, so such a key is stored under a fixed-length
 * digest instead; the value (the item's JSON) still holds the fields the key is made of.
 *
 * SHA-256, not a faster non-cryptographic hash: the keys come from the admin, and a
 * collision between two items' stored keys would silently drop one of them. libcrypto's
 * EVP is the one the agent already links for its md5s.
 */
#include "cache_key.h"

#include <openssl/evp.h>
#include <string.h>

int cache_key_is_long(const char *key, size_t len)
{
	size_t plen = sizeof GW_CACHE_LONG_KEY_PREFIX - 1;
	return len > GW_CACHE_MAX_KEY ||
	       (len >= plen && memcmp(key, GW_CACHE_LONG_KEY_PREFIX, plen) == 0);
}

int cache_key_stored(const char *key, struct cache_key *out)
{
	size_t len = strlen(key);
	if (!cache_key_is_long(key, len)) {
		out->val.mv_size = len;
		out->val.mv_data = (void *)key;
		return 0;
	}
	unsigned char sum[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	if (EVP_Digest(key, len, sum, &n, EVP_sha256(), NULL) != 1 || n != 32)
		return -1;
	static const char hex[] = "0123456789abcdef";
	size_t plen = sizeof GW_CACHE_LONG_KEY_PREFIX - 1;
	memcpy(out->derived, GW_CACHE_LONG_KEY_PREFIX, plen);
	for (unsigned i = 0; i < n; i++) {
		out->derived[plen + 2 * i] = hex[sum[i] >> 4];
		out->derived[plen + 2 * i + 1] = hex[sum[i] & 15];
	}
	out->derived[CACHE_KEY_DERIVED_LEN] = '\0';
	out->val.mv_size = CACHE_KEY_DERIVED_LEN;
	out->val.mv_data = out->derived;
	return 0;
}
