/*
 * The Polaris source's watches, each on a thread of its own ("polaris-w"). Polaris holds a
 * WatchConfigFile for 30 s and answers at most one file per call, while the source must
 * build a settled group 100 ms after a change: the source thread cannot sit in a 30 s
 * request with a group waiting. So the held requests run here, each on its own
 * connection, and the source thread sleeps on the first answer, its settle deadline, its
 * resync time or stop, whichever comes first, then builds, reads and re-watches (the
 * source thread alone reads files and owns the node map; these threads only carry the
 * requests).
 *
 * Slots: the source splits its files into watches of at most POLARIS_WATCH_FILES each, one
 * slot per watch (a thread and its connection, made when the slot is first used), so a
 * change re-sends the body of its own watch, not of every file. One request per slot at a
 * time: send() hands a body over, wait() takes the first answer of any slot. cancel() ends
 * every held request (their answers then come back as SYNC_STOPPED, to be dropped); the
 * connection one ran on is closed and a fresh one opened for the next request, as an
 * interrupted libcurl handle stays interrupted (curl_http.h).
 */
#ifndef GW_POLARIS_WATCH_H
#define GW_POLARIS_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/curl_http.h"

/* Files per watch: a change re-sends at most this many files' body (about 1.3 MB). */
#define POLARIS_WATCH_FILES 10000
/* Slots at most: 640,000 files. */
#define POLARIS_WATCH_SLOTS 64

struct polaris_watch;

/* The answer to one request: rc 0 with the reply (any HTTP status), or -1 with err. */
struct polaris_watch_result {
	int rc;
	struct http_reply reply;
	struct gw_err err;
	size_t server; /* the server it was sent to */
	size_t slot;   /* the slot it was sent on */
};

/* `servers` (n of them) and `token` (NULL: none; a secret, never logged) outlive it. */
int polaris_watch_new(struct polaris_watch **out, const struct cfg *cfg, char *const *servers,
                      size_t n, const char *token, struct gw_err *err);
/* Stop the threads, close the connections. NULL is fine. */
void polaris_watch_free(struct polaris_watch *w);

/* Send body[0..len) to server i on slot (< POLARIS_WATCH_SLOTS, idle). The body is
 * borrowed: it must stay as it is until wait() has taken that slot's answer (the source
 * patches a watch body only between its watches), so bodies are not copied per change. */
int polaris_watch_send(struct polaris_watch *w, size_t slot, size_t server, const char *body,
                       size_t len, struct gw_err *err);
/*
 * Wait up to timeout_ms (-1: no limit; 0: only look) for the answer of any pending
 * request. 1: *res filled, its slot idle again (free res->reply with http_reply_free); 0:
 * the time ran out or wakeup() was called.
 */
int polaris_watch_wait(struct polaris_watch *w, int64_t timeout_ms,
                       struct polaris_watch_result *res);
/* How many slots have a request sent and its answer not taken. */
size_t polaris_watch_pending(struct polaris_watch *w);
/* End every pending request at once (their answers are SYNC_STOPPED). Thread-safe. */
void polaris_watch_cancel(struct polaris_watch *w);
/* Make a wait() return now (stop). Thread-safe. */
void polaris_watch_wakeup(struct polaris_watch *w);

#endif
