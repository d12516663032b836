/*
 * What the etcd source sends to etcd's v3 JSON gateway: the prefix range's end and the
 * request bodies of /v3/kv/range, /v3/watch and /v3/auth/authenticate (keys base64,
 * int64 as JSON strings, as the gateway's protobuf mapping wants them). Pure functions, so
 * the exact bytes are unit-tested without a server.
 */
#ifndef GW_ETCD_WIRE_H
#define GW_ETCD_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* The range_end that makes [prefix, end) every key starting with prefix: the prefix with
 * its last byte below 0xff incremented and what follows dropped ("/a/b/" -> "/a/b0").
 * A prefix of only 0xff bytes (or empty) has no such end: etcd spells "to the end of the
 * keyspace" as the single byte 0, which this returns. Writes at most len bytes (at least
 * 1) to out and returns how many. */
size_t etcd_prefix_end(const char *prefix, size_t len, char *out);

/* {"key":b64(prefix),"range_end":b64(end)[,"revision":"R"]}: every key under prefix, at
 * revision R (0: the newest). NULL on out of memory; caller frees. */
char *etcd_body_range(const char *prefix, size_t len, int64_t revision);

/* One page of that range: the keys under prefix from `from` on (from NULL: from the
 * prefix), at most `limit` of them (0: all), {"key":b64(from),"range_end":b64(end),
 * "revision":"R","limit":"N"}. NULL on out of memory; caller frees. */
char *etcd_body_range_page(const char *prefix, size_t len, const char *from, size_t from_len,
                           int64_t revision, int64_t limit);

/* {"create_request":{"key":..,"range_end":..,"start_revision":"R"}}: watch every key under
 * prefix from revision R (0: from now). */
char *etcd_body_watch(const char *prefix, size_t len, int64_t start_revision);

/* {"name":..,"password":..}. Holds the secret: never log it, and free it at once. */
char *etcd_body_auth(const char *name, const char *password);

#endif
