/*
 * Base64 (RFC 4648, standard alphabet, padded), a part shared by the sources whose stores
 * carry bytes as base64 in JSON: etcd's JSON gateway (every key and value) and Consul's KV
 * API (every value). Our own few lines rather than a library: the agent links nothing else
 * that has it.
 */
#ifndef GW_B64_H
#define GW_B64_H

#include <stddef.h>

/* The encoding of data[0..len), NUL-terminated (caller frees); NULL on out of memory. */
char *b64_encode(const void *data, size_t len);

enum b64_result {
	B64_OK = 0,
	B64_BAD,       /* not base64; *out is NULL */
	B64_NO_MEMORY, /* *out is NULL */
};

/* Decode text[0..len) into a new buffer with a NUL after the *out_len bytes (so a decoded
 * key reads as a C string when it has no NUL of its own). Padding is optional; whitespace
 * and characters outside the alphabet are refused. */
enum b64_result b64_decode(const char *text, size_t len, char **out, size_t *out_len);

#endif
