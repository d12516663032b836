/*
 * The start-up full fetch: every configured group from the first admin server that
 * answers correctly (servers tried in order, logging in first where configured); the
 * versions enter through the ingest (store/ingest.h). If none answers, the daemon keeps
 * running and the pollers catch up later: the listener reports a group we hold nothing
 * for with a placeholder md5 (ADMIN_NO_MD5), which never equals the admin's, so the
 * admin names every such group at once and the poller fetches it.
 *
 * The startup object lets another thread (the one watching for SIGTERM) end a start-up
 * fetch that is waiting on a slow admin.
 */
#ifndef GW_STARTUP_H
#define GW_STARTUP_H

#include "config/config.h"
#include "core/error.h"
#include "core/log.h"
#include "store/ingest.h"

struct startup;

int startup_new(struct startup **out, const struct cfg *cfg, struct ingest *in, struct gw_log *log,
                struct gw_err *err);
/* 0: one server answered and its groups were offered to the store. -1: no server answered
 * (err summarises the last failure), or startup_stop() was called. */
int startup_run(struct startup *s, struct gw_err *err);
/* End startup_run() at once (thread-safe); later runs fail at once too. */
void startup_stop(struct startup *s);
int startup_stopped(struct startup *s);
/* After startup_run() returned 0: which server answered (its index in cfg->servers) and
 * when (wall clock ms), so that server's poller counts the fetch as its first success. */
void startup_served(const struct startup *s, size_t *server, int64_t *at_ms);
void startup_free(struct startup *s);

#endif
