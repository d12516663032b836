/*
 * The etcd source's unary calls: /v3/kv/range and /v3/auth/authenticate on one of the
 * configured endpoints, over the HTTP transport of the long-polling source (http.h: one
 * keep-alive connection per endpoint, TLS, timeouts, interruptible by another thread).
 * It holds the auth token when etcd.username is set: a call made without one, or refused
 * as unauthenticated (a token expires after etcd's --auth-token-ttl of idleness),
 * authenticates and is made once more. The password is only ever in the authenticate
 * request's body.
 *
 * Threads: one thread calls everything but etcd_client_interrupt().
 */
#ifndef GW_ETCD_CLIENT_H
#define GW_ETCD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "core/log.h"
#include "source/etcd/reply.h"
#include "source/failure.h"

struct etcd_client;

/* One transport per etcd.endpoints entry; nothing is sent yet. log: where a renewed
 * token is reported. */
int etcd_client_open(struct etcd_client **out, const struct cfg *cfg, struct gw_log *log,
                     struct gw_err *err);
void etcd_client_close(struct etcd_client *c);
/* Every call, now and later, ends at once with SYNC_STOPPED. Thread-safe. */
void etcd_client_interrupt(struct etcd_client *c);

/* The Authorization header line for endpoint-independent use ("Authorization: TOKEN"),
 * or NULL without auth or before a token was obtained. Valid until the next call. */
const char *etcd_client_auth_header(const struct etcd_client *c);

/* Drop the token: the next session authenticates before its first call. */
void etcd_client_forget_token(struct etcd_client *c);

/* Get a (new) token from endpoint ep. 0, or -1 with err (its kind SYNC_FAIL_AUTH if
 * refused). */
int etcd_client_authenticate(struct etcd_client *c, size_t ep, struct gw_err *err);

/*
 * The keys under prefix at revision (0: the newest), from endpoint ep: from `from` on
 * (NULL: all of them), at most `limit` (0: no limit; out->more says whether keys were left
 * out). 0 with *out filled; -1 with err naming the endpoint and the prefix, its kind the
 * enum sync_fail: SYNC_FAIL_SESSION if the revision has been compacted away or is not yet
 * known to this member (ask for the newest).
 */
int etcd_client_range(struct etcd_client *c, size_t ep, const char *prefix, const char *from,
                      size_t from_len, int64_t revision, int64_t limit, struct etcd_range *out,
                      struct gw_err *err);

#endif
