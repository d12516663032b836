/*
 * Reading a file the agent is given by path (the configuration, password_file, the token
 * files, TLS files, the snapshots) without letting the file decide how long that takes.
 * A FIFO opened for reading blocks until a writer comes, a character device may never end,
 * a directory cannot be read: each would hang start-up or a thread for ever. So every such
 * read goes through here, and only a regular file is read:
 *   stat() first, so what is plainly not a regular file is never even opened (opening a
 *   device can have effects); then open() with O_NONBLOCK (a FIFO swapped in after the
 *   stat opens at once instead of waiting for a writer) and fstat() of what was really
 *   opened, which decides. No window lets a FIFO block.
 * Files handed to a library by path (TLS files for libwebsockets) are checked with
 * readfile_check() right before they are handed over.
 */
#ifndef GW_READFILE_H
#define GW_READFILE_H

#include <stddef.h>

#include "core/error.h"

/*
 * The whole of the regular file `path`, at most `max` bytes, NUL-terminated (the NUL not
 * counted in *len); free() it. -1 with err:
 *   "cannot read 'PATH': REASON"                 (missing, no permission, I/O error)
 *   "PATH: not a regular file (a FIFO)"          (or a directory, a device, a socket)
 *   "'PATH' is larger than MAX"                  (MAX as "64 KiB", "4 MiB")
 * and errno says which: the open's or read's own, EINVAL (not a regular file), EFBIG.
 * `max` is at most SIZE_MAX / 2.
 */
int readfile(const char *path, size_t max, char **out, size_t *len, struct gw_err *err);

/* 0 if `path` is a regular file this process can open for reading now, else -1 with err
 * as readfile() says it. Opens and closes it; never blocks. */
int readfile_check(const char *path, struct gw_err *err);

/* Open `path` for reading as readfile() does (a regular file only, never blocking): a
 * descriptor in blocking mode again, or -1 with err. *size is its size at the fstat(). */
int readfile_open(const char *path, long long *size, struct gw_err *err);

#endif
