/*
 * Atomic file replacement (see atomic_file.h). The temporary name starts with a dot so
 * tools globbing "*.json" in the directory never pick up a half-written file. Used by the
 * agent's snapshot and compiled into the file plugin: one implementation of the one
 * crash-safety rule.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkostemp */
#endif
#include "shared/atomic_file.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(struct gw_err *err, const char *what, const char *path, int e)
{
	gw_errf(err, "%s %s: %s", what, path, strerror(e));
	return -1;
}

static void free_paths(struct atomic_file *af)
{
	free(af->dir);
	free(af->tmp);
	free(af->final);
	af->dir = af->tmp = af->final = NULL;
}

/* A path no longer than PATH_MAX, on the heap; NULL with errno set otherwise. */
static char *path_of(const char *dir, const char *sep, const char *name, const char *tail)
{
	size_t n = strlen(dir) + strlen(sep) + strlen(name) + strlen(tail);
	if (n >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	char *p = malloc(n + 1);
	if (p)
		snprintf(p, n + 1, "%s%s%s%s", dir, sep, name, tail);
	return p;
}

int atomic_file_open(struct atomic_file *af, const char *dir, const char *name, unsigned mode,
                     struct gw_err *err)
{
	memset(af, 0, sizeof *af);
	if (!(af->dir = path_of(dir, "", "", "")) || !(af->final = path_of(dir, "/", name, "")) ||
	    !(af->tmp = path_of(dir, "/.", name, ".tmp.XXXXXX"))) {
		int e = errno;
		free_paths(af);
		return e == ENAMETOOLONG ? fail(err, "path too long:", dir, e)
		                         : fail(err, "cannot write in", dir, e);
	}

	int fd = mkostemp(af->tmp, O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free_paths(af);
		return fail(err, "cannot create a temporary file in", dir, e);
	}
	if (fchmod(fd, (mode_t)mode) < 0) {
		int e = errno;
		close(fd);
		fail(err, "cannot set the mode of", af->tmp, e);
		atomic_file_abort(af);
		return -1;
	}
	af->fp = fdopen(fd, "w");
	if (!af->fp) {
		int e = errno;
		close(fd);
		fail(err, "cannot open", af->tmp, e);
		atomic_file_abort(af);
		return -1;
	}
	setvbuf(af->fp, NULL, _IOFBF, 1 << 16);
	return 0;
}

int atomic_file_finish(struct atomic_file *af, struct gw_err *err)
{
	FILE *fp = af->fp;
	af->fp = NULL;
	int e = 0;
	if (ferror(fp) || fflush(fp) != 0)
		e = errno ? errno : EIO;
	if (!e && fsync(fileno(fp)) != 0)
		e = errno;
	if (fclose(fp) != 0 && !e)
		e = errno;
	if (e)
		return fail(err, "cannot write", af->tmp, e);
	return 0;
}

int atomic_file_sync_dir(const char *dir, struct gw_err *err)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(err, "cannot open directory", dir, errno);
	int rc = fsync(dfd);
	int e = errno;
	close(dfd);
	/* EINVAL: a file system that cannot sync directories; nothing more can be done. */
	if (rc != 0 && e != EINVAL)
		return fail(err, "cannot fsync directory", dir, e);
	return 0;
}

int atomic_file_commit(struct atomic_file *af, struct gw_err *err)
{
	if (rename(af->tmp, af->final) != 0)
		return fail(err, "cannot rename the temporary file to", af->final, errno);
	free(af->tmp);
	af->tmp = NULL;
	int rc = atomic_file_sync_dir(af->dir, err);
	free_paths(af);
	return rc;
}

void atomic_file_abort(struct atomic_file *af)
{
	if (af->fp) {
		fclose(af->fp);
		af->fp = NULL;
	}
	if (af->tmp)
		unlink(af->tmp);
	free_paths(af);
}

int atomic_file_sweep(const char *dir, const char *name)
{
	char prefix[NAME_MAX + 8];
	int plen = snprintf(prefix, sizeof prefix, ".%s.tmp.", name);
	if (plen < 0 || plen >= (int)sizeof prefix)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int removed = 0;
	for (struct dirent *e; (e = readdir(d));) {
		char path[PATH_MAX];
		if (strncmp(e->d_name, prefix, (size_t)plen) != 0 ||
		    snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
			continue;
		if (unlink(path) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

int make_dirs(const char *path, unsigned mode, struct gw_err *err)
{
	char buf[PATH_MAX];
	if (!path || !*path)
		return fail(err, "empty directory name", "", EINVAL);
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return fail(err, "path too long:", path, ENAMETOOLONG);
	for (char *p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST)
			return fail(err, "cannot create directory", buf, errno);
		*p = c;
		if (!c)
			break;
	}
	struct stat sb;
	if (stat(path, &sb) != 0)
		return fail(err, "cannot use directory", path, errno);
	if (!S_ISDIR(sb.st_mode))
		return fail(err, "not a directory:", path, ENOTDIR);
	return 0;
}

int dir_creatable(const char *path, struct gw_err *err)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
		gw_errf(err, "path too long: %s", path);
		return -1;
	}
	struct stat sb;
	if (stat(buf, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			gw_errf(err, "%s is not a directory", path);
			return -1;
		}
		if (access(buf, W_OK | X_OK) != 0) {
			gw_errf(err, "%s is not writable by this process", path);
			return -1;
		}
		return 0;
	}
	/* Missing: the nearest existing ancestor must let us create the rest. */
	for (;;) {
		char *slash = strrchr(buf, '/');
		if (!slash) {
			snprintf(buf, sizeof buf, ".");
		} else if (slash == buf) {
			buf[1] = '\0';
		} else {
			*slash = '\0';
		}
		if (stat(buf, &sb) == 0)
			break;
		if (strcmp(buf, ".") == 0 || strcmp(buf, "/") == 0) {
			gw_errf(err, "cannot find an existing parent of %s", path);
			return -1;
		}
	}
	if (!S_ISDIR(sb.st_mode)) {
		gw_errf(err, "%s is not a directory (creating %s)", buf, path);
		return -1;
	}
	if (access(buf, W_OK | X_OK) != 0) {
		gw_errf(err, "cannot create %s: %s is not writable by this process", path, buf);
		return -1;
	}
	return 0;
}
