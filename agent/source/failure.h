/*
 * Why a conversation with an admin server failed: one vocabulary shared by the HTTP layer,
 * login, the admin calls, the sources' counters, /status and /metrics, so an operator sees
 * the same reason names everywhere. The kinds themselves, enum sync_fail, are carried by
 * every error (core/error.h, struct gw_err's kind); here are their words.
 */
#ifndef GW_FAILURE_H
#define GW_FAILURE_H

#include "core/error.h"

/* "connect", "timeout", "http", "code", "parse", "fetch", "too_large", "auth", "session". */
static inline const char *sync_fail_name(enum sync_fail f)
{
	static const char *const names[SYNC_FAIL_COUNT] = {
	    "ok",    "connect",   "timeout", "http",    "code",   "parse",
	    "fetch", "too_large", "auth",    "session", "stopped"};
	return (unsigned)f < SYNC_FAIL_COUNT ? names[f] : "?";
}

#endif
