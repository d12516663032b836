/*
 * Apollo's access-key signature (apollo-java apollo-core Signature, checked by the config
 * service's ClientAuthenticationFilter): the headers `Timestamp: <ms>` and
 * `Authorization: Apollo {appId}:{base64(HMAC-SHA1(secret, timestamp + "\n" +
 * pathWithQuery))}`, where pathWithQuery is the request's path and query exactly as sent
 * (undecoded: the server signs getRequestURI() + "?" + getQueryString()). A pure function
 * over OpenSSL's HMAC, so a test can check it against a vector computed independently.
 */
#ifndef GW_APOLLO_SIGN_H
#define GW_APOLLO_SIGN_H

#include <stddef.h>
#include <stdint.h>

/* base64 of a 20-byte HMAC-SHA1: 28 characters and a NUL */
#define APOLLO_SIGN_LEN 29

/* The signature of path_with_query at `timestamp` (decimal ms, as sent) into out. 0, or -1
 * if OpenSSL failed. */
int apollo_sign(const char *secret, const char *timestamp, const char *path_with_query,
                char out[APOLLO_SIGN_LEN]);

/* The two header lines ("Timestamp: ..." and "Authorization: Apollo appId:...") for a
 * request at wall-clock ms now_ms. 0, or -1 if a line does not fit or OpenSSL failed. */
int apollo_sign_headers(const char *app_id, const char *secret, int64_t now_ms,
                        const char *path_with_query, char *ts_line, size_t ts_cap, char *auth_line,
                        size_t auth_cap);

#endif
