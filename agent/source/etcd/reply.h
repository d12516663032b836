/*
 * What etcd's JSON gateway answers, turned into C: a range (the store revision and every
 * key/value, base64-decoded), an authentication token, an error body, and one message of
 * the watch stream (created / events / cancelled by compaction or refusal). int64 fields
 * come as JSON strings and zero-valued fields are left out (etcd's protobuf mapping), so
 * a missing field reads as 0, false or empty. Pure: unit-tested and fuzzed.
 */
#ifndef GW_ETCD_REPLY_H
#define GW_ETCD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* One key and its value, decoded (each NUL-terminated after its length). */
struct etcd_kv {
	char *key;
	size_t key_len;
	char *value; /* "" for a DELETE event */
	size_t value_len;
	int64_t mod_revision; /* for a DELETE event: the revision of the delete */
};

struct etcd_range {
	int64_t revision; /* header.revision: the store revision the range was read at */
	struct etcd_kv *kvs;
	size_t n;
	int more; /* etcd left keys out (never asked for: no limit is sent) */
};

/* 0, or -1 (err says why: not JSON, no header, a key that is not base64...). */
int etcd_parse_range(const char *body, size_t len, struct etcd_range *out, struct gw_err *err);
void etcd_range_free(struct etcd_range *r);

/* The "token" of an /v3/auth/authenticate answer (caller frees). 0 or -1. */
int etcd_parse_token(const char *body, size_t len, char **token, struct gw_err *err);

/* An error body {"error":"..","message":"..","code":N} (a unary call) or
 * {"error":{"grpc_code":N,"message":".."}} (inside the watch stream). 1 if body is one
 * (code and message filled), 0 if not. */
struct etcd_error {
	int code; /* the gRPC status code: 11 OUT_OF_RANGE (compacted), 16 UNAUTHENTICATED... */
	char message[256];
};
int etcd_parse_error(const char *body, size_t len, struct etcd_error *out);

enum etcd_event_type { ETCD_EV_PUT = 0, ETCD_EV_DELETE };

struct etcd_event {
	enum etcd_event_type type;
	struct etcd_kv kv;
};

/* One object of the watch stream. */
struct etcd_watch_msg {
	int is_error; /* {"error":..}: the stream failed (err holds it) */
	struct etcd_error err;
	int64_t revision;         /* header.revision */
	int created;              /* the answer to the create request */
	int canceled;             /* the watch is over: compaction, refusal or server side */
	int64_t compact_revision; /* > 0: the start revision was compacted away */
	char cancel_reason[256];
	struct etcd_event *events;
	size_t n_events;
};

/* 0, or -1 (err says why). Unknown members are ignored. */
int etcd_parse_watch(const char *text, size_t len, struct etcd_watch_msg *out, struct gw_err *err);
void etcd_watch_msg_free(struct etcd_watch_msg *m);

#endif
