/*
 * struct gw_err helpers. Kept tiny and allocation-free; see error.h for the convention.
 */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gw_errf(struct gw_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int gw_err_prefix(struct gw_err *err, const char *fmt, ...)
{
	if (!err)
		return -1;
	char prefix[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	size_t plen = strlen(prefix) + 2, cap = sizeof err->msg;
	size_t olen = strnlen(err->msg, cap - 1);
	if (plen + olen >= cap)
		olen = cap - 1 - plen; /* truncation of the tail is acceptable */
	memmove(err->msg + plen, err->msg, olen);
	memcpy(err->msg, prefix, plen - 2);
	memcpy(err->msg + plen - 2, ": ", 2);
	err->msg[plen + olen] = '\0';
	return -1;
}
