/*
 * struct gw_err helpers. Kept tiny and allocation-free; see error.h for the convention.
 */
#include "error.h"

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
	char prefix[512], old[sizeof err->msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
	return -1;
}
