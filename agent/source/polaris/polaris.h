/*
 * The Polaris source's own state, shared by its files: client.c (one file read, a watch
 * answer understood), sync.c (what one session on one server does: full reads into the
 * node map, the watch loop, the resync) and source.c (the source table, the thread with
 * its server rotation and retry schedule, status). Not a public header.
 *
 * Threads: main's thread runs initial_sync before start(); after it, the source's thread
 * ("polaris-0") alone touches everything here except `sh.stop` (atomic) and `sh.status` (conn.h),
 * which stop() and status() use from any thread. The watch thread (watch.h) only carries
 * the held request.
 */
#ifndef GW_POLARIS_POLARIS_H
#define GW_POLARIS_POLARIS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "shared/strbuf.h"
#include "source/curl_http.h"
#include "source/node/node.h"
#include "source/polaris/config.h"
#include "source/polaris/versions.h"
#include "source/polaris/watch.h"
#include "source/kv/shell.h"
#include "source/source.h"

#define POLARIS_NO_FULL_READ (-1)

struct source {
	/* first (kv/shell.h): the thread, stop, and the status under its lock (sh.status.mu),
	 * which stop() and status() use from any thread */
	struct kv_shell sh;
	const struct cfg *cfg;
	const struct polaris_config *pc;
	struct gw_log *log;
	struct node_map *map;
	struct polaris_versions versions;
	struct http **conn; /* reads, by server (all opened by open()) */
	struct polaris_watch *watch;
	/* the watch bodies (sync.c), one per watch of at most POLARIS_WATCH_FILES files: built
	 * after a full read, grown when a file becomes wanted, patched when a version moves;
	 * each build is a new generation, which the versions' places refer to */
	struct polaris_body {
		struct strbuf b;
		size_t files;
		int inflight;       /* sent, its answer not taken (the body is lent) */
		int64_t sent_ms;    /* monotonic ms it was last sent */
		int64_t not_before; /* monotonic ms before which it is not sent (pacing) */
	} bodies[POLARIS_WATCH_SLOTS];
	size_t n_bodies;
	size_t body_files;       /* files in all of them */
	uint64_t body_gen;       /* 0: to build */
	uint64_t body_builds;    /* builds made: the next generation */
	uint64_t unread_checked; /* node_wanted_gen() when nothing was left unread; 0: none */
	char *token_header;      /* "X-Polaris-Token: ..." (secret) or NULL */
	char where[512];         /* "NS/GROUP (groups PLUGIN,SELECTOR,...)" for messages */

	/* the source's thread (initial_sync before it) */
	size_t srv;        /* the server in use */
	int need_full;     /* the next session starts with this kv_full_kind, or
	                    * POLARIS_NO_FULL_READ */
	int64_t resync_at; /* monotonic ms of the next anti-entropy read; -1: off */
	int exchanged;     /* the session had an answer from its server (resets the schedule) */
	int idle_answers;  /* watch answers in a row that brought nothing new */
};

/* client.c */
struct polaris_file {
	int present;   /* a release with content (blank or "null" still counts: node/ decides) */
	char *content; /* NUL-terminated; NULL when not present */
	size_t len;
	uint64_t version; /* 0: not found */
};
/* GetConfigFile of key on server srv. 0 (f filled; polaris_file_free), or -1 with err
 * (its kind an enum sync_fail) naming the server, the file and the groups. */
int polaris_read(struct source *s, size_t srv, const char *key, size_t klen, struct polaris_file *f,
                 struct gw_err *err);
void polaris_file_free(struct polaris_file *f);
/* A WatchConfigFile answer: 1 with the file it names (*name malloc'd, *version), 0 for no
 * change, -1 with err. */
int polaris_watch_answer(struct source *s, struct polaris_watch_result *res, char **name,
                         size_t *name_len, uint64_t *version, struct gw_err *err);

/* sync.c */
/* Read every wanted file from server srv into the node map as a full read of `kind`. */
int polaris_full_read(struct source *s, size_t srv, enum kv_full_kind kind, struct gw_err *err);
/* One session on s->srv: the full read if one is needed, then watch until a failure or
 * stop. -1 with err (SYNC_STOPPED when stopped). */
int polaris_session(struct source *s, struct gw_err *err);

/* source.c: status updates from the thread */
void polaris_count(struct source *s, uint64_t polls, uint64_t fetches, uint64_t bytes,
                   uint64_t watches);

#endif
