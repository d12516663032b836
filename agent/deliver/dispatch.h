/*
 * The dispatcher: the one thread that calls subscriber plugins.
 *
 * Model. For every subscriber and configured group it keeps the version that subscriber
 * last accepted (a reference). Each round it reads the store's newest version of each
 * group and, for each subscriber in turn, delivers the delta from what that subscriber
 * accepted to the newest (diff.h). So:
 *  - changes coalesce: three versions arriving while a plugin is busy become one change
 *    from what it had to the newest;
 *  - a slow plugin delays only its own turn: the others get the same version right
 *    after it, and pollers never wait for the dispatcher (they only swap a pointer in
 *    the store), so polling is never delayed at all;
 *  - a plugin that rejects a change keeps its old accepted version; it is retried with
 *    backoff (1 s doubling to 60 s) with the full delta from what it last accepted, or at
 *    once when a newer version arrives; the others keep receiving meanwhile. The doubling
 *    counts that subscriber's consecutive rejections of that group and resets when it
 *    accepts a change of the group (a newer version does not reset it). Each rejection is
 *    counted per subscriber and group; it is a warning once per retry round
 *    (dispatch_warn_due), so a refusing subscriber is seen without debug logs;
 *  - each round walks the groups in dependency order (dispatch_order): PLUGIN, SELECTOR,
 *    RULE, then the others as configured, so at start-up and whenever several groups are
 *    pending at once (a resync) a rule never arrives before its selector. Afterwards each
 *    group goes on its own: a rejected SELECTOR is retried alone while a newer RULE is
 *    delivered, so a rule can arrive before its selector then;
 *  - tick() runs after every apply() and whenever the deadline it returned passes.
 * While paused nothing is delivered (tick() still runs, finishing work already accepted);
 * on resume every subscriber receives one change to the newest version.
 */
#ifndef GW_DISPATCH_H
#define GW_DISPATCH_H

#include <gwsync/subscriber.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "deliver/latency.h"
#include "core/log.h"
#include "store/store.h"
#include "deliver/subscribers.h"

#define DISPATCH_BACKOFF_MIN_MS 1000
#define DISPATCH_BACKOFF_MAX_MS 60000

struct dispatcher;

/* Start the thread. subs, st, cfg and log must outlive the dispatcher. */
int dispatcher_start(struct dispatcher **out, struct subscribers *subs, struct store *st,
                     const struct cfg *cfg, struct gw_log *log, struct gw_err *err);

/* The clock of the retry schedule (when a rejected version is tried again, when a round of
 * rejections is warned about again), in milliseconds. The agent's is the monotonic clock;
 * a test gives its own, moves it forward and wakes the dispatcher (store_kick) instead of
 * sleeping through the backoff. tick() deadlines stay on the plugins' host clock. */
struct dispatch_clock {
	int64_t (*now_ms)(void *arg); /* called from the dispatcher's thread */
	void *arg;
};

/* dispatcher_start() with the retry schedule on `clock` (copied; NULL: the monotonic one). */
int dispatcher_start_clocked(struct dispatcher **out, struct subscribers *subs, struct store *st,
                             const struct cfg *cfg, struct gw_log *log,
                             const struct dispatch_clock *clock, struct gw_err *err);

/* Ask the thread to stop; returns at once. An apply() in progress finishes; no further one
 * starts. NULL is fine. */
void dispatcher_stop(struct dispatcher *d);
/* Stop, wait for the thread (logging a subscriber that does not return), then free. NULL
 * is fine. Call before subscribers_free(). */
void dispatcher_free(struct dispatcher *d);

/* Pause (1) or resume (0) delivery; resuming wakes the thread at once. */
void dispatcher_set_paused(struct dispatcher *d, int paused);

struct history;
/* Record each apply()'s outcome in `h` (store/history.h: subscribers by their index here),
 * which must outlive the dispatcher. */
void dispatcher_set_history(struct dispatcher *d, struct history *h);

/*
 * --once: in the calling thread, deliver every configured group present in the store to
 * every subscriber, each as a change from nothing. Returns the number of failed applies
 * (0: all accepted).
 */
int dispatch_once(struct subscribers *subs, struct store *st, const struct cfg *cfg,
                  struct gw_log *log);

/* The groups of cfg in delivery order: PLUGIN, SELECTOR, RULE (those configured), then
 * the others in configuration order. Returns how many. */
size_t dispatch_order(const struct cfg *cfg, enum gw_group out[GW_GROUP_COUNT]);

/* The wait before retrying after `consecutive` (>= 1) rejections in a row: 1 s, 2 s, 4 s...
 * up to 60 s. */
int64_t dispatch_backoff_ms(unsigned consecutive);

/* Whether the `consecutive`-th rejection in a row of one group by one subscriber is logged as
 * a warning, `since_warned_ms` after the last such warning: the first one, then once per
 * retry round (the backoff the previous rejection set). A subscriber that keeps refusing is
 * visible without debug logs, but a burst of newer versions, each tried at once and refused
 * at once, is one warning per round, not one per try (the others are at debug, counted in
 * the next warning and in gwsync_subscriber_group_apply_failures_total). */
int dispatch_warn_due(unsigned consecutive, int64_t since_warned_ms);

/* ---------------------------------------------------------------- status (for /status) */

struct dispatch_group_status {
	int delivered; /* some version of the group was accepted */
	char md5[65];  /* the version last accepted */
	int64_t last_modify_time;
	size_t n_items;
	int64_t delivered_wall_ms;     /* when it was accepted (wall clock, ms) */
	uint64_t applies;              /* successful apply() calls */
	uint64_t failures;             /* rejected apply() calls */
	unsigned consecutive_failures; /* 0 when in step */
	char last_error[512];          /* the last rejection's reason ("" if none) */
	int64_t last_error_wall_ms;
};

struct dispatch_subscriber_status {
	char name[128];   /* instance name */
	char plugin[64];  /* the plugin's own name */
	uint64_t applies; /* over all groups */
	uint64_t failures;
	char last_error[512]; /* "GROUP: reason" of the most recent rejection */
	int64_t last_error_wall_ms;
	struct dispatch_group_status groups[GW_GROUP_COUNT]; /* indexed by enum gw_group */
	unsigned takes; /* the groups it takes (bit 1u << group); only these are counted. 0:
	                 * every group (a status not made by the dispatcher) */
};

/* Whether subscriber status `s` takes group `g` (its `groups:`). */
static inline int dispatch_takes(const struct dispatch_subscriber_status *s, enum gw_group g)
{
	return !s->takes || (s->takes & (1u << g));
}

struct dispatch_status {
	int alive; /* the thread is running */
	int paused;
	char busy_in[128]; /* the instance inside apply()/tick() now, "" if idle */
	int64_t busy_ms;   /* for how long */
	uint64_t changes;  /* accepted apply() calls, all subscribers */
	uint64_t failures; /* rejected apply() calls */
	struct latency_hist latency;
	size_t n_subscribers;
	struct dispatch_subscriber_status *subscribers; /* in configuration order */
};

/* A consistent copy; free with dispatch_status_free(). */
int dispatcher_status(struct dispatcher *d, struct dispatch_status *out, struct gw_err *err);
void dispatch_status_free(struct dispatch_status *s);

#endif
