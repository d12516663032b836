/*
 * Socket addresses of any path length (see unix_addr.h).
 */
#include "ops/unix_addr.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int unix_dir_open(const char *path, const char **name, struct gw_err *err)
{
	const char *slash = strrchr(path, '/');
	*name = slash ? slash + 1 : path;
	if (!**name)
		return gw_errf(err, "%s: names a directory, not a socket file", path);
	char *dir = slash == path ? strdup("/")
	            : slash       ? strndup(path, (size_t)(slash - path))
	                          : strdup(".");
	if (!dir)
		return gw_errf(err, "%s: out of memory", path);
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC), e = errno;
	if (fd < 0)
		gw_errf(err, "%s: cannot open its directory %s: %s", path, dir, strerror(e));
	free(dir);
	errno = e;
	return fd;
}

int unix_addr_at(struct unix_addr *ua, const char *path, int dirfd, const char *name,
                 struct gw_err *err)
{
	memset(ua, 0, sizeof *ua);
	ua->sa.sun_family = AF_UNIX;
	size_t cap = sizeof ua->sa.sun_path;
	int n = strlen(path) < cap
	            ? snprintf(ua->sa.sun_path, cap, "%s", path)
	            : snprintf(ua->sa.sun_path, cap, "/proc/self/fd/%d/%s", dirfd, name);
	if (n < 0 || (size_t)n >= cap)
		return gw_errf(err,
		               "%s: the socket's name '%s' is too long for a Unix socket address "
		               "(at most %zu bytes)",
		               path, name, cap - sizeof "/proc/self/fd/2147483647/");
	ua->len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n + 1);
	return 0;
}
