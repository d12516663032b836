/*
 * The local snapshot: every accepted group version is kept in state_dir, so a gateway
 * restarted while every admin is down still starts with its last good configuration (as
 * Nacos and Kong data planes do). Loaded versions are provisional: the first version an
 * admin serves replaces them, whatever its lastModifyTime.
 *
 * Per group, a file <GROUP>.json ({"group","md5","lastModifyTime","data":[items as the
 * admin sent them]}, the file plugin's format) written whole, and beside it a journal,
 * <GROUP>.journal (journal.h), to which each later version is appended as what changed:
 * a one-rule change among 100,000 writes one rule, not the group. The group file is
 * written whole at the first write of a run, and again when the journal grows past half
 * of it (or 1,024 records); a cold start reads the file and replays the journal.
 *
 * Writes happen on a thread of their own, woken by the store, so a slow or full disk never
 * delays polling or delivery; it always writes the newest version (older ones are skipped).
 * It runs at the lowest priority and waits for a burst of changes to end first (quiet for
 * SNAPSHOT_QUIET_MS, at most SNAPSHOT_MAX_DELAY_MS), so rewriting a 50 MB group never
 * competes with delivering the next change on a two-core machine and a burst is written
 * once. Durability: a group file is replaced whole (fsync, rename), a journal record is
 * appended and synced (fdatasync), and a version reaches the disk at most about a second
 * after it was accepted; a record cut short by a crash is ignored on reading, with the
 * versions after it (the admin serves them again), never the group.
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

/* Write one group version to dir/<GROUP>.json atomically (whole), and remove its journal. */
int snapshot_write(const char *dir, const struct group_data *gd, struct gw_err *err);

/* Read dir/<GROUP>.json and replay its journal: 0 and *out (provisional, source
 * "snapshot"); 1 if there is no file; -1 if the file is unreadable or corrupt (err says
 * why). A journal that ends in a record cut short (or is otherwise unusable from some
 * record on) gives the last whole version before it. */
int snapshot_read(const char *dir, enum gw_group group, struct group_data **out,
                  struct gw_err *err);

/* The same, also saying how many journal records were replayed and, in tail (msg "" if
 * not), why the journal's end was ignored. */
int snapshot_read_journal(const char *dir, enum gw_group group, struct group_data **out,
                          size_t *replayed, struct gw_err *tail, struct gw_err *err);

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
