/*
 * Crash-safe file replacement (see atomic_file.h). The temporary name carries the pid and
 * a counter-free random suffix from mkstemp, so two writers never share a temp file, and
 * a temp file left by a crash is recognisable (".NAME.tmp-XXXXXX") and harmless.
 */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *errbuf, size_t errlen, const char *what, const char *path)
{
	snprintf(errbuf, errlen, "%s %s: %s", what, path, strerror(errno));
	return -1;
}

int make_dirs(const char *path, mode_t mode, char *errbuf, size_t errlen)
{
	char buf[4096];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
		snprintf(errbuf, errlen, "path too long: %s", path);
		return -1;
	}
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, mode) != 0 && errno != EEXIST)
			return fail(errbuf, errlen, "cannot create directory", buf);
		*p = c;
		if (c == '\0')
			break;
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return fail(errbuf, errlen, "not a directory:", path);
	}
	return 0;
}

int atomic_file_begin(struct atomic_file *af, const char *dir, const char *name, mode_t mode,
                      char *errbuf, size_t errlen)
{
	af->fd = -1;
	if ((size_t)snprintf(af->dir, sizeof af->dir, "%s", dir) >= sizeof af->dir ||
	    (size_t)snprintf(af->final_path, sizeof af->final_path, "%s/%s", dir, name) >=
	        sizeof af->final_path ||
	    (size_t)snprintf(af->tmp_path, sizeof af->tmp_path, "%s/.%s.tmp-XXXXXX", dir, name) >=
	        sizeof af->tmp_path) {
		snprintf(errbuf, errlen, "path too long: %s/%s", dir, name);
		return -1;
	}
	af->fd = mkostemp(af->tmp_path, O_CLOEXEC);
	if (af->fd < 0)
		return fail(errbuf, errlen, "cannot create", af->tmp_path);
	if (fchmod(af->fd, mode) != 0) {
		fail(errbuf, errlen, "cannot chmod", af->tmp_path);
		atomic_file_abort(af);
		return -1;
	}
	return 0;
}

int atomic_file_write(struct atomic_file *af, const void *buf, size_t len, char *errbuf,
                      size_t errlen)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = write(af->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;
			return fail(errbuf, errlen, "cannot write", af->tmp_path);
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int atomic_file_commit(struct atomic_file *af, char *errbuf, size_t errlen)
{
	if (fsync(af->fd) != 0) {
		fail(errbuf, errlen, "cannot fsync", af->tmp_path);
		atomic_file_abort(af);
		return -1;
	}
	if (close(af->fd) != 0) {
		af->fd = -1;
		fail(errbuf, errlen, "cannot close", af->tmp_path);
		atomic_file_abort(af);
		return -1;
	}
	af->fd = -1;
	if (rename(af->tmp_path, af->final_path) != 0) {
		fail(errbuf, errlen, "cannot rename onto", af->final_path);
		atomic_file_abort(af);
		return -1;
	}
	int dfd = open(af->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(errbuf, errlen, "cannot open directory", af->dir);
	int rc = fsync(dfd);
	close(dfd);
	if (rc != 0)
		return fail(errbuf, errlen, "cannot fsync directory", af->dir);
	return 0;
}

void atomic_file_abort(struct atomic_file *af)
{
	if (af->fd >= 0)
		close(af->fd);
	af->fd = -1;
	unlink(af->tmp_path);
}
