/*
 * The LMDB environment's life on disk: checking and creating its directory, opening it with
 * the modes docs/lmdb-cache.md promises, and growing its map when a commit finds it full.
 *
 * Modes are set explicitly (fchmod/chmod after the open) rather than left to the umask:
 * the cache holds secrets (APP_AUTH appSecret, AI proxy API keys), so what the operator
 * configured is exactly what the files get. The lock file is the one exception: LMDB
 * readers register in it, so whoever may read data.mdb must be able to write lock.mdb,
 * otherwise their mdb_env_open() fails with EACCES. It holds pids and transaction ids only.
 *
 * A full filesystem needs the filesystem's word too: LMDB writes a commit's pages with
 * pwrite/writev and reports a write that stopped short (what a full disk does to a
 * multi-page write) as EIO, "Input/output error", losing the ENOSPC the next write would
 * have returned. cache_env_cause() gives it back when the filesystem has no room left.
 */
#include "cache_env.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <gwsync/cache.h>

#include "shared/atomic_file.h"

/* LMDB's own flags for the writer: see docs/lmdb-cache.md "Durability". MDB_NOMETASYNC
 * keeps one fdatasync per commit instead of two; a power failure can lose the last commit
 * but never corrupt the environment, and gwsyncd rewrites every group after a restart. */
#define WRITER_FLAGS MDB_NOMETASYNC

/* The named databases the writer may open: the groups plus `meta` and `changes`, with room to
 * spare so a newer agent's groups fit (GW_CACHE_MAX_DBS in cache.h says the same to readers). */
#define MAX_DBS 32

unsigned cache_env_lock_mode(unsigned mode)
{
	unsigned m = mode & 0666;
	if (m & 0040)
		m |= 0020;
	if (m & 0004)
		m |= 0002;
	return m | 0600;
}

/* The directory mode for a data mode: read bits get their search bit, and we keep rwx. */
static unsigned dir_mode(unsigned mode)
{
	unsigned m = (mode & 0666) | 0700;
	if (m & 0040)
		m |= 0010;
	if (m & 0004)
		m |= 0001;
	return m;
}

static int lmdb_fail(struct gw_err *err, const char *what, const char *path, int rc)
{
	gw_errf(err, "%s %s: %s", what, path, mdb_strerror(rc));
	return -1;
}

int cache_env_open(struct cache_env *ce, struct gw_err *err)
{
	struct stat sb;
	if (stat(ce->path, &sb) != 0) {
		if (make_dirs(ce->path, dir_mode(ce->mode), err) != 0)
			return -1;
		/* make_dirs is subject to the umask; the leaf is ours, give it the exact mode */
		if (chmod(ce->path, dir_mode(ce->mode)) != 0) {
			gw_errf(err, "cannot set the mode of %s: %s", ce->path, strerror(errno));
			return -1;
		}
	}

	int rc = mdb_env_create(&ce->env);
	if (rc)
		return lmdb_fail(err, "cannot create an LMDB environment for", ce->path, rc);
	if ((rc = mdb_env_set_maxdbs(ce->env, MAX_DBS)) ||
	    (rc = mdb_env_set_maxreaders(ce->env, ce->max_readers)) ||
	    (rc = mdb_env_set_mapsize(ce->env, (size_t)ce->map_size))) {
		cache_env_close(ce);
		return lmdb_fail(err, "cannot configure the LMDB environment", ce->path, rc);
	}
	rc = mdb_env_open(ce->env, ce->path, WRITER_FLAGS, (mdb_mode_t)(ce->mode & 0666));
	if (rc) {
		cache_env_close(ce);
		return lmdb_fail(err, "cannot open the LMDB environment", ce->path, rc);
	}
	/* The layout stores keys up to GW_CACHE_MAX_KEY as they are (readers rely on it); a
	 * liblmdb built with a smaller MDB_MAXKEYSIZE could not hold them. */
	int maxkey = mdb_env_get_maxkeysize(ce->env);
	if (maxkey < GW_CACHE_MAX_KEY) {
		gw_errf(err,
		        "cannot use the LMDB environment %s: this liblmdb holds keys of at most %d "
		        "bytes, the cache's layout needs %d",
		        ce->path, maxkey, GW_CACHE_MAX_KEY);
		cache_env_close(ce);
		return -1;
	}
	/* An environment left by an earlier run may have a bigger map: LMDB keeps that one. */
	MDB_envinfo info;
	if (mdb_env_info(ce->env, &info) == 0 && (int64_t)info.me_mapsize > ce->map_size)
		ce->map_size = (int64_t)info.me_mapsize;

	int fd;
	if (mdb_env_get_fd(ce->env, &fd) == 0 && fchmod(fd, (mode_t)(ce->mode & 0666)) != 0) {
		gw_errf(err, "cannot set the mode of %s/data.mdb: %s", ce->path, strerror(errno));
		cache_env_close(ce);
		return -1;
	}
	char lock[PATH_MAX];
	snprintf(lock, sizeof lock, "%s/lock.mdb", ce->path);
	if (chmod(lock, (mode_t)cache_env_lock_mode(ce->mode)) != 0) {
		gw_errf(err, "cannot set the mode of %s: %s", lock, strerror(errno));
		cache_env_close(ce);
		return -1;
	}
	return 0;
}

int cache_env_grow(struct cache_env *ce, int64_t *old_size, int64_t *new_size, struct gw_err *err)
{
	int fd;
	struct statvfs vfs;
	struct stat sb;
	if (mdb_env_get_fd(ce->env, &fd) != 0 || fstatvfs(fd, &vfs) != 0 || fstat(fd, &sb) != 0) {
		gw_errf(err, "map of %s full and its filesystem cannot be measured: %s", ce->path,
		        strerror(errno));
		return -1;
	}
	/* The file can reach what it has now plus what the filesystem has free; a map beyond
	 * that could only fail later with a less clear error (ENOSPC mid-commit). */
	int64_t room = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize + (int64_t)sb.st_size;
	int64_t want = ce->map_size * 2;
	if (want > room)
		want = room;
	if (want <= ce->map_size) {
		gw_errf(err,
		        "map of %s full at %lld bytes and the filesystem has no room to grow it "
		        "(%lld bytes free)",
		        ce->path, (long long)ce->map_size,
		        (long long)((int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize));
		return -1;
	}
	int rc = mdb_env_set_mapsize(ce->env, (size_t)want);
	if (rc) {
		gw_errf(err, "cannot grow the map of %s to %lld bytes: %s", ce->path,
		        (long long)want, mdb_strerror(rc));
		return -1;
	}
	*old_size = ce->map_size;
	ce->map_size = want;
	*new_size = want;
	return 0;
}

int cache_env_cause(struct cache_env *ce, int rc)
{
	int fd;
	struct statvfs vfs;
	MDB_stat st;
	if (rc != EIO || !ce->env || mdb_env_get_fd(ce->env, &fd) != 0 || fstatvfs(fd, &vfs) != 0 ||
	    mdb_env_stat(ce->env, &st) != 0)
		return rc;
	/* f_bavail: what an unprivileged writer may still use. A short write leaves less than
	 * one block behind; a page is what any commit writes at the least. */
	if ((uint64_t)vfs.f_bavail * vfs.f_frsize < st.ms_psize)
		return ENOSPC;
	return rc;
}

void cache_env_close(struct cache_env *ce)
{
	if (ce->env)
		mdb_env_close(ce->env);
	ce->env = NULL;
}
