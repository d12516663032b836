/*
 * The change history: for each configured group, the last N versions the store accepted (a
 * ring per group), each with what changed against the version it replaced (how many items
 * were added, updated and removed, and the first keys of each) and, per subscriber, what
 * became of it: applied (when), refused (when, and why), superseded (a newer version
 * replaced it before it was delivered), or still pending. /history, the status page and
 * `gwsyncd --status` read it (ops/).
 *
 * The facts are recorded where they are born, through two calls: ingest (store/ingest.h)
 * calls history_accepted() for every version the store takes, the dispatcher
 * history_outcome() after every apply(). Both copy a few fixed-size fields under the
 * history's own mutex, which is never held across anything else (no disk, no plugin, no
 * other lock), so recording never delays delivery. What changed is counted later and off
 * those threads: history_settle() merges the two versions (model/diff.h, the merge the
 * dispatcher makes) on the snapshot writer's low-priority thread as soon as it wakes, or
 * in a reader first if one asks sooner; until then the entry holds references on both
 * versions. At most HISTORY_PENDING entries of a group wait to be counted: when a burst
 * outruns the writer, the oldest waiting one gives its versions up and stays uncounted
 * (counts null), so the versions kept stay bounded and no thread that takes versions ever
 * waits for a merge.
 *
 * Memory: an entry is HISTORY_ENTRY_BYTES plus HISTORY_OUTCOME_BYTES per subscriber, at
 * most N (status.history) per configured group, allocated as versions arrive.
 *
 * The parts, one job each: the rings, their lock and the recording (history.c, where the
 * pending outcome rule is), the counting (history_count.c), the file and the document form
 * (history_file.h: kept in STATE_DIR/history across restarts) and the view GET /history
 * asks for (ops/history_json.h).
 *
 * Keys are shown as the log shows them (model/keys.h key_display(): an AI proxy API key's
 * own part is cut to 4 characters); the history never holds an item's JSON.
 */
#ifndef GW_HISTORY_H
#define GW_HISTORY_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/log.h"
#include "model/groupdata.h"

#define HISTORY_DEFAULT     50 /* status.history */
#define HISTORY_MAX         1000
#define HISTORY_KEYS        5   /* first keys kept of each kind */
#define HISTORY_KEY_MAX     128 /* bytes of one key as shown (longer ones end in "...") */
#define HISTORY_NAME_MAX    64  /* bytes of an item's display name kept beside its key */
#define HISTORY_SOURCE_MAX  256
#define HISTORY_REASON_MAX  256
#define HISTORY_SUBSCRIBERS 64 /* subscribers followed (more are not recorded) */
#define HISTORY_PENDING     8

enum history_state {
	HISTORY_WAITING = 0, /* not delivered yet (paused, busy, retrying) */
	HISTORY_APPLIED,
	HISTORY_REFUSED,
	HISTORY_SUPERSEDED,
};

struct history_outcome {
	uint8_t state;     /* enum history_state */
	uint32_t refusals; /* how many times it was refused (also when applied later) */
	int64_t at_ms;     /* applied: when; refused: the last refusal; else 0 */
	char reason[HISTORY_REASON_MAX]; /* the last refusal's reason, "" if none */
};

struct history_change {
	size_t count;
	size_t n_first;
	char first[HISTORY_KEYS][HISTORY_KEY_MAX]; /* in key order, as key_display() shows them */
	/* their items' display names (a selector's, rule's or method's name beside its 19-digit
	 * id, as the log shows them), "" when it has none or in any other group */
	char names[HISTORY_KEYS][HISTORY_NAME_MAX];
};

struct history_entry {
	enum gw_group group;
	char md5[65];
	int64_t last_modify_time;
	int64_t accepted_ms; /* wall clock */
	char source[HISTORY_SOURCE_MAX];
	int counted; /* added/updated/removed are known */
	struct history_change added, updated, removed;
	struct history_outcome subs[]; /* one per subscriber of history_new() */
};

#define HISTORY_OUTCOME_BYTES sizeof(struct history_outcome)
#define HISTORY_ENTRY_BYTES   sizeof(struct history_entry)

struct history;

/* `size` versions per group (1..HISTORY_MAX), the subscribers' names in the dispatcher's
 * order (copied). NULL on out of memory. */
struct history *history_new(size_t size, const char *const *subscribers, size_t n_subscribers,
                            struct gw_log *log);
void history_free(struct history *h);
/* The groups subscriber `sub` takes (bit 1u << group; its `groups:`): an entry of another
 * group does not list it. Every group until set. */
void history_set_takes(struct history *h, size_t sub, unsigned groups);

/* Bytes one entry takes (for the documentation's bound and the tests). */
size_t history_entry_bytes(const struct history *h);

/*
 * The store took `to`, replacing `from` (NULL: nothing was held), offered by `source`. Takes
 * its own references. A version with the md5 of the group's newest entry is not a change
 * (an admin confirming what the snapshot held) and is not recorded. NULL h: nothing.
 */
void history_accepted(struct history *h, struct group_data *from, struct group_data *to,
                      const char *source);
/* The same, accepted at wall-clock `accepted_ms`: the ingest reads the clock before it swaps
 * the version in, since the dispatcher may apply it (and stamp its outcome) before this call
 * records it; an acceptance stamped after the swap could be later than that apply. */
void history_accepted_at(struct history *h, struct group_data *from, struct group_data *to,
                         const char *source, int64_t accepted_ms);

struct store;
/* Record what the store holds of `groups` as accepted from where it came ("snapshot" for a
 * cold start's versions), unless it is the group's newest entry already (loaded from the
 * file). NULL h: nothing. */
void history_held(struct history *h, struct store *st, const enum gw_group *groups, size_t n);

/* Subscriber `sub` applied (applied != 0) or refused version `md5` of `group` at `wall_ms`;
 * `why` is the refusal's reason. Applying a version marks the group's older versions the
 * subscriber had not received as superseded. NULL h: nothing. */
void history_outcome(struct history *h, size_t sub, enum gw_group group, const char *md5,
                     int applied, const char *why, int64_t wall_ms);

/* Count what changed in every entry still waiting to be counted. Returns how many were. */
size_t history_settle(struct history *h);

/* A copy, taken under the lock, of the entries of the groups whose bit (1 << group) is in
 * `groups`, in the order of `order` (n_order of them), newest first per group, accepted at
 * or after since_ms: one block of *n entries of history_entry_bytes(h) bytes each (free()
 * it), per[k] of them order[k]'s. NULL on out of memory. */
void *history_copy(struct history *h, const enum gw_group *order, size_t n_order, unsigned groups,
                   int64_t since_ms, size_t *per, size_t *n);

/* Whether anything changed since the last history_save() (history_file.h). */
int history_dirty(struct history *h);

/* The name of an enum history_state ("pending", "applied", "refused", "superseded"). */
const char *history_state_name(int state);

#endif
