/*
 * A source: how the admin's group versions reach the agent. HTTP long-polling is the first
 * (source/http/); WebSocket, ZooKeeper and etcd are each one more folder behind this same
 * table, listed once in the registry (source_types[], below) with what main asks of a source:
 * does this configuration select me, a one-line summary, its own configuration keys. A source owns
 * its connections, threads, retries and accept policy; it hands every version to the ingest
 * (store/ingest.h) and learns what is held only from it, so it never reads or changes the store
 * itself and never calls a subscriber.
 *
 * Lifecycle, driven by main: open -> initial_sync (optional) -> start -> stop -> free.
 * stop may come at any point from another thread (SIGTERM): it ends a running
 * initial_sync and every wait at once.
 */
#ifndef GW_SOURCE_H
#define GW_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config/config.h"
#include "core/error.h"
#include "core/log.h"
#include "source/failure.h"
#include "store/ingest.h"

/* The state of one connection (one configured server), as /status names it. */
enum source_conn_state {
	SOURCE_CONN_POLLING = 0, /* a request is on its way or held by the admin */
	SOURCE_CONN_RETRYING,    /* the last try failed; waiting the retry interval */
	SOURCE_CONN_BACKING_OFF, /* a whole round failed; waiting the backoff */
	SOURCE_CONN_STOPPED,
	SOURCE_CONN_CONNECTING, /* an event source: connecting or handshaking */
	SOURCE_CONN_CONNECTED,  /* an event source: connected, events arrive as they happen */
};

/* "polling", "retrying", "backing_off", "stopped", "connecting", "connected". */
const char *source_conn_state_name(enum source_conn_state s);

/* One connection's state and counters, copied out for /status and /metrics. */
struct source_conn_status {
	enum source_conn_state state;
	char server[256];
	int64_t last_success_ms; /* wall clock of the last successful exchange; 0: never */
	uint64_t consecutive_failures;
	char last_error[1024];              /* "" if none yet */
	int64_t last_error_ms;              /* wall clock; 0: never */
	uint64_t polls;                     /* listener requests answered or failed */
	uint64_t changes;                   /* group versions this connection had accepted */
	uint64_t fetches;                   /* fetch requests */
	uint64_t bytes_fetched;             /* reply bytes of successful fetches */
	uint64_t failures[SYNC_FAIL_COUNT]; /* by reason (failure.h) */
	/* event sources (WebSocket): polls counts data messages, fetches full syncs asked
	 * for, bytes_fetched message bytes */
	int64_t last_event_ms; /* wall clock of the last change the server announced (a poll
	                        * answer naming groups, a pushed data message); 0: never */
	uint64_t repairs;      /* group versions an anti-entropy full sync had to correct
	                        * (event sources; else 0) */
	/* path stores (ZooKeeper, etcd); else "" and 0 */
	char session[64]; /* ZooKeeper: the session id (0x...); etcd: the endpoint in use */
	uint64_t watches; /* ZooKeeper: watches set now; etcd: watch streams open */
	int64_t revision; /* etcd: the store revision the mirror has reached; ZooKeeper: the
	                   * highest zxid seen */
};

/* What a source is given. All of it outlives the source. */
struct source_args {
	const struct cfg *cfg; /* servers, groups, retry rules, TLS... */
	struct ingest *ingest; /* where versions go, and what is held */
	struct gw_log *log;
};

struct source; /* each source defines its own */

struct cfg_section;

/* A source type: one entry of the registry (source_types), all main and ops ask of it. */
struct source_ops {
	const char *type;    /* "http": names the source in logs, /status and /metrics */
	const char *section; /* its configuration section ("admin"): the `source` label */
	/* Its configuration section (config/config_walk.h), in its folder or the part it shares
	 * (long-polling's is admin:, source/admin/); NULL: another type's suffices. */
	const struct cfg_section *config;
	/* 1 when this configuration selects this source (exactly one source does). */
	int (*selects)(const struct cfg *cfg);
	/* One line for the first lines an operator reads: "2 admin server(s)". */
	void (*summary)(const struct cfg *cfg, char *buf, size_t cap);
	const char *running; /* what runs, counted: "poller(s)" */
	/* Its connections, as /status lists them: how many, and the name of each (a server's
	 * URL, or a label naming a whole ensemble); valid as long as the configuration. */
	size_t (*conns)(const struct cfg *cfg);
	const char *(*conn_name)(const struct cfg *cfg, size_t i);
	/* Prepare the connections; no thread runs yet. */
	int (*open)(struct source **out, const struct source_args *args, struct gw_err *err);
	/* Optional (NULL if the source has none): one full read of every configured group,
	 * offered to the ingest before start(). -1 (err says why) when no server answered or
	 * stop() was called; the caller then serves the snapshot. */
	int (*initial_sync)(struct source *s, struct gw_err *err);
	/* Optional (NULL if the initial sync already asks everything a run will): for
	 * `--once --dry-run`, after initial_sync, ask every server what start() will ask of it
	 * without waiting (long-polling: a listener call that is answered at once), writing one
	 * line per server to `out`, so a request the admin refuses stops a deployment before
	 * the daemon starts. 0 when every server that answered accepted it; -1 (err names the
	 * server and the refusal) when one refused, or none answered. Changes nothing. */
	int (*probe)(struct source *s, FILE *out, struct gw_err *err);
	/* Start keeping the groups in step (threads of the source's own). */
	int (*start)(struct source *s, struct gw_err *err);
	/* Ask everything to stop; returns at once. Thread-safe, idempotent. */
	void (*stop)(struct source *s);
	/* Stop, wait for every thread, free. NULL is fine. */
	void (*free)(struct source *s);
	/* Connection i (0 .. conns() - 1): 1 with *out filled once it runs, 0 before
	 * (it is then shown as "starting"). Thread-safe; called by the status endpoint. */
	int (*status)(struct source *s, size_t i, struct source_conn_status *out);
};

/* The registry: every source type, NULL-terminated, generated by the build from the types
 * the source folders declare (agent/source/sources.am); looked up in source/registry.c. */
extern const struct source_ops *const source_types[];

/* The source type the configuration selects, NULL if none does. */
const struct source_ops *source_select(const struct cfg *cfg);
/* The source type named `type` ("http"), NULL if none is. */
const struct source_ops *source_find(const char *type);

/* The configuration sections the source types declare (their `config`), the i-th from 0,
 * NULL past the last: what main hands the configuration loader (cfg_load), so that
 * config/ names no source and a new source changes nothing there. */
const struct cfg_section *source_config_section(size_t i);
/* All of them, NULL-terminated (at most CFG_SECTIONS_MAX; more are left out, and the
 * loader's own count refuses none). */
void source_config_sections(const struct cfg_section *out[CFG_SECTIONS_MAX + 1]);

#endif
