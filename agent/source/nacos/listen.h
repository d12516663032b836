/*
 * The wire forms of Nacos's v1 config listener (alibaba/nacos ConfigController.listener,
 * MD5Util.getClientMd5Map and compareMd5ResultString, LongPollingService; the same from
 * 1.4 to 3.x): the request's form field and the answer's list of changed keys, as pure
 * functions, so they are unit-tested and fuzzed without a server.
 *
 * Request: Listening-Configs = for each key "dataId ^B group ^B md5 ^A", or with a tenant
 * "dataId ^B group ^B md5 ^B tenant ^A" (^B 0x02, ^A 0x01), form-urlencoded; at most
 * NACOS_LISTEN_MAX keys per request (the server refuses more). Answer: empty when nothing
 * changed before the hold ended, else the URL-encoded "dataId ^B group [^B tenant] ^A ..."
 * of the keys whose md5 differs, plus a newline.
 */
#ifndef GW_NACOS_LISTEN_H
#define GW_NACOS_LISTEN_H

#include <stddef.h>

#include "shared/strbuf.h"

#define NACOS_LISTEN_MAX 10000
#define NACOS_MD5_HEX    33 /* 32 lowercase hex digits and the NUL */

/* The lowercase hex md5 of [s, s + n), as Nacos computes a content's (MD5Utils.md5Hex over
 * its UTF-8 bytes). */
void nacos_md5_hex(const char *s, size_t n, char out[NACOS_MD5_HEX]);

/* Start a body ("Listening-Configs="), then add one key per call. */
int nacos_listen_begin(struct strbuf *b);
int nacos_listen_add(struct strbuf *b, const char *data_id, size_t id_len, const char *group,
                     const char *md5, const char *tenant);

/* Each changed dataId of the answer [body, body + len) whose group is `group` and whose
 * tenant is `tenant` (NULL or "": public) goes to fn. Returns how many keys the answer
 * named, or -1 when it is not a listener answer (bad percent-encoding, a key without a
 * group): nothing is then called. */
typedef int (*nacos_changed_fn)(void *ctx, const char *data_id, size_t len);
long nacos_listen_parse(const char *body, size_t len, const char *group, const char *tenant,
                        nacos_changed_fn fn, void *ctx);

#endif
