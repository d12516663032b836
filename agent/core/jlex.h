/*
 * The tokens of JSON exactly as jansson's json_loadb() reads them: strings (control
 * characters, escapes, \u surrogate pairs, no \u0000, strict UTF-8) and numbers (no
 * leading zeros, integers within int64_t, reals that do not overflow a double), and the
 * decoding of a string known valid. For a parser that must refuse exactly what jansson
 * refuses without building its tree (model/itemdec.c); whatever jansson accepts here is
 * accepted, whatever it refuses is refused.
 */
#ifndef GW_JLEX_H
#define GW_JLEX_H

#include <stddef.h>

/* p just after a string's opening quote: the byte after its closing quote, or NULL when
 * jansson refuses the string. *esc is set to 1 when it holds an escape (else its bytes are
 * its value). */
const char *jlex_string_end(const char *p, const char *end, int *esc);

/* p at '-' or a digit: the byte after the number, or NULL when jansson refuses it. */
const char *jlex_number_end(const char *p, const char *end);

/* [p, kend) a valid string's bytes without the quotes, decoded into out (room for kend - p
 * bytes: decoding never lengthens; out may be p). Returns the decoded length. */
size_t jlex_decode(const char *p, const char *kend, char *out);

#endif
