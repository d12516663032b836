/*
 * JSON tokens as jansson reads them (jlex.h). The string scan is the hot loop of a full
 * sync: plain bytes are skipped eight at a time (a word test for '"', '\\', control
 * bytes and bytes >= 0x80), everything else goes one sequence at a time.
 */
#include "core/jlex.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* p at a backslash inside a string: the byte after the escape, or NULL. A \u escape must
 * be a code point other than U+0000, a high surrogate only as the first half of a pair. */
static const char *escape(const char *p, const char *end)
{
	unsigned cp, lo;
	if (end - p < 2)
		return NULL;
	switch (p[1]) {
	case '"':
	case '\\':
	case '/':
	case 'b':
	case 'f':
	case 'n':
	case 'r':
	case 't':
		return p + 2;
	case 'u':
		if (end - p < 6 || hex4(p + 2, &cp) != 0 || cp == 0 ||
		    (cp >= 0xDC00 && cp <= 0xDFFF))
			return NULL;
		if (cp < 0xD800 || cp > 0xDBFF)
			return p + 6;
		if (end - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, &lo) != 0 ||
		    lo < 0xDC00 || lo > 0xDFFF)
			return NULL;
		return p + 12;
	default:
		return NULL;
	}
}

/* p at the lead byte (>= 0x80) of a UTF-8 sequence: the byte after it, or NULL when it is
 * not a shortest-form encoding of a scalar value (no surrogates, at most U+10FFFF). */
static const char *utf8_seq(const char *p, const char *end)
{
	unsigned char c = (unsigned char)p[0];
	size_t n;
	unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
	if (c >= 0xC2 && c <= 0xDF)
		n = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* beyond U+10FFFF */
	} else
		return NULL;
	if ((size_t)(end - p) < n)
		return NULL;
	unsigned char c1 = (unsigned char)p[1];
	if (c1 < lo || c1 > hi)
		return NULL;
	for (size_t i = 2; i < n; i++)
		if (((unsigned char)p[i] & 0xC0) != 0x80)
			return NULL;
	return p + n;
}

/* Any byte of w that ends a run of plain string bytes: '"', '\\', < 0x20 or >= 0x80. */
static int special8(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
	uint64_t t = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w;
	return (t & high) != 0;
}

/* p just after a string's opening quote: the byte after its closing quote, or NULL when
 * jansson would refuse it. *esc is set when it holds an escape. The hot loop of a sync:
 * plain bytes are skipped eight at a time. */
const char *jlex_string_end(const char *p, const char *end, int *esc)
{
	for (;;) {
		uint64_t w;
		while (end - p >= 8) {
			memcpy(&w, p, 8);
			if (special8(w))
				break;
			p += 8;
		}
		while (p < end && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80 &&
		       *p != '"' && *p != '\\')
			p++;
		if (p >= end)
			return NULL;
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			return p + 1;
		if (c == '\\') {
			*esc = 1;
			p = escape(p, end);
		} else if (c < 0x20) {
			return NULL;
		} else {
			p = utf8_seq(p, end);
		}
		if (!p)
			return NULL;
	}
}

/* A real's text overflows a double (jansson refuses it). Its text is copied for strtod,
 * with the locale's decimal point as jansson does. Rare: items hold integers. */
static int real_overflows(const char *s, size_t n)
{
	char small[64];
	char *buf = n < sizeof small ? small : malloc(n + 1);
	if (!buf)
		return 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *dot = memchr(buf, '.', n);
	if (dot)
		*dot = *localeconv()->decimal_point;
	errno = 0;
	double v = strtod(buf, NULL);
	int over = (v == HUGE_VAL || v == -HUGE_VAL) && errno == ERANGE;
	if (buf != small)
		free(buf);
	return over;
}

/* p at '-' or a digit: the byte after the number, or NULL when jansson would refuse it. */
const char *jlex_number_end(const char *p, const char *end)
{
	const char *s = p;
	int neg = *p == '-', real = 0;
	if (neg)
		p++;
	if (p >= end)
		return NULL;
	const char *digits = p;
	if (*p == '0') {
		p++;
		if (p < end && is_digit(*p))
			return NULL;
	} else if (is_digit(*p)) {
		while (p < end && is_digit(*p))
			p++;
	} else {
		return NULL;
	}
	size_t nd = (size_t)(p - digits);
	if (p < end && *p == '.') {
		p++;
		if (p >= end || !is_digit(*p))
			return NULL;
		while (p < end && is_digit(*p))
			p++;
		real = 1;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !is_digit(*p))
			return NULL;
		while (p < end && is_digit(*p))
			p++;
		real = 1;
	}
	if (real)
		return real_overflows(s, (size_t)(p - s)) ? NULL : p;
	/* an integer must fit int64_t (strtoll's ERANGE in jansson) */
	if (nd > 19 ||
	    (nd == 19 &&
	     memcmp(digits, neg ? "9223372036854775808" : "9223372036854775807", 19) > 0))
		return NULL;
	return p;
}

/* [p, kend) a string's bytes without the quotes, known valid: decoded into out (room for
 * kend - p bytes: a string never grows by decoding). Returns the decoded length. */
size_t jlex_decode(const char *p, const char *kend, char *out)
{
	char *o = out;
	while (p < kend) {
		if (*p != '\\') {
			*o++ = *p++;
			continue;
		}
		char c = p[1];
		p += 2;
		switch (c) {
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u': {
			unsigned cp, lo;
			hex4(p, &cp);
			p += 4;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				hex4(p + 2, &lo);
				p += 6;
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
			}
			if (cp < 0x80) {
				*o++ = (char)cp;
			} else if (cp < 0x800) {
				*o++ = (char)(0xC0 | cp >> 6);
				*o++ = (char)(0x80 | (cp & 0x3F));
			} else if (cp < 0x10000) {
				*o++ = (char)(0xE0 | cp >> 12);
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*o++ = (char)(0x80 | (cp & 0x3F));
			} else {
				*o++ = (char)(0xF0 | cp >> 18);
				*o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
				*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
				*o++ = (char)(0x80 | (cp & 0x3F));
			}
			break;
		}
		default: /* '"', '\\', '/' */
			*o++ = c;
			break;
		}
	}
	return (size_t)(o - out);
}
