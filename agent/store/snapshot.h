/*
 * The local snapshot: every accepted group version is kept in state_dir as
 * <GROUP>.json ({"group","md5","lastModifyTime","data":[items as the admin sent them]}), so
 * a gateway restarted while every admin is down still starts with its last good
 * configuration (as Nacos and Kong data planes do). Loaded versions are provisional: the
 * first version an admin serves replaces them, whatever its lastModifyTime.
 *
 * Writes happen on a thread of their own, woken by the store, so a slow or full disk never
 * delays polling or delivery; it always writes the newest version (older ones are skipped).
 * It runs at the lowest priority and waits for a burst of changes to end first (quiet for
 * SNAPSHOT_QUIET_MS, at most SNAPSHOT_MAX_DELAY_MS), so rewriting a 50 MB group never
 * competes with delivering the next change on a two-core machine and a burst is written
 * once. Durability is unchanged: each file is replaced whole (fsync, rename), and a
 * version reaches the disk at most about a second after it was accepted.
 */
#ifndef GW_SNAPSHOT_H
#define GW_SNAPSHOT_H

#include <gwsync/subscriber.h>

#include "core/error.h"
#include "model/groupdata.h"
#include "core/log.h"
#include "store/store.h"

#define SNAPSHOT_QUIET_MS     20
#define SNAPSHOT_MAX_DELAY_MS 1000

/* Write one group version to dir/<GROUP>.json atomically. */
int snapshot_write(const char *dir, const struct group_data *gd, struct gw_err *err);

/* Read dir/<GROUP>.json: 0 and *out (provisional, source "snapshot"); 1 if there is no file;
 * -1 if it is unreadable or corrupt (err says why). */
int snapshot_read(const char *dir, enum gw_group group, struct group_data **out,
                  struct gw_err *err);

/* Put every configured group found in dir into the store (provisional). Corrupt files are
 * reported and skipped. Returns the number of groups loaded. */
size_t snapshot_load(const char *dir, const enum gw_group *groups, size_t n_groups,
                     struct store *st, struct gw_log *log);

struct snapshot_writer;

int snapshot_writer_start(struct snapshot_writer **out, const char *dir, struct store *st,
                          struct gw_log *log, struct gw_err *err);
struct history;
/* Also keep dir/history (store/history.h) up to date, after each pass and at stop. h must
 * outlive the writer. */
void snapshot_writer_set_history(struct snapshot_writer *w, struct history *h);
/* Ask the thread to stop once it has written what is pending; returns at once. */
void snapshot_writer_stop(struct snapshot_writer *w);
/* Stop, wait for the pending writes and the thread, free. NULL is fine. */
void snapshot_writer_free(struct snapshot_writer *w);

#endif
