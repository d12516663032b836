/*
 * Regular files only, never blocking (see readfile.h). The size cap is the caller's: a
 * secret is a few bytes, a configuration a few KiB, a snapshot as large as a group.
 */
#include "core/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a file";
}

static void human(char *buf, size_t cap, size_t n)
{
	if (n >= (1u << 20) && n % (1u << 20) == 0)
		snprintf(buf, cap, "%zu MiB", n >> 20);
	else if (n >= 1024 && n % 1024 == 0)
		snprintf(buf, cap, "%zu KiB", n >> 10);
	else
		snprintf(buf, cap, "%zu bytes", n);
}

/* -1 with the message, errno = e (callers tell "missing" from the rest by errno) */
static int fail_errno(struct gw_err *err, const char *path, int e)
{
	gw_errf(err, "cannot read '%s': %s", path, strerror(e));
	errno = e;
	return -1;
}

static int fail_kind(struct gw_err *err, const char *path, mode_t m)
{
	gw_errf(err, "%s: not a regular file (%s)", path, kind(m));
	errno = EINVAL;
	return -1;
}

int readfile_open(const char *path, long long *size, struct gw_err *err)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return fail_errno(err, path, errno);
	if (!S_ISREG(st.st_mode))
		return fail_kind(err, path, st.st_mode);
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail_errno(err, path, errno);
	/* what was opened decides: the path may name something else by now */
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return fail_errno(err, path, e);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return fail_kind(err, path, st.st_mode);
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	if (size)
		*size = (long long)st.st_size;
	return fd;
}

int readfile_check(const char *path, struct gw_err *err)
{
	int fd = readfile_open(path, NULL, err);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

int readfile(const char *path, size_t max, char **out, size_t *len, struct gw_err *err)
{
	*out = NULL;
	*len = 0;
	long long size = 0;
	int fd = readfile_open(path, &size, err);
	if (fd < 0)
		return -1;
	char limit[32];
	human(limit, sizeof limit, max);
	if (size > 0 && (unsigned long long)size > max) {
		close(fd);
		gw_errf(err, "'%s' is larger than %s", path, limit);
		errno = EFBIG;
		return -1;
	}
	/* the size may change while we read: read to the end, never past max + 1 */
	size_t cap = size > 0 ? (size_t)size + 1 : 4096, n = 0;
	if (cap > max + 1)
		cap = max + 1;
	char *buf = malloc(cap + 1);
	for (;;) {
		if (!buf) {
			close(fd);
			gw_errf(err, "%s: out of memory", path);
			errno = ENOMEM;
			return -1;
		}
		if (n == cap) {
			if (n > max)
				break;
			size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			char *nb = realloc(buf, ncap + 1);
			if (!nb)
				free(buf);
			buf = nb;
			cap = ncap;
			continue;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return fail_errno(err, path, e);
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > max) {
		free(buf);
		gw_errf(err, "'%s' is larger than %s", path, limit);
		errno = EFBIG;
		return -1;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}
