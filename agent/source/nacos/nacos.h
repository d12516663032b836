/*
 * The Nacos source's own state, shared by its parts: sync.c (full reads, re-reading what a
 * listener named, the listeners' bodies), watch.c (the listener threads) and source.c (the
 * source table, the main thread with its retry schedule, status). Not a public header.
 *
 * Threads: the main thread ("nacos-0"; main's thread for initial_sync) owns the node map and
 * the reader; each listener thread ("nacos-wN") owns its HTTP handle and holds one long
 * poll of at most 10,000 keys. They meet under `status.mu`: a listener leaves the keys an answer
 * named in `changed` (or its failure) and signals `status.wake`; the main thread re-reads them,
 * builds every listener's body again and hands each the new one (`body_gen`), interrupting
 * a listener whose held request no longer says what is wanted. Nothing wakes on a timer
 * it does not need: the main thread sleeps until a listener signals, the settle window or
 * the resync is due, or the token must be renewed.
 */
#ifndef GW_NACOS_NACOS_H
#define GW_NACOS_NACOS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "source/nacos/client.h"
#include "source/nacos/config.h"
#include "source/node/node.h"
#include "source/kv/shell.h"
#include "source/source.h"
#include "shared/strbuf.h"

#define NACOS_NO_FULL_READ (-1)
#define NACOS_WATCHERS_MAX 64 /* 640,000 keys */

/* The keys one listener watches: pointers into the node map (node_wanted_slots), valid
 * until the wanted set changes, when they are listed again. */
struct nacos_chunk_key {
	const char *key;
	size_t klen;
	const char *tag; /* the md5 of what was read, "" while absent */
};
struct nacos_chunk {
	struct nacos_chunk_key *keys;
	size_t n, cap;
};

struct nacos_watcher {
	struct source *s;
	size_t idx;
	pthread_t thread;
	int started;
	struct http *h; /* its own; reopened after an interrupt */
	/* under s->sh.status.mu */
	char *body; /* NULL: no keys for it now */
	size_t body_len;
	uint64_t body_gen; /* moves with every new body */
	uint64_t posted_gen;
	int holding;   /* a request with body `posted_gen` is on its way */
	int answered;  /* it answered with changes: waits for a new body */
	int interrupt; /* interrupted on purpose: reopen and post the new body */
	size_t server; /* the server it posts to */
};

struct source {
	/* first (kv/shell.h): the thread, stop, and the status under its lock (sh.status.mu),
	 * which stop() and status() use from any thread */
	struct kv_shell sh;
	const struct cfg *cfg;
	const struct nacos_config *nc;
	struct gw_log *log;
	struct node_map *map;
	struct nacos_client *client;

	/* main thread (initial_sync before it) */
	size_t ep;          /* the server in use */
	int need_full;      /* the next read is a full one of this kv_full_kind, or
	                     * NACOS_NO_FULL_READ */
	int64_t resync_at;  /* monotonic ms of the next anti-entropy read; -1: off */
	uint64_t built_gen; /* the wanted set the bodies were built for */
	int bodies_dirty;   /* every body must be built again */
	uint8_t chunk_dirty[NACOS_WATCHERS_MAX]; /* a key of that listener changed its tag */
	struct nacos_chunk chunks[NACOS_WATCHERS_MAX];
	int released;        /* listeners that answered or failed wait for a body */
	uint64_t good_polls; /* listener requests answered (under mu): a try that worked */

	/* under sh.status.mu */
	pthread_cond_t wcv; /* the listeners wait on it */
	char **changed;     /* keys listeners named, not yet re-read */
	size_t n_changed, cap_changed;
	int watch_failed; /* a listener failed: the main thread takes it from here */
	enum sync_fail watch_why;
	char watch_msg[1024];
	struct nacos_watcher w[NACOS_WATCHERS_MAX];
	size_t n_w;   /* listener threads started */
	size_t n_use; /* of them with keys now */
};

/* sync.c */
/* A full read of kind from server ep into the map. 0, or -1 with err (kind an enum
 * sync_fail). */
int nacos_full_read(struct source *s, size_t ep, enum kv_full_kind kind, struct gw_err *err);
/* Re-read the keys a listener named, then every key they made wanted. 0 or -1 with err. */
int nacos_reread(struct source *s, char **keys, size_t n, struct gw_err *err);
/* Build the listeners' bodies for what is wanted now (every body when `all`, else those
 * whose keys changed) and hand them out, releasing the listeners that answered and
 * starting listener threads as needed. 0, or -1 with err. */
int nacos_publish_bodies(struct source *s, int all, struct gw_err *err);
/* A key was read again: its listener's body is to be built again. */
void nacos_chunk_dirty(struct source *s, const char *key);

/* watch.c */
void *nacos_watch_run(void *arg);

#endif
