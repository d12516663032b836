/*
 * The pause switch (see pause.h). A mutex orders changes, so two requests racing each
 * other leave the file and the dispatcher agreeing with the last one. The file is written
 * even when the state does not change: a retry after a full disk was fixed then records it.
 */
#include "ops/pause.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "deliver/dispatch.h"

struct pause_switch {
	pthread_mutex_t mu;
	int paused;
	struct dispatcher *d;
	struct gw_log *log;
	/* both allocated with the struct, to their length: 8 KiB of fixed buffers were
	 * private memory for the agent's life (issue 30 item 9) */
	char *dir;
	char *path;
};

#define DIR_MAX 4096 /* as the fixed buffer was */

int pause_load(const char *state_dir, int *paused, struct gw_err *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", state_dir, PAUSE_FILE);
	struct stat st;
	if (lstat(path, &st) == 0) {
		*paused = 1;
		return 0;
	}
	*paused = 0;
	if (errno == ENOENT || errno == ENOTDIR)
		return 0;
	return gw_errf(err, "pause state %s: %s", path, strerror(errno));
}

int pause_open(struct pause_switch **out, const char *state_dir, struct gw_log *log,
               struct gw_err *err)
{
	size_t dl = strlen(state_dir), pl = dl + 1 + strlen(PAUSE_FILE);
	if (dl >= DIR_MAX)
		return gw_errf(err, "pause switch: state_dir too long");
	struct pause_switch *ps = calloc(1, sizeof *ps + dl + 1 + pl + 1);
	if (!ps)
		return gw_errf(err, "pause switch: out of memory");
	ps->dir = (char *)(ps + 1);
	ps->path = ps->dir + dl + 1;
	memcpy(ps->dir, state_dir, dl + 1);
	snprintf(ps->path, pl + 1, "%s/%s", state_dir, PAUSE_FILE);
	if (pause_load(state_dir, &ps->paused, err) != 0) {
		free(ps);
		return -1;
	}
	ps->log = log;
	pthread_mutex_init(&ps->mu, NULL);
	if (ps->paused)
		LOG_W(log, "pause",
		      "sync is paused (%s exists): polling and storing, delivering "
		      "nothing until resumed",
		      ps->path);
	*out = ps;
	return 0;
}

void pause_close(struct pause_switch *ps)
{
	if (!ps)
		return;
	pthread_mutex_destroy(&ps->mu);
	free(ps);
}

void pause_attach(struct pause_switch *ps, struct dispatcher *d)
{
	pthread_mutex_lock(&ps->mu);
	ps->d = d;
	if (d && ps->paused)
		dispatcher_set_paused(d, 1);
	pthread_mutex_unlock(&ps->mu);
}

int pause_get(struct pause_switch *ps)
{
	pthread_mutex_lock(&ps->mu);
	int p = ps->paused;
	pthread_mutex_unlock(&ps->mu);
	return p;
}

const char *pause_path(const struct pause_switch *ps)
{
	return ps->path;
}

/* Make the file agree with `paused`. */
static int persist(const struct pause_switch *ps, int paused, const char *who, struct gw_err *err)
{
	if (!paused) {
		if (unlink(ps->path) == 0)
			return atomic_file_sync_dir(ps->dir, err);
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return gw_errf(err, "cannot remove %s: %s", ps->path, strerror(errno));
	}
	if (make_dirs(ps->dir, 0750, err) != 0)
		return -1;
	char text[512];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	char when[32];
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	int n = snprintf(text, sizeof text,
	                 "# gwsync: delivery to subscribers is paused while this file exists.\n"
	                 "paused at %s by %s\n",
	                 when, who);
	if (n < 0 || n >= (int)sizeof text)
		n = (int)strlen(text);
	struct atomic_file af;
	if (atomic_file_open(&af, ps->dir, PAUSE_FILE, 0600, err) != 0)
		return -1;
	fwrite(text, 1, (size_t)n, af.fp);
	if (atomic_file_finish(&af, err) != 0 || atomic_file_commit(&af, err) != 0) {
		atomic_file_abort(&af);
		return -1;
	}
	return 0;
}

int pause_set(struct pause_switch *ps, int paused, const char *who, int *changed, int *persisted,
              struct gw_err *err)
{
	paused = paused ? 1 : 0;
	pthread_mutex_lock(&ps->mu);
	*changed = ps->paused != paused;
	ps->paused = paused;
	if (ps->d && *changed)
		dispatcher_set_paused(ps->d, paused);
	int rc = persist(ps, paused, who, err);
	pthread_mutex_unlock(&ps->mu);
	*persisted = rc == 0;

	const char *what = paused ? "paused" : "resumed";
	if (*changed)
		LOG_I(ps->log, "pause", "sync %s by %s%s", what, who,
		      paused ? ": polling and storing go on, nothing is delivered" : "");
	if (rc != 0) {
		LOG_E(ps->log, "pause",
		      "sync %s, but the state could not be recorded (%s): a restart would %s", what,
		      err->msg, paused ? "resume delivery" : "start paused");
		return -1;
	}
	return 0;
}
