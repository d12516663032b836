/*
 * A Unix socket address for a socket file of any path length. sun_path holds 108 bytes, and
 * a control socket under a deep state_dir (a container volume, /var/lib/kubelet/pods/...)
 * does not fit. Such a path is reached through its directory instead: the directory is
 * opened (O_PATH) and the address is "/proc/self/fd/N/NAME", which the kernel resolves
 * through the open directory, so only the file's own name has to be short. A path that fits
 * is used as it is (no /proc needed).
 *
 * Shared by the control socket's server (ops/control.c) and its client, `gwsyncd --pause`
 * (ops/status_client.c), so both reach the same file by the same rule.
 */
#ifndef GW_UNIX_ADDR_H
#define GW_UNIX_ADDR_H

#include <sys/socket.h>
#include <sys/un.h>

#include "core/error.h"

struct unix_addr {
	struct sockaddr_un sa;
	socklen_t len;
};

/* Open `path`'s directory: an O_PATH descriptor, or -1 with err (errno kept: ENOENT when
 * it does not exist). *name points into path at the file's name (after the last '/'). */
int unix_dir_open(const char *path, const char **name, struct gw_err *err);

/* The address of NAME in the directory `dirfd` (opened by unix_dir_open from `path`):
 * `path` itself when it fits, else /proc/self/fd/DIRFD/NAME. -1 with err if even that does
 * not fit (a NAME of more than about 80 bytes). */
int unix_addr_at(struct unix_addr *ua, const char *path, int dirfd, const char *name,
                 struct gw_err *err);

#endif
