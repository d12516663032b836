/*
 * The Polaris source's watch, on a thread of its own ("polaris-w"). Polaris holds a
 * WatchConfigFile for 30 s and answers at most one file per call, while the source must
 * build a settled group 100 ms after a change: the source thread cannot sit in a 30 s
 * request with a group waiting. So the held request runs here, on its own connection, and
 * the source thread sleeps on the answer, its settle deadline, its resync time or stop,
 * whichever comes first, then builds, reads and re-watches (the source thread alone reads
 * files and owns the node map; this thread only carries the request).
 *
 * One request at a time: send() hands a body over, wait() takes the answer. cancel() ends
 * a held request (its answer then comes back as SYNC_STOPPED, to be dropped); the
 * connection it ran on is closed and a fresh one opened for the next request, as an
 * interrupted libcurl handle stays interrupted (curl_http.h).
 */
#ifndef GW_POLARIS_WATCH_H
#define GW_POLARIS_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/curl_http.h"

struct polaris_watch;

/* The answer to one request: rc 0 with the reply (any HTTP status), or -1 with err. */
struct polaris_watch_result {
	int rc;
	struct http_reply reply;
	struct gw_err err;
	size_t server; /* the server it was sent to */
};

/* `servers` (n of them) and `token` (NULL: none; a secret, never logged) outlive it. */
int polaris_watch_new(struct polaris_watch **out, const struct cfg *cfg, char *const *servers,
                      size_t n, const char *token, struct gw_err *err);
/* Stop the thread, close the connections. NULL is fine. */
void polaris_watch_free(struct polaris_watch *w);

/* Send body[0..len) to server i. Only when no request is pending. The body is borrowed:
 * it must stay as it is until wait() has taken the answer (the source patches its watch
 * body only between watches), so 10 MB of body are not copied for every change. */
int polaris_watch_send(struct polaris_watch *w, size_t server, const char *body, size_t len,
                       struct gw_err *err);
/*
 * Wait up to timeout_ms (-1: no limit) for the pending request's answer. 1: *res filled
 * (free res->reply with http_reply_free); 0: the time ran out or wakeup() was called.
 */
int polaris_watch_wait(struct polaris_watch *w, int64_t timeout_ms,
                       struct polaris_watch_result *res);
/* End the pending request at once (its answer is SYNC_STOPPED). */
void polaris_watch_cancel(struct polaris_watch *w);
/* Make a wait() return now (stop). Thread-safe. */
void polaris_watch_wakeup(struct polaris_watch *w);

#endif
