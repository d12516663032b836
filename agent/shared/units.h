/*
 * Units of the configuration file: durations ("200ms", "5s", "1m30s"), sizes ("64MiB") and
 * file modes ("0640"). Each parser takes the whole string and either converts all of it or
 * refuses it (0 / -1), never a prefix, so a typo such as "5sec" or "64MB" is an error rather
 * than a silent misreading. The callers (config.c, plugin_config.c) turn a -1 into a
 * message naming the key, the file position and an example of the expected form.
 */
#ifndef GW_UNITS_H
#define GW_UNITS_H

#include <stdint.h>

/*
 * Duration in milliseconds: one or more NUMBER UNIT parts with UNIT one of h, m, s, ms,
 * each unit at most once and from largest to smallest ("1h30m", "1m30s", "2s500ms").
 * A bare number is refused as ambiguous, except "0". No sign, no spaces, no fractions.
 * -1 also on overflow of int64 milliseconds.
 */
int units_duration_ms(const char *s, int64_t *out);

/*
 * For the message only: a duration written with a fraction ("1.5m", "0.5s", "1m2.5s"),
 * which units_duration_ms() refuses, as the whole milliseconds it means, so the refusal
 * can name the form to write instead ("90s"). 0 and *out; -1 if `s` has no fraction, is
 * not whole milliseconds ("1.0005s") or is not a duration at all. Fractions stay refused:
 * one spelling per value keeps every consumer of the file (plugins' getters included)
 * reading it alike.
 */
int units_duration_fraction_ms(const char *s, int64_t *out);

/* Size in bytes: a plain byte count, or a number followed by KiB, MiB or GiB (powers of
 * 1024). "KB"/"MB" are refused: they are ambiguous between 1000 and 1024. */
int units_size(const char *s, int64_t *out);

/* File mode: an octal string with its leading 0 ("0640", "00755"; 2 to 5 digits), value
 * at most 07777. "640" is refused: in YAML a bare 420 is often the decimal of 0644, and
 * guessing either way would be wrong half the time. */
int units_mode(const char *s, unsigned *out);

/* Whole number in decimal, optional sign; no spaces, no fraction, no overflow. */
int units_int(const char *s, int64_t *out);

/* true/false, yes/no, on/off, in any case -> 1/0. */
int units_bool(const char *s, int *out);
/* What units_bool() accepts, for the messages that refuse a value. */
#define UNITS_BOOL_FORMS "true or false (also yes/no, on/off)"

#endif
