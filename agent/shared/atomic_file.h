/*
 * Replace a file atomically: readers see the old content or the new, never a missing,
 * empty or partial file, even across a crash. The new content goes to a temporary file in
 * the same directory (rename() is atomic only within one file system), is fsync()ed,
 * optionally checked, then renamed over the old name, and the directory is fsync()ed so
 * the rename itself is durable. Depends on libc only, so the file plugin compiles it in.
 */
#ifndef GW_ATOMIC_FILE_H
#define GW_ATOMIC_FILE_H

#include <limits.h>
#include <stdio.h>

#include "core/error.h"

/* The paths live on the heap, each sized to itself: the struct is small on the stacks of
 * the threads that write files (the dispatcher, through the file plugin, and the snapshot
 * writer), whose touched stack pages otherwise stay dirty for the life of the agent. They
 * are freed by a successful commit or by abort. */
struct atomic_file {
	char *dir;
	char *tmp;   /* the temporary file: DIR/.NAME.tmp.XXXXXX; NULL once renamed or removed */
	char *final; /* DIR/NAME */
	FILE *fp;    /* open for writing between open and finish */
};

/* Create the temporary file with `mode` (exactly, whatever the umask). Write to af->fp. */
int atomic_file_open(struct atomic_file *af, const char *dir, const char *name, unsigned mode,
                     struct gw_err *err);

/* Flush, fsync and close the temporary file; any write error shows up here. */
int atomic_file_finish(struct atomic_file *af, struct gw_err *err);

/* Rename the temporary file over the final name and fsync the directory. Once renamed the
 * paths are freed, whatever the fsync says; a failed rename leaves them to abort. */
int atomic_file_commit(struct atomic_file *af, struct gw_err *err);

/* fsync a directory so a rename or unlink in it is durable (EINVAL, a file system that
 * cannot, is not an error). */
int atomic_file_sync_dir(const char *dir, struct gw_err *err);

/* Give up: close and remove the temporary file, free the paths. Safe after a failed step
 * and after commit. */
void atomic_file_abort(struct atomic_file *af);

/* Remove temporary files a crash left behind for dir/name (".NAME.tmp.*"); returns how
 * many were removed. Only the writer of dir/name may call it (at its start). */
int atomic_file_sweep(const char *dir, const char *name);

/* mkdir -p; directories it creates get `mode` (less the umask). */
int make_dirs(const char *path, unsigned mode, struct gw_err *err);

/* Whether `path` could be used as a directory we write in, without creating anything: an
 * existing directory writable by us, or a missing one whose nearest existing ancestor is.
 * For a plugin's init(), which also runs under `gwsyncd --check` and must not change the
 * system (the directory is made at the first apply). 0, or -1 with the reason in err. */
int dir_creatable(const char *path, struct gw_err *err);

#endif
