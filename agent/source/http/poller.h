/*
 * One long-poll thread per admin server: listen, fetch exactly the groups the admin named,
 * offer each through the ingest (store/ingest.h), listen again at once. Failures follow retry.h
 * (rounds of tries `interval` apart, `backoff` between rounds); every wait and every held request
 * ends within milliseconds of poller_stop(). A lagging admin (it serves versions older than the
 * store holds, so it answers every poll at once) is polled again only after the retry
 * interval, so it never becomes a request storm.
 */
#ifndef GW_POLLER_H
#define GW_POLLER_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/failure.h"
#include "model/groupdata.h"
#include "core/log.h"
#include "source/source.h"
#include "store/ingest.h"

struct poller;

/* in (where versions go, and what is held) and log must outlive the poller. last_success_ms:
 * the start-up fetch this server answered (wall clock), its first success; 0: none. */
int poller_start(struct poller **out, const struct cfg *cfg, size_t server_index, struct ingest *in,
                 struct gw_log *log, int64_t last_success_ms, struct gw_err *err);
/* Ask the thread to stop; returns at once and wakes a held poll or a wait. */
void poller_stop(struct poller *p);
/* Stop, wait for the thread to end, then free everything. NULL is fine. Stopping every
 * poller before freeing any ends them all in parallel. */
void poller_free(struct poller *p);
/* A consistent copy of the poller's state and counters. */
void poller_status(struct poller *p, struct source_conn_status *out);

#endif
