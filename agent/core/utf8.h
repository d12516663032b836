/*
 * Valid UTF-8 for places that demand it (JSON logs, /status). Error texts can hold bytes
 * from anywhere (an admin's error page in GBK, a reply cut in the middle of a character);
 * rather than refusing the whole document, each invalid byte becomes '?'.
 */
#ifndef GW_UTF8_H
#define GW_UTF8_H

#include <stddef.h>

/* Replace every byte that is not part of a valid UTF-8 sequence with '?', in place.
 * Returns the number of bytes replaced. */
size_t utf8_scrub(char *s);

/* The length of the valid UTF-8 sequence at s (1 to 4; 1 for ASCII, NUL included), with its
 * code point in *cp; 0 if the byte at s does not start a valid sequence (*cp is then that
 * byte). Never reads past a NUL. */
size_t utf8_char(const char *s, unsigned *cp);

#endif
