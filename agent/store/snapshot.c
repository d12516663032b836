/*
 * Snapshot files (see snapshot.h). The document format is the file plugin's, so an
 * operator reads both the same way, and loading reuses the admin-reply parser
 * (model_parse_group): one parser, one set of rules for what a valid group is. What
 * changed since a group file was written goes to its journal (journal.h).
 */
#include "store/snapshot.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/atomic_file.h"
#include "core/clock.h"
#include "core/readfile.h"
#include "core/thread.h"
#include "shared/groupdoc.h"
#include "store/history.h"
#include "store/history_file.h"
#include "store/journal.h"
#include "model/model.h"
#include "model/groups.h"

/* A snapshot is as large as the group it holds: no cap of its own (the admin's replies
 * are capped by admin.max_response before a version exists to be written). */
#define SNAPSHOT_MAX (SIZE_MAX / 2)

/* Item i's raw JSON, for groupdoc_write_each (arg: the version's address). */
static const char *item_json(void *arg, size_t i, size_t *len)
{
	const struct group_data *const *gd = arg;
	*len = (*gd)->items[i].json_len;
	return (*gd)->items[i].json;
}

/* The group file, written whole (atomically: fsync, rename); *bytes its size. */
static int write_base(const char *dir, const struct group_data *gd, size_t *bytes,
                      struct gw_err *err)
{
	char name[64];
	const char *gname = gw_group_name(gd->group);
	snprintf(name, sizeof name, "%s.json", gname);
	if (make_dirs(dir, 0750, err) != 0)
		return gw_err_prefix(err, "snapshot of %s", gname);
	struct atomic_file af;
	/* owner-only: APP_AUTH's snapshot holds appSecrets, AI_PROXY_API_KEY's the real keys.
	 * The directory stays 0750 so a gateway group can reach a cache kept inside it. */
	if (atomic_file_open(&af, dir, name, 0600, err) != 0)
		return gw_err_prefix(err, "snapshot of %s", gname);
	groupdoc_write_each(af.fp, gname, gd->md5, gd->last_modify_time, gd->n_items, item_json,
	                    &gd);
	long end = ftell(af.fp);
	if (atomic_file_finish(&af, err) != 0 || atomic_file_commit(&af, err) != 0) {
		atomic_file_abort(&af);
		return gw_err_prefix(err, "snapshot of %s", gname);
	}
	*bytes = end > 0 ? (size_t)end : 0;
	return 0;
}

int snapshot_write(const char *dir, const struct group_data *gd, struct gw_err *err)
{
	struct journal js;
	size_t bytes;
	if (write_base(dir, gd, &bytes, err) != 0)
		return -1;
	journal_restart(dir, &js, gd, bytes, err); /* a journal left: stale, named as such */
	return 0;
}

/* The group file alone: 0 and *out, 1 none, -1 corrupt or unreadable. */
static int read_base(const char *dir, enum gw_group group, struct group_data **out,
                     struct gw_err *err)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s.json", dir, gw_group_name(group));
	char *buf;
	size_t len;
	struct gw_err ferr;
	/* a regular file only (core/readfile.h): a FIFO planted in state_dir must not hang
	 * start-up */
	if (readfile(path, SNAPSHOT_MAX, &buf, &len, &ferr) < 0) {
		int e = errno;
		if (e == ENOENT)
			return 1;
		if (e == EINVAL) /* "PATH: not a regular file (a FIFO)" */
			return gw_errf(err, "snapshot %s", ferr.msg);
		return gw_errf(err, "snapshot %s: %s", path, strerror(e));
	}
	int rc = -1;
	if (model_parse_group(group, buf, len, "snapshot", out, err) != 0)
		gw_err_prefix(err, "snapshot %s", path);
	else {
		(*out)->provisional = 1;
		rc = 0;
	}
	free(buf);
	return rc;
}

int snapshot_read_journal(const char *dir, enum gw_group group, struct group_data **out,
                          size_t *replayed, struct gw_err *tail, struct gw_err *err)
{
	struct group_data *base = NULL;
	*out = NULL;
	*replayed = 0;
	tail->msg[0] = '\0';
	int rc = read_base(dir, group, &base, err);
	if (rc != 0)
		return rc;
	rc = journal_replay(dir, base, out, replayed, tail, err);
	group_data_unref(base);
	return rc;
}

int snapshot_read(const char *dir, enum gw_group group, struct group_data **out, struct gw_err *err)
{
	size_t replayed;
	struct gw_err tail;
	return snapshot_read_journal(dir, group, out, &replayed, &tail, err);
}

size_t snapshot_load(const char *dir, const enum gw_group *groups, size_t n_groups,
                     struct store *st, struct gw_log *log)
{
	size_t loaded = 0;
	for (size_t i = 0; i < n_groups; i++) {
		struct group_data *gd = NULL;
		struct gw_err err = {0};
		struct gw_err tail;
		size_t replayed = 0;
		int rc = snapshot_read_journal(dir, groups[i], &gd, &replayed, &tail, &err);
		if (rc < 0) {
			LOG_W(log, "snapshot", "ignoring %s (corrupt or unreadable)", err.msg);
			continue;
		}
		if (rc > 0) {
			LOG_I(log, "snapshot", "no snapshot of %s in %s", gw_group_name(groups[i]),
			      dir);
			continue;
		}
		if (tail.msg[0])
			LOG_W(log, "snapshot",
			      "%s: the journal's end is ignored after %zu change(s): %s; the "
			      "versions "
			      "it held are lost (an admin serves them again)",
			      gw_group_name(groups[i]), replayed, tail.msg);
		LOG_W(log, "snapshot",
		      "loaded %s version %s (lastModifyTime %" PRId64 ", %zu items) from %s: "
		      "STALE until an admin answers",
		      gw_group_name(groups[i]), gd->md5, gd->last_modify_time, gd->n_items, dir);
		store_put(st, gd);
		group_data_unref(gd);
		loaded++;
	}
	return loaded;
}

struct snapshot_writer {
	char *dir;
	struct store *st;
	struct gw_log *log;
	pthread_t thread;
	atomic_int stopping;
	struct group_data *written[GW_GROUP_COUNT]; /* the version last written per group */
	struct journal journal[GW_GROUP_COUNT];     /* what follows the group file */
	int failing[GW_GROUP_COUNT];                /* a failure was logged; log recovery once */
	_Atomic(struct history *) history;
	int history_failing;
};

/* Whether anything in state_dir failed to be written on the last try. */
static int any_failing(const struct snapshot_writer *w)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (w->failing[g])
			return 1;
	return w->history_failing;
}

/* The history beside the snapshots, in the same pass: counted here, off the delivery path,
 * and written when something changed. It is part of the same outage as the snapshots: one
 * line when state_dir stops taking writes, one when everything in it writes again. */
static void write_history(struct snapshot_writer *w)
{
	struct history *h = atomic_load(&w->history);
	if (!h)
		return;
	history_settle(h);
	if (!history_dirty(h))
		return;
	struct gw_err err = {0};
	if (history_save(h, w->dir, &err) == 0) {
		w->history_failing = 0;
	} else {
		if (!any_failing(w))
			LOG_E(w->log, "snapshot", "%s; the agent keeps serving subscribers",
			      err.msg);
		w->history_failing = 1;
	}
}

void snapshot_writer_set_history(struct snapshot_writer *w, struct history *h)
{
	atomic_store(&w->history, h);
	store_kick(w->st); /* a first pass with it */
}

/* Write gd: appended to the journal as what changed since the version last written, or the
 * group file whole (the first write of a run, or when the journal says so). 0 or -1. */
static int save(struct snapshot_writer *w, int g, struct group_data *gd, struct gw_err *err)
{
	int rc = 1;
	if (w->written[g])
		rc = journal_append(w->dir, &w->journal[g], w->written[g], gd, err);
	if (rc == 1) {
		size_t bytes;
		if ((rc = write_base(w->dir, gd, &bytes, err)) == 0 &&
		    journal_restart(w->dir, &w->journal[g], gd, bytes, err) != 0)
			w->journal[g].broken =
			    1; /* a stale journal stays: rewrite whole next time */
	}
	if (rc == 0) {
		group_data_unref(w->written[g]);
		w->written[g] = group_data_ref(gd);
	}
	return rc;
}

/* One pass: write every group whose newest non-provisional version is not on disk yet.
 * An outage (a full or read-only disk) is logged once when it starts, not once per group
 * or per change; write_pass() logs its end. */
static void write_pending(struct snapshot_writer *w)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		struct group_data *gd = store_get(w->st, (enum gw_group)g);
		if (gd && !gd->provisional &&
		    (!w->written[g] || strcmp(gd->md5, w->written[g]->md5) != 0)) {
			struct gw_err err = {0};
			if (save(w, g, gd, &err) == 0) {
				w->failing[g] = 0;
			} else {
				if (!any_failing(w))
					LOG_E(w->log, "snapshot",
					      "%s; the agent keeps serving subscribers", err.msg);
				w->failing[g] = 1;
			}
		}
		group_data_unref(gd);
	}
}

/* The snapshots, then the history; the end of an outage is logged once everything in
 * state_dir writes again. */
static void write_pass(struct snapshot_writer *w)
{
	int was_failing = any_failing(w);
	write_pending(w);
	write_history(w);
	if (was_failing && !any_failing(w))
		LOG_I(w->log, "snapshot", "writing snapshots to %s again", w->dir);
}

/* Wait out a burst: return once the store has had no news for SNAPSHOT_QUIET_MS, or
 * SNAPSHOT_MAX_DELAY_MS after `since`, or when asked to stop. A stream of changes is then
 * written once, after the dispatcher has delivered them, instead of once per change while
 * it delivers. */
static uint64_t wait_quiet(struct snapshot_writer *w, uint64_t seen, int64_t since)
{
	while (!atomic_load(&w->stopping) && gw_mono_ms() - since < SNAPSHOT_MAX_DELAY_MS) {
		/* what each version changed is counted as it comes, not after the burst: the
		 * history holds a version's predecessor only until then */
		history_settle(atomic_load(&w->history));
		uint64_t now = store_wait(w->st, seen, SNAPSHOT_QUIET_MS);
		if (now == seen)
			break;
		seen = now;
	}
	return seen;
}

static void *writer_main(void *arg)
{
	struct snapshot_writer *w = arg;
	uint64_t seen = 0;
	gw_thread_background();
	while (!atomic_load(&w->stopping)) {
		write_pass(w);
		/* after a failure, retry every 5 s even without news; else until the next
		 * change, maybe for hours: the write's stack pages go back first */
		int failing = any_failing(w);
		if (!failing)
			gw_thread_shed_stack();
		uint64_t now = store_wait(w->st, seen, failing ? 5000 : -1);
		if (now != seen)
			now = wait_quiet(w, now, gw_mono_ms());
		seen = now;
	}
	write_pass(w);
	return NULL;
}

int snapshot_writer_start(struct snapshot_writer **out, const char *dir, struct store *st,
                          struct gw_log *log, struct gw_err *err)
{
	struct snapshot_writer *w = calloc(1, sizeof *w);
	if (!w || !(w->dir = strdup(dir))) {
		free(w);
		return gw_errf(err, "snapshot writer: out of memory");
	}
	w->st = st;
	w->log = log;
	atomic_init(&w->history, NULL);
	atomic_file_sweep(dir, HISTORY_FILE);
	/* temporary files of a writer killed mid-write: whole files are never at risk */
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		char name[64];
		snprintf(name, sizeof name, "%s.json", gw_group_name((enum gw_group)g));
		int n = atomic_file_sweep(dir, name);
		if (n)
			LOG_I(log, "snapshot",
			      "removed %d temporary file(s) of %s left in %s by a "
			      "crash",
			      n, name, dir);
	}
	int rc = gw_thread_start(&w->thread, "snapshot", writer_main, w);
	if (rc != 0) {
		free(w->dir);
		free(w);
		return gw_errf(err, "snapshot writer: cannot start thread: %s", strerror(rc));
	}
	*out = w;
	return 0;
}

void snapshot_writer_stop(struct snapshot_writer *w)
{
	if (!w)
		return;
	atomic_store(&w->stopping, 1);
	store_kick(w->st);
}

void snapshot_writer_free(struct snapshot_writer *w)
{
	if (!w)
		return;
	snapshot_writer_stop(w);
	pthread_join(w->thread, NULL);
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(w->written[g]);
	free(w->dir);
	free(w);
}
