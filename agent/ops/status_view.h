/*
 * One consistent picture of the running agent, taken in a few microseconds from the
 * parts that own the facts (store references, the source's status(), dispatcher_status(), the
 * pause switch) and then read without any lock: /status, /metrics and /healthz render it,
 * and the systemd notifier judges readiness from it. Renderers are pure functions of a
 * view, so unit tests build views by hand and check the exact output.
 */
#ifndef GW_STATUS_VIEW_H
#define GW_STATUS_VIEW_H

#include <gwsync/subscriber.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "deliver/dispatch.h"
#include "core/error.h"
#include "model/groupdata.h"
#include "core/log.h"
#include "ops/pause.h"
#include "source/source.h"
#include "store/history.h"
#include "store/store.h"

/*
 * Where a view is taken from. main.c fills it (the source included, before the status
 * server and the notifier start) and keeps it alive until they are stopped. A connection
 * the source has not started yet is shown as "starting", so the endpoint can answer
 * during the start-up fetch.
 */
struct status_sources {
	const struct cfg *cfg;
	struct store *store;
	struct dispatcher *dispatcher; /* NULL: not running (then not healthy) */
	struct pause_switch *pause;    /* NULL: never paused */
	struct gw_log *log;
	int64_t started_wall_ms;             /* gw_wall_ms() at start */
	const struct source_ops *source_ops; /* NULL: no source (then every server "starting") */
	struct source *source;
	struct history *history; /* the change history (store/history.h); NULL: none kept */
};

/* A server in a view: its connection's state, or "starting" before the source runs it. */
struct status_server_view {
	const char *url;              /* source_ops.conn_name(cfg, i) */
	int running;                  /* the connection runs; else only url is meaningful */
	struct source_conn_status st; /* zeroed if !running */
};

struct status_view {
	int64_t wall_ms; /* when the view was taken */
	int64_t mono_us; /* the same instant on the monotonic clock */
	int64_t started_wall_ms;
	const char *version; /* the agent's version string */

	enum gw_group groups[GW_GROUP_COUNT]; /* configured groups, in configuration order */
	size_t n_groups;
	struct group_data *data[GW_GROUP_COUNT]; /* held version by group (a reference), or NULL */

	const char *source_type;    /* the source's type ("http"); "none" without a source */
	const char *source_section; /* its configuration section ("admin") */
	struct status_server_view *servers; /* the source's connections, one per server */
	size_t n_servers;

	int have_dispatch; /* a dispatcher exists and its status was read */
	struct dispatch_status dispatch;

	int paused;
};

/* Take a view. 0, or -1 on out of memory. Free with status_view_free(). */
int status_view_take(struct status_sources *src, struct status_view *v, struct gw_err *err);
void status_view_free(struct status_view *v);

/*
 * /healthz: 1 if every configured group holds data (from an admin or from the snapshot) and
 * the dispatcher is alive; else 0 with a one-line reason in `why` ("ok" when healthy).
 */
int status_healthy(const struct status_view *v, struct gw_err *why);

/*
 * systemd READY=1: every configured group holds data and, unless sync is paused or there
 * are no subscribers, every subscriber has had each of them delivered (accepted or
 * rejected: a failing plugin shows in /status, it must not keep the service "activating").
 * Else 0 and `why` says what is missing.
 */
int status_ready(const struct status_view *v, struct gw_err *why);

/*
 * One short line for systemd's STATUS= and the log: "syncing 5 groups from 1 of 1 admin
 * servers; 2 subscribers in step", "paused: ...", "waiting for data: RULE, PLUGIN".
 */
void status_summary(const struct status_view *v, char *buf, size_t cap);

/* Does subscriber i hold the store's version of group g? (1 also when nothing is held) */
int status_subscriber_in_step(const struct status_view *v, size_t i, enum gw_group g);

#endif
