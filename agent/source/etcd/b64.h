/*
 * Base64 (RFC 4648, standard alphabet, padded) for etcd's JSON gateway, which carries every
 * key and value as base64 because etcd keys and values are bytes, not text. Our own few
 * lines rather than a library: the agent links nothing else that has it.
 */
#ifndef GW_ETCD_B64_H
#define GW_ETCD_B64_H

#include <stddef.h>

/* The encoding of data[0..len), NUL-terminated (caller frees); NULL on out of memory. */
char *etcd_b64_encode(const void *data, size_t len);

enum etcd_b64_result {
	ETCD_B64_OK = 0,
	ETCD_B64_BAD,       /* not base64; *out is NULL */
	ETCD_B64_NO_MEMORY, /* *out is NULL */
};

/* Decode text[0..len) into a new buffer with a NUL after the *out_len bytes (so a decoded
 * key reads as a C string when it has no NUL of its own). Padding is optional; whitespace
 * and characters outside the alphabet are refused. */
enum etcd_b64_result etcd_b64_decode(const char *text, size_t len, char **out, size_t *out_len);

#endif
