/*
 * The Consul source's own state, shared by its two halves: sync.c (what one server's
 * session does: full reads into the mirror, the blocking queries, their diff, the resync)
 * and source.c (the source table, the thread with its server rotation and retry schedule,
 * status). Not a public header: nothing outside source/consul/ includes it.
 *
 * Threads: main's thread runs initial_sync before start(); after it, the source's own
 * thread ("consul-0") alone touches everything here except `sh.stop` (atomic, with
 * sh.status.wake) and `sh.status` (conn.h), which stop() and status() use from any thread.
 */
#ifndef GW_CONSUL_CONSUL_H
#define GW_CONSUL_CONSUL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "source/consul/config.h"
#include "source/consul/keys.h"
#include "source/curl_http.h"
#include "source/kv/layout.h"
#include "source/kv/mirror.h"
#include "source/kv/shell.h"
#include "source/source.h"

#define CONSUL_NO_FULL_READ (-1)

/* How one session on one server ended. */
enum consul_outcome {
	CONSUL_STOPPED = 0,
	CONSUL_FAILED, /* a failed try: the next server, then the schedule */
};

struct source {
	/* first (kv/shell.h): the thread, stop, and the status under its lock (sh.status.mu),
	 * which stop() and status() use from any thread */
	struct kv_shell sh;
	const struct cfg *cfg;
	const struct consul_config *cc;
	struct gw_log *log;
	struct kv_layout layout;
	struct kv_mirror *mirror;
	struct http **srv; /* one per server */
	size_t n_srv;
	char *url;    /* "/v1/kv/ESCAPED-PREFIX/?recurse": the one watched prefix */
	char *prefix; /* the prefix and its groups, for messages ("ns/shenyu/ (PLUGIN, RULE)") */
	char *key_prefix; /* the prefix alone ("ns/shenyu/"), for an ACL policy's key_prefix */
	char *token_h;    /* "X-Consul-Token: ..." or NULL (a secret) */

	/* the source's thread (initial_sync before it) */
	struct consul_keys keys; /* what the mirror holds, with each key's ModifyIndex */
	char *path;              /* "/" + a key: the mirror's path form (grown as needed) */
	size_t path_cap;
	size_t ep;         /* the server in use */
	uint64_t index;    /* the index the next blocking query sends; 0: nothing read */
	int need_full;     /* the next session starts with this kv_full_kind, or
	                    * CONSUL_NO_FULL_READ */
	int64_t resync_at; /* monotonic ms of the next anti-entropy read; -1: off */
	unsigned early;    /* answers in a row that came back early with nothing new */
	int established;   /* this session had an answer */
	int64_t established_ms;
};

/* sync.c */
/* Read the whole prefix from server ep without an index into the mirror as a full read of
 * `kind`. 0, or -1 with err (its kind an enum sync_fail). */
int consul_full_read(struct source *s, size_t ep, enum kv_full_kind kind, struct gw_err *err);
/* One session on s->ep: the full read if one is needed, then blocking queries until one
 * fails or stop. */
enum consul_outcome consul_session(struct source *s, struct gw_err *err);
/* Flush the mirror's due groups; returns the mirror's next deadline (or -1). */
int64_t consul_flush_due(struct source *s, int64_t now);

#endif
