/*
 * The shell of a one-thread source (see shell.h): the table's lifecycle entries, the
 * start-up sync and the thread's pause, each once, over the source's own parts in its
 * kv_shell_ops.
 */
#include "source/kv/shell.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "model/groups.h"

/* The struct source begins with its shell (shell.h): the conversions, in one place. */
static struct kv_shell *shell_of(struct source *s)
{
	return (struct kv_shell *)(void *)s;
}

static struct source *source_of(struct kv_shell *sh)
{
	return (struct source *)(void *)sh;
}

struct source *kv_shell_new(size_t size, const struct kv_shell_ops *ops,
                            const struct source_args *args, const char *server, const char *session,
                            size_t n_servers, struct gw_err *err)
{
	struct kv_shell *sh = calloc(1, size);
	if (!sh) {
		gw_errf(err, "%s: out of memory", ops->type);
		return NULL;
	}
	sh->ops = ops;
	sh->args = *args;
	sh->n_servers = n_servers;
	atomic_init(&sh->stop, 0);
	conn_init(&sh->status, server, session);
	return source_of(sh);
}

int kv_shell_first_sync(struct kv_shell *sh, size_t n, struct gw_err *err)
{
	const struct kv_shell_ops *ops = sh->ops;
	for (size_t i = 0; i < n; i++) {
		if (atomic_load(&sh->stop))
			return gw_errf(err, "start-up sync interrupted");
		struct gw_err e = {0};
		if (ops->first_read(source_of(sh), i, &e) == 0)
			return 0;
		if (atomic_load(&sh->stop))
			return gw_errf(err, "start-up sync interrupted");
		conn_count_failure(&sh->status, e.kind, e.msg);
		LOG_W(sh->args.log, ops->type, "%s [%s]", e.msg, sync_fail_name(e.kind));
		if (ops->next)
			ops->next(source_of(sh));
	}
	/* the last failure's message, as the status keeps it (main's thread: no race yet) */
	pthread_mutex_lock(&sh->status.mu);
	gw_errf(err, "no %s answered (%zu tried); the last: %.900s", ops->server_noun, n,
	        sh->status.st.last_error);
	pthread_mutex_unlock(&sh->status.mu);
	return -1;
}

int kv_shell_starting(const struct kv_shell *sh)
{
	const struct cfg *cfg = sh->args.cfg;
	struct ingest_stamp st[GW_GROUP_COUNT];
	ingest_stamps(sh->args.ingest, st);
	for (size_t i = 0; i < cfg->n_groups; i++)
		if (!st[cfg->groups[i]].md5[0])
			return 1;
	return 0;
}

void kv_shell_groups(const struct kv_shell *sh, char *buf, size_t cap)
{
	const struct cfg *cfg = sh->args.cfg;
	size_t pos = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < cfg->n_groups && pos < cap; i++)
		pos += (size_t)snprintf(buf + pos, cap - pos, "%s%s", i ? "," : "",
		                        gw_group_name(cfg->groups[i]));
}

static int64_t pause_due(void *arg, int64_t now)
{
	struct kv_shell *sh = arg;
	return sh->ops->due(source_of(sh), now);
}

int kv_shell_pause(struct kv_shell *sh, int64_t ms)
{
	const struct kv_shell_ops *ops = sh->ops;
	int64_t until = gw_mono_ms() + ms;
	if (!ops->wait)
		return conn_pause_until(&sh->status, &sh->stop, until, ops->due ? pause_due : NULL,
		                        sh);
	/* a watch of its own: conn_pause_until's loop, sleeping in the watch's wait */
	for (;;) {
		if (atomic_load(&sh->stop))
			return 1;
		int64_t now = gw_mono_ms();
		if (now >= until)
			return 0;
		int64_t dl = ops->due ? ops->due(source_of(sh), now) : -1;
		int64_t wake = dl >= 0 && dl < until ? dl : until;
		ops->wait(source_of(sh), wake > now ? wake - now : 0);
	}
}

int kv_shell_try_failed(struct kv_shell *sh, struct rounds *r, size_t *ep, enum sync_fail why,
                        const char *msg)
{
	int64_t delay = rounds_failed(r, &sh->status, ep, why, msg);
	return delay >= 0 && kv_shell_pause(sh, delay);
}

int kv_shell_initial_sync(struct source *s, struct gw_err *err)
{
	struct kv_shell *sh = shell_of(s);
	return kv_shell_first_sync(sh, sh->n_servers, err);
}

int kv_shell_start(struct source *s, struct gw_err *err)
{
	struct kv_shell *sh = shell_of(s);
	if (sh->started)
		return 0;
	int rc = gw_thread_start(&sh->thread, sh->ops->thread, sh->ops->run, s);
	if (rc != 0)
		return gw_errf(err, "%s: cannot start the source thread: %s", sh->ops->type,
		               strerror(rc));
	sh->started = 1;
	return 0;
}

void kv_shell_stop(struct source *s)
{
	if (!s)
		return;
	struct kv_shell *sh = shell_of(s);
	atomic_store(&sh->stop, 1);
	if (sh->ops->interrupt)
		sh->ops->interrupt(s);
	conn_wake(&sh->status);
}

void kv_shell_free(struct source *s)
{
	if (!s)
		return;
	struct kv_shell *sh = shell_of(s);
	kv_shell_stop(s);
	if (sh->started)
		pthread_join(sh->thread, NULL);
	if (sh->ops->release)
		sh->ops->release(s);
	conn_destroy(&sh->status);
	free(s);
}

int kv_shell_status(struct source *s, size_t i, struct source_conn_status *out)
{
	if (i != 0)
		return 0;
	struct kv_shell *sh = shell_of(s);
	struct kv_mirror_stats ms = {0};
	int64_t watches = -1;
	sh->ops->counts(s, &ms, &watches);
	conn_copy(&sh->status, out, ms.versions, ms.repairs, ms.last_event_ms);
	if (watches >= 0)
		out->watches = (uint64_t)watches;
	return 1;
}

int kv_shell_selects(const struct cfg *cfg, const char *section)
{
	return cfg->section && strcmp(cfg->section, section) == 0;
}

const char *kv_shell_conn_name(const char *label, size_t i)
{
	return label && i == 0 ? label : "";
}

void kv_shell_summary(const char *type, const char *label, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s source %s", type, label ? label : "");
}
