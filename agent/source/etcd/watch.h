/*
 * The transport of etcd's watch stream: one POST /v3/watch on the JSON gateway whose
 * answer is an endless chunked body, driven through a multi handle that the source's
 * thread sleeps in (curl_multi_poll) until bytes arrive, its own deadline comes, or another
 * thread wakes it (etcd_watch_wakeup: stop). Bytes go through the framing (stream.h) to a
 * callback, one JSON object at a time; what they mean is the caller's business.
 *
 * Threads: one thread calls everything but etcd_watch_wakeup().
 */
#ifndef GW_ETCD_WATCH_H
#define GW_ETCD_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/etcd/stream.h"
#include "source/failure.h"

struct etcd_watch;

/* max_msg: the largest single answer accepted (cfg->max_response). */
int etcd_watch_new(struct etcd_watch **out, const struct cfg *cfg, size_t max_msg,
                   struct gw_err *err);
void etcd_watch_free(struct etcd_watch *w);
/* Wake the thread sleeping in etcd_watch_wait(). Thread-safe. */
void etcd_watch_wakeup(struct etcd_watch *w);

/* Start the stream: POST endpoint + "/v3/watch" with body (copied), the Authorization
 * header line or NULL; label names it in errors ("watch of /ns/shenyu/"). Every object
 * the stream brings is given to fn; fn returning non-zero ends the stream. */
int etcd_watch_open(struct etcd_watch *w, const char *endpoint, const char *auth_header,
                    const char *body, const char *label, etcd_stream_fn fn, void *arg,
                    struct gw_err *err);
/* End the stream (if open). */
void etcd_watch_close(struct etcd_watch *w);

/* Sleep until the stream has bytes, a wake-up, or timeout_ms passed (< 0: no limit). With
 * no stream open it is a plain interruptible sleep. */
void etcd_watch_wait(struct etcd_watch *w, int64_t timeout_ms);

/*
 * Read what has arrived, calling fn for each object. 0: the stream is still open. 1: it
 * has ended and is closed: *fn_rc is fn's non-zero value if fn ended it (else 0), and
 * otherwise err says why (its kind an enum sync_fail) (the server closed it, an HTTP error status
 * with etcd's message, a connection error, a body that is not a stream of objects, or an answer
 * over max_msg: SYNC_FAIL_TOO_LARGE).
 */
int etcd_watch_perform(struct etcd_watch *w, int *fn_rc, struct gw_err *err);

#endif
