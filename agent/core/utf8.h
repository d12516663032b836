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

#endif
