/*
 * The journal of a group's snapshot: the versions accepted since the group's file
 * (snapshot.h) was last written whole, each appended to STATE_DIR/<GROUP>.journal as what
 * changed, so a one-item change among 100,000 writes and syncs one item, not the group's
 * 51 MB. The group file is written whole again (and the journal started over) when the
 * journal would pass half of it, or JOURNAL_MAX_RECORDS records (a cold start replays each
 * record: this bounds it), or a change is itself that large.
 *
 * Format: text, one header line, then one record per version written:
 *   gwsync-journal 1 BASEMD5 BASELASTMODIFYTIME\n    the group file's version it follows
 *   LEN SUM\nPAYLOAD\n                               LEN bytes of PAYLOAD, SUM its digest
 * PAYLOAD is one JSON object:
 *   {"from": MD5, "md5": MD5, "lastModifyTime": N, "count": N,
 *    "removed": [keys], "at": [positions], "items": [items as the admin sent them]}
 * Version `md5` is version `from` without the `removed` keys and without the items that
 * `items` replaces (same key), and with `items` at the positions `at` (ascending) of its
 * list of `count` items; the others keep their order. SUM is 32 hex digits of SHA-256 over
 * PAYLOAD (model/digest.h).
 *
 * Crash safety: a record is appended with one write and synced (fdatasync) before the
 * writer goes on; a failed append is cut off again and the next write is of the whole
 * group file. Reading stops at the first record that is cut short, whose digest differs or
 * that does not apply to the version before it (`from`), and keeps what came before it: a
 * torn tail loses the versions it held (the admin serves them again), never the group.
 * The header names the group file's version (md5 and lastModifyTime), so a journal left
 * behind by a crash between a rewrite of the group file and the journal's removal is seen
 * to follow another version and is ignored.
 */
#ifndef GW_JOURNAL_H
#define GW_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/groupdata.h"

#define JOURNAL_MAX_RECORDS 1024

/* What the writer knows of one group's journal. Zeroed: nothing written yet. */
struct journal {
	char base_md5[65]; /* the group file's version */
	int64_t base_lmt;
	size_t base_bytes; /* its size */
	size_t bytes;      /* the journal's size (0: there is none) */
	unsigned records;
	int broken; /* an append failed: the next write is of the whole group file */
};

/* The journal's path: dir/<GROUP>.journal. */
void journal_path(char *buf, size_t cap, const char *dir, enum gw_group group);

/*
 * Append version `to`, as what changed since `from` (the version last written for the
 * group: the group file's, or the journal's last record). 0 appended; 1 not: the group
 * file is to be written whole instead (the journal would grow past its bounds, the change
 * is as large, or the journal is broken); -1 the append failed (err says why; js->broken).
 */
int journal_append(const char *dir, struct journal *js, const struct group_data *from,
                   const struct group_data *to, struct gw_err *err);

/* The group file was just written whole with gd (base_bytes long): remove the journal and
 * remember the file's version. 0, or -1 if the journal could not be removed (it is then
 * recognised as stale when read, since it names another version). */
int journal_restart(const char *dir, struct journal *js, const struct group_data *gd,
                    size_t base_bytes, struct gw_err *err);

/*
 * base (the group file as read, provisional) with dir's journal replayed onto it: *out is
 * the last whole version (a new reference; base's own when there is no journal or none of
 * it applies), *replayed the records applied. When reading stopped before the end of the
 * file, `tail` says why (tail->msg "" otherwise): the caller logs it. 0, or -1 on out of
 * memory or an unreadable journal (err).
 */
int journal_replay(const char *dir, struct group_data *base, struct group_data **out,
                   size_t *replayed, struct gw_err *tail, struct gw_err *err);

#endif
