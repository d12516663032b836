/*
 * What the status endpoint holds and for how long, so that whoever can reach the port cannot
 * keep the liveness probe out (issue 20: 64 idle connections used to make /healthz
 * unreachable). The rules, all here:
 *
 *   - The endpoint never stops accepting. It holds at most `max` connections (256, fewer
 *     when the open-files limit is too low even after raising it) and at most
 *     HTTP_MAX_PER_PEER (32) from one address; a connection that would pass either bound
 *     makes room first: the least recently active connection of that address, or of all,
 *     is closed. A connection is active when it is accepted and each time it brings a
 *     request; one with bytes waiting in its socket (a request about to be read, a probe
 *     among them) goes only when no other can. A probe is the newest connection and is
 *     answered within milliseconds, so a flood of idle (or slow) connections only ever
 *     closes its own. Why 256 and not thousands: a status endpoint has a handful of real
 *     clients, and every connection held makes the next one dearer (lws keeps its timers
 *     in one sorted list), so under a flood a small table answers faster.
 *   - A connection that sends nothing is closed after HTTP_HEADER_TIMEOUT_S, and one whose
 *     request head is not complete HTTP_HEADER_TIMEOUT_S after its first byte too
 *     (slowloris); an idle keep-alive connection after HTTP_KEEPALIVE_TIMEOUT_S.
 *   - A request head is at most HTTP_MAX_HEADER_BYTES, a body at most HTTP_MAX_BODY_BYTES
 *     (no route reads one; it is discarded).
 *   - Descriptors: the endpoint needs `max` plus a burst; HTTP_FD_RESERVE more are left for
 *     the rest of the agent (admin connections, plugins, snapshots): 544 in all. When the
 *     soft RLIMIT_NOFILE is lower, it is raised at start (within the hard limit, never
 *     further than needed: a higher soft limit would let select()-based code in a plugin
 *     meet descriptors above 1024); when even the hard limit is lower, `max` shrinks to
 *     fit (http_fd_budget()). The usual default soft limit, 1024, needs no change.
 *
 * The connection table is plain bookkeeping, independent of the HTTP library: a list in
 * order of last activity (least recent first). Victims are found by walking it, which costs
 * microseconds for a few hundred entries and happens only when a bound is reached.
 */
#ifndef GW_HTTP_LIMITS_H
#define GW_HTTP_LIMITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define HTTP_MAX_CONNECTIONS     256
#define HTTP_MIN_CONNECTIONS     16
#define HTTP_MAX_PER_PEER        32
#define HTTP_ACCEPT_BURST        32 /* accepted per wake-up: requests in between get read */
#define HTTP_FD_RESERVE          256
#define HTTP_HEADER_TIMEOUT_S    5
#define HTTP_KEEPALIVE_TIMEOUT_S 10
#define HTTP_MAX_HEADER_BYTES    4096
#define HTTP_MAX_BODY_BYTES      65536

/* A peer's address without its port: what the per-address bound counts. */
struct http_peer {
	int family; /* AF_INET, AF_INET6, or 0 (unknown: never counted together) */
	unsigned char addr[16];
};

void http_peer_from(struct http_peer *p, const struct sockaddr *sa, socklen_t len);

/* "127.0.0.1", "::1" (numeric) */
void http_peer_text(const struct http_peer *p, char *buf, size_t cap);

struct http_conn {
	struct http_conn *prev, *next; /* least recently active first */
	struct http_peer peer;
	int64_t active_us; /* last activity, monotonic */
	int leaving;       /* chosen to make room; gone once the server has closed it */
	void *handle;      /* the server's own (its connection object) */
};

struct http_conns {
	struct http_conn *head, *tail;
	size_t count;   /* held and not leaving */
	size_t leaving; /* closed but not yet gone */
	size_t max, max_per_peer;
};

void http_conns_init(struct http_conns *t, size_t max, size_t max_per_peer);

/* Hold c (its peer set), as the most recently active. */
void http_conns_add(struct http_conns *t, struct http_conn *c, int64_t now_us);

/* c brought a request: it is now the most recently active. */
void http_conns_touch(struct http_conns *t, struct http_conn *c, int64_t now_us);

/* c is closed, or chosen to be (it stops counting; http_conns_remove() when gone). */
void http_conns_leave(struct http_conns *t, struct http_conn *c);

/* c is gone (leaving or not). */
void http_conns_remove(struct http_conns *t, struct http_conn *c);

/*
 * Before one more connection from `peer` is held: the connection that must make room for
 * it, or NULL when there is room. busy(c, arg) says c has a request waiting (it goes last);
 * busy may be NULL. peer NULL asks for the least recently active of all (descriptors ran
 * out). The caller closes it and calls http_conns_leave().
 */
struct http_conn *http_conns_victim(const struct http_conns *t, const struct http_peer *peer,
                                    int (*busy)(struct http_conn *c, void *arg), void *arg);

/*
 * How many connections the endpoint may hold: `want` (HTTP_MAX_CONNECTIONS), plus the
 * accept burst and `reserve` descriptors for the rest of the agent, must fit under the
 * soft RLIMIT_NOFILE. If they do not, the soft limit is raised (up to the hard limit, never
 * above what is needed) and `note` says so; if even the hard limit is too low, fewer
 * connections (at least HTTP_MIN_CONNECTIONS) and `note` says that. `note` is "" when
 * nothing was changed. Returns the number of connections.
 */
size_t http_fd_budget(size_t want, size_t reserve, char *note, size_t cap);

#endif
