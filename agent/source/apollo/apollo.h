/*
 * The Apollo source's own state, shared by its two halves: sync.c (what one session with a
 * config service does: the reads into the node map, the notification long poll, the settle
 * wait, the resync) and source.c (the source table, the thread with its service rotation
 * and retry schedule, status). Not a public header.
 *
 * Threads: main's thread runs initial_sync before start(); after it the source's own thread
 * ("apollo-0") alone touches everything here except `sh.stop` (atomic) and `sh.status`
 * (conn.h: the status under its lock, the wake-up), which stop() and status() use from any thread.
 */
#ifndef GW_APOLLO_H
#define GW_APOLLO_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "source/apollo/client.h"
#include "source/apollo/config.h"
#include "source/kv/mirror.h"
#include "source/node/node.h"
#include "source/kv/shell.h"
#include "source/source.h"

#define APOLLO_NO_FULL_READ (-1)

struct source {
	/* first (kv/shell.h): the thread, stop, and the status under its lock (sh.status.mu),
	 * which stop() and status() use from any thread */
	struct kv_shell sh;
	const struct cfg *cfg;
	const struct apollo_config *ac;
	struct gw_log *log;
	struct node_map *map;
	struct apollo_client *client;

	/* the source's thread (initial_sync before it) */
	json_t *held;         /* the configurations of the release applied; NULL: none */
	char *release_key;    /* its releaseKey; NULL: none */
	int64_t notification; /* the notification id reached; -1: none yet */
	int need_full;        /* the next session starts with this kv_full_kind, or
	                       * APOLLO_NO_FULL_READ */
	int64_t resync_at;    /* monotonic ms of the next anti-entropy read; -1: off */
	int progress;         /* the session in course got somewhere (a poll answered, a
	                       * release applied): its failure starts the schedule over */
};

/* sync.c */
/* Read the whole release as a full read of `kind`. 0, or -1 with err (its kind an enum
 * sync_fail). */
int apollo_full_read(struct source *s, enum kv_full_kind kind, struct gw_err *err);
/* One session on the service in use: the full read if one is needed, then notifications
 * until something fails (returns -1 with err) or stop (0). */
int apollo_session(struct source *s, struct gw_err *err);

/* source.c: status updates from the thread */
void apollo_mark_success(struct source *s);
void apollo_count(struct source *s, int poll, size_t fetched_bytes);

#endif
