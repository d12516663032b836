/*
 * What Consul's KV API answers, turned into C without building a JSON tree: the entries of
 * a recursive read (GET /v1/kv/PREFIX?recurse: [{"Key","Value","ModifyIndex",...}]) and
 * the response headers that matter (X-Consul-Index, X-Consul-Results-Filtered-By-ACLs).
 *
 * Why no tree: a blocking query on a recursive prefix answers with EVERY key below it at
 * each change, so at 100,000 rules each answer is ~90 MB of JSON. The source only needs,
 * per entry, its key and ModifyIndex (to skip an unchanged key without decoding it) and
 * where its base64 Value lies (decoded only when the key changed). So the body is scanned
 * once, in place: keys with JSON escapes are decoded into the body's own bytes (decoding
 * never lengthens); values are left as spans, found with memchr and checked only when read
 * (consul_value_text). Keys and values read are checked as jansson checks strings
 * (core/jlex.h: strict UTF-8, escapes); other members are skipped, nesting bounded. Pure:
 * unit-tested and fuzzed.
 */
#ifndef GW_CONSUL_REPLY_H
#define GW_CONSUL_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct consul_entry {
	const char *key; /* into the body (decoded in place); not NUL-terminated */
	size_t key_len;
	char *value; /* the base64 text, into the body (decoded in place); NULL: "Value":null or
	              * absent. Not yet checked as a JSON string: consul_value_text() first */
	size_t value_len;
	uint64_t modify_index;
};

struct consul_reply {
	struct consul_entry *entries;
	size_t n;
};

/* Parse body[0..len) (a 200 answer's JSON array), decoding escaped keys in place. 0, or
 * -1 with err naming what is wrong and where ("entry 3: ModifyIndex is not a number"). */
int consul_parse_list(char *body, size_t len, struct consul_reply *out, struct gw_err *err);
void consul_reply_free(struct consul_reply *r);

/* Check an entry's value as a JSON string (strict UTF-8, escapes) and decode its escapes in
 * place, before it is used: 0, or -1 when jansson would refuse it. Values are only found,
 * not checked, by consul_parse_list (a one-key change must not pay for validating every
 * unchanged value of the answer); keys are always checked. */
int consul_value_text(struct consul_entry *e);

/* One response header line ("Name: value\r\n"). */
struct consul_headers {
	int has_index;    /* X-Consul-Index was present and a valid unsigned number */
	uint64_t index;   /* its value */
	int bad_index;    /* X-Consul-Index was present but not a number */
	int acl_filtered; /* X-Consul-Results-Filtered-By-ACLs: true */
};
void consul_header_line(struct consul_headers *h, const char *line, size_t len);

#endif
