/*
 * Base64 for the etcd gateway and Consul values (see b64.h). Decoding is strict (alphabet, padding
 * only at the end, no stray bits) so a corrupted key is refused instead of becoming a different
 * path.
 */
#include "source/b64.h"

#include <stdint.h>
#include <stdlib.h>

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *b64_encode(const void *data, size_t len)
{
	const unsigned char *p = data;
	char *out = malloc((len + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	size_t o = 0, i = 0;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		out[o++] = ALPHABET[v >> 18 & 63];
		out[o++] = ALPHABET[v >> 12 & 63];
		out[o++] = ALPHABET[v >> 6 & 63];
		out[o++] = ALPHABET[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		out[o++] = ALPHABET[v >> 18 & 63];
		out[o++] = ALPHABET[v >> 12 & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		out[o++] = ALPHABET[v >> 18 & 63];
		out[o++] = ALPHABET[v >> 12 & 63];
		out[o++] = ALPHABET[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int sextet(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

enum b64_result b64_decode(const char *text, size_t len, char **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	size_t pad = 0;
	while (pad < 2 && len > 0 && text[len - 1] == '=') {
		len--;
		pad++;
	}
	if (len % 4 == 1 || (pad && (len + pad) % 4 != 0))
		return B64_BAD;
	char *buf = malloc(len / 4 * 3 + 3);
	if (!buf)
		return B64_NO_MEMORY;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < len; i++) {
		int v = sextet(text[i]);
		if (v < 0) {
			free(buf);
			return B64_BAD;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (char)(acc >> bits & 0xff);
		}
	}
	/* the bits left over must be zero: otherwise two texts would decode alike */
	if (bits && (acc & ((1u << bits) - 1))) {
		free(buf);
		return B64_BAD;
	}
	buf[o] = '\0';
	*out = buf;
	*out_len = o;
	return B64_OK;
}
