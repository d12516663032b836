/*
 * The etcd source's own state, shared by its two halves: sync.c (what one endpoint's
 * session does: full reads into the mirror, the watch stream, the resync) and source.c
 * (the source table, the thread with its endpoint rotation and retry schedule, status).
 * Not a public header: nothing outside source/etcd/ includes it.
 *
 * Threads: main's thread runs initial_sync before start(); after it, the source's own
 * thread ("etcd-0") alone touches everything here except `sh.stop` (atomic) and `sh.status`
 * (conn.h), which stop() and status() use from any thread.
 */
#ifndef GW_ETCD_ETCD_H
#define GW_ETCD_ETCD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "source/etcd/client.h"
#include "source/etcd/config.h"
#include "source/etcd/watch.h"
#include "source/kv/layout.h"
#include "source/kv/mirror.h"
#include "source/kv/shell.h"
#include "source/source.h"

#define ETCD_NO_FULL_READ (-1)

/* How one session on one endpoint ended. */
enum etcd_outcome {
	ETCD_STOPPED = 0,
	ETCD_FAILED,     /* never got a watch going: the next endpoint, then the schedule */
	ETCD_ENDED,      /* a watch that ran has ended: resume at once */
	ETCD_COMPACTED,  /* the watch's start revision is gone: read everything again */
	ETCD_AUTH_RETRY, /* the watch was refused for its token: authenticate, go again */
};

struct source {
	/* first (kv/shell.h): the thread, stop, and the status under its lock (sh.status.mu),
	 * which stop() and status() use from any thread */
	struct kv_shell sh;
	const struct cfg *cfg;
	const struct kv_config *kv; /* etcd: (config.h) */
	struct gw_log *log;
	struct kv_layout layout;
	struct kv_mirror *mirror;
	struct etcd_client *client;
	struct etcd_watch *watch;
	char *prefix; /* ROOT + "/": the one watched range */

	/* the source's thread (initial_sync before it) */
	size_t ep;              /* the endpoint in use */
	int64_t rev;            /* the store revision the mirror reflects; 0: nothing read */
	int64_t read_rev;       /* the revision of the last full read: events up to it are in it */
	int need_full;          /* the next session starts with this kv_full_kind, or
	                         * ETCD_NO_FULL_READ */
	int64_t resync_at;      /* monotonic ms of the next anti-entropy read; -1: off */
	int established;        /* the current stream's watch was created */
	int64_t established_ms; /* monotonic ms when it was */
	int auth_retried;       /* the watch was already refused for its token once (since
	                         * the last watch that lived) */
	int end_code;           /* set by the stream callback when it ends the stream */
	struct gw_err end;      /* why the stream callback ended it */
};

/* sync.c */
/* Read every configured group from endpoint ep at one revision into the mirror as a full
 * read of `kind`. 0, or -1 with err (its kind an enum sync_fail). */
int etcd_full_read(struct source *s, size_t ep, enum kv_full_kind kind, struct gw_err *err);
/* One session on s->ep: the full read if one is needed, then the watch until it ends. */
enum etcd_outcome etcd_session(struct source *s, struct gw_err *err);
/* Flush the mirror's due groups; returns the mirror's next deadline (or -1). */
int64_t etcd_flush_due(struct source *s, int64_t now);

#endif
