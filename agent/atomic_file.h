/*
 * Crash-safe file replacement: write a temporary file in the target's directory, fsync
 * it, rename it over the target, fsync the directory. A reader (or a restart after
 * SIGKILL or power loss) sees the old file or the new one, never a missing, empty or
 * partial one. Depends on libc only, so plugins can compile it in too.
 */
#ifndef GW_ATOMIC_FILE_H
#define GW_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

struct atomic_file {
	int fd;
	char tmp_path[4096];
	char final_path[4096];
	char dir[4096];
};

/* Create the temporary file for `dir`/`name` with `mode`. 0 or -1 (errbuf says why). */
int atomic_file_begin(struct atomic_file *af, const char *dir, const char *name, mode_t mode,
                      char *errbuf, size_t errlen);
/* Append bytes. */
int atomic_file_write(struct atomic_file *af, const void *buf, size_t len, char *errbuf,
                      size_t errlen);
/* fsync, rename over the target, fsync the directory. The temp file is gone either way. */
int atomic_file_commit(struct atomic_file *af, char *errbuf, size_t errlen);
/* Drop the temporary file (after a failed write or a rejected check). */
void atomic_file_abort(struct atomic_file *af);

/* mkdir -p with `mode` for the created directories. */
int make_dirs(const char *path, mode_t mode, char *errbuf, size_t errlen);

#endif
