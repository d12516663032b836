/*
 * Parsers for the units of the configuration file (see units.h). Hand-written rather than
 * strtoll-based: strtoll accepts leading spaces, a sign and a partial parse, all of which
 * would let a malformed value through; here every character is accounted for and every
 * multiplication is checked for overflow before it happens.
 */
#include "shared/units.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* Read a run of decimal digits into *out (<= INT64_MAX). Returns the number of digits
 * read, 0 if none, -1 on overflow. */
static int read_digits(const char *s, int64_t *out)
{
	int64_t v = 0;
	int n = 0;
	while (s[n] >= '0' && s[n] <= '9') {
		int d = s[n] - '0';
		if (v > (INT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		n++;
	}
	*out = v;
	return n;
}

/* a * b + acc without overflow (all non-negative). */
static int mul_add(int64_t a, int64_t b, int64_t acc, int64_t *out)
{
	if (b != 0 && a > (INT64_MAX - acc) / b)
		return -1;
	*out = acc + a * b;
	return 0;
}

static const struct {
	const char *name;
	int64_t ms;
} duration_units[] = {
    {"h", 3600000},
    {"m", 60000},
    {"s", 1000},
    {"ms", 1},
};

int units_duration_ms(const char *s, int64_t *out)
{
	if (!s || !*s)
		return -1;
	if (strcmp(s, "0") == 0) {
		*out = 0;
		return 0;
	}
	int64_t total = 0;
	size_t next_unit = 0; /* units must come from largest to smallest, each once */
	while (*s) {
		int64_t n;
		int nd = read_digits(s, &n);
		if (nd <= 0)
			return -1;
		s += nd;
		size_t len = 0;
		while (s[len] >= 'a' && s[len] <= 'z')
			len++;
		if (len == 0)
			return -1; /* a bare number: ambiguous */
		size_t u;
		for (u = next_unit; u < sizeof duration_units / sizeof duration_units[0]; u++)
			if (strlen(duration_units[u].name) == len &&
			    memcmp(duration_units[u].name, s, len) == 0)
				break;
		if (u == sizeof duration_units / sizeof duration_units[0])
			return -1; /* unknown unit, repeated, or out of order */
		if (mul_add(n, duration_units[u].ms, total, &total) < 0)
			return -1;
		next_unit = u + 1;
		s += len;
	}
	*out = total;
	return 0;
}

int units_duration_fraction_ms(const char *s, int64_t *out)
{
	if (!s || !*s)
		return -1;
	int64_t total = 0;
	size_t next_unit = 0;
	int fractions = 0;
	while (*s) {
		int64_t whole, frac = 0, scale = 1;
		int nd = read_digits(s, &whole);
		if (nd <= 0)
			return -1;
		s += nd;
		if (*s == '.') {
			s++;
			int nf = 0;
			/* at most 9 fraction digits: anything finer than a nanosecond of an hour
			 * cannot come out as whole milliseconds anyway */
			for (; *s >= '0' && *s <= '9'; s++, nf++) {
				if (nf == 9)
					return -1;
				frac = frac * 10 + (*s - '0');
				scale *= 10;
			}
			if (nf == 0)
				return -1;
			fractions = 1;
		}
		size_t len = 0;
		while (s[len] >= 'a' && s[len] <= 'z')
			len++;
		size_t u;
		for (u = next_unit; u < sizeof duration_units / sizeof duration_units[0]; u++)
			if (len && strlen(duration_units[u].name) == len &&
			    memcmp(duration_units[u].name, s, len) == 0)
				break;
		if (u == sizeof duration_units / sizeof duration_units[0])
			return -1;
		int64_t unit = duration_units[u].ms, part;
		/* frac < scale <= 1e9 and unit <= 3.6e6: the product fits in int64 */
		if (frac * unit % scale != 0)
			return -1; /* not a whole number of milliseconds */
		if (mul_add(whole, unit, frac * unit / scale, &part) < 0 ||
		    part > INT64_MAX - total)
			return -1;
		total += part;
		next_unit = u + 1;
		s += len;
	}
	if (!fractions)
		return -1;
	*out = total;
	return 0;
}

int units_size(const char *s, int64_t *out)
{
	static const struct {
		const char *name;
		int64_t mult;
	} size_units[] = {
	    {"", 1},
	    {"KiB", 1024},
	    {"MiB", 1024 * 1024},
	    {"GiB", 1024 * 1024 * 1024},
	};
	if (!s)
		return -1;
	int64_t n;
	int nd = read_digits(s, &n);
	if (nd <= 0)
		return -1;
	for (size_t u = 0; u < sizeof size_units / sizeof size_units[0]; u++)
		if (strcmp(s + nd, size_units[u].name) == 0)
			return mul_add(n, size_units[u].mult, 0, out);
	return -1;
}

int units_mode(const char *s, unsigned *out)
{
	if (!s)
		return -1;
	size_t len = strlen(s);
	/* the leading 0 is required: a bare 420 may well be the decimal of 0644 */
	if (len < 2 || len > 5 || s[0] != '0')
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '7')
			return -1;
		v = v * 8 + (unsigned)(s[i] - '0');
	}
	if (v > 07777)
		return -1;
	*out = v;
	return 0;
}

int units_int(const char *s, int64_t *out)
{
	if (!s)
		return -1;
	int neg = 0;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	/* read the magnitude as negative so INT64_MIN fits */
	int64_t v = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		int d = *p - '0';
		if (v < (INT64_MIN + d) / 10)
			return -1;
		v = v * 10 - d;
	}
	if (p == s || *p)
		return -1;
	if (!neg) {
		if (v == INT64_MIN)
			return -1;
		v = -v;
	}
	*out = v;
	return 0;
}

int units_bool(const char *s, int *out)
{
	static const char *const truths[] = {"true", "yes", "on"};
	static const char *const lies[] = {"false", "no", "off"};
	if (!s)
		return -1;
	for (size_t i = 0; i < 3; i++) {
		if (strcasecmp(s, truths[i]) == 0)
			return *out = 1, 0;
		if (strcasecmp(s, lies[i]) == 0)
			return *out = 0, 0;
	}
	return -1;
}
