/*
 * The access-key signature (see sign.h). HMAC() is OpenSSL's one-shot, kept in 3.x.
 */
#include "source/apollo/sign.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int apollo_sign(const char *secret, const char *timestamp, const char *path_with_query,
                char out[APOLLO_SIGN_LEN])
{
	size_t tl = strlen(timestamp), pl = strlen(path_with_query);
	unsigned char *msg = malloc(tl + 1 + pl);
	if (!msg)
		return -1;
	memcpy(msg, timestamp, tl);
	msg[tl] = '\n';
	memcpy(msg + tl + 1, path_with_query, pl);
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mac_len = 0;
	unsigned char *r =
	    HMAC(EVP_sha1(), secret, (int)strlen(secret), msg, tl + 1 + pl, mac, &mac_len);
	free(msg);
	if (!r || mac_len != 20)
		return -1;
	/* 20 bytes -> 28 characters and a NUL */
	if (EVP_EncodeBlock((unsigned char *)out, mac, (int)mac_len) != APOLLO_SIGN_LEN - 1)
		return -1;
	return 0;
}

int apollo_sign_headers(const char *app_id, const char *secret, int64_t now_ms,
                        const char *path_with_query, char *ts_line, size_t ts_cap, char *auth_line,
                        size_t auth_cap)
{
	char ts[24], sig[APOLLO_SIGN_LEN];
	snprintf(ts, sizeof ts, "%" PRId64, now_ms);
	if (apollo_sign(secret, ts, path_with_query, sig) != 0)
		return -1;
	int a = snprintf(ts_line, ts_cap, "Timestamp: %s", ts);
	int b = snprintf(auth_line, auth_cap, "Authorization: Apollo %s:%s", app_id, sig);
	if (a < 0 || (size_t)a >= ts_cap || b < 0 || (size_t)b >= auth_cap)
		return -1;
	return 0;
}
