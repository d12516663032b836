/*
 * UTF-8 scrubbing (see utf8.h): a strict decoder (no overlongs, no surrogates, nothing
 * above U+10FFFF), the same rules jansson applies, so a scrubbed string always encodes.
 */
#include "core/utf8.h"

/* Length of the valid sequence at s, or 0; its code point in *out. */
static size_t valid_at(const unsigned char *s, unsigned *out)
{
	unsigned char c = s[0];
	*out = c;
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned min;
	unsigned cp;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, min = 0x80, cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3, min = 0x800, cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, min = 0x10000, cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*out = cp;
	return n;
}

size_t utf8_char(const char *s, unsigned *cp)
{
	return valid_at((const unsigned char *)s, cp);
}

size_t utf8_scrub(char *s)
{
	size_t replaced = 0;
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		unsigned cp;
		size_t n = valid_at(p, &cp);
		if (n) {
			p += n;
		} else {
			*p++ = '?';
			replaced++;
		}
	}
	return replaced;
}
