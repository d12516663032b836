/*
 * Error reporting for the agent's internals: a function that can fail returns 0 or -1 and,
 * on -1, leaves a human-readable message in a caller-supplied struct gw_err. The message
 * names the server, group, file or key involved; callers add context by prefixing.
 * A fixed buffer keeps error paths free of allocation (they run when memory may be short).
 * A part whose callers act on the kind of a failure (a source counting connect, timeout,
 * auth... failures) puts that kind in the same struct, so there is one error to pass.
 */
#ifndef GW_ERROR_H
#define GW_ERROR_H

#include <stddef.h>

struct gw_err {
	char msg[1024];
	/* What kind of failure, for a caller that counts or acts on kinds without reading the
	 * message: the failing part's own vocabulary (a source's enum sync_fail), 0 when none.
	 * gw_errf() and gw_err_prefix() leave it as it is. */
	int kind;
};

/* Set the message (printf-style) and return -1, so `return gw_errf(err, ...)` reads well.
 * err may be NULL. */
int gw_errf(struct gw_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefix the existing message: "PREFIX: old message". Returns -1. */
int gw_err_prefix(struct gw_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
