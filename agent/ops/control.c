/*
 * The control socket's server (see control.h). One thread blocks in accept(): idle, it
 * never wakes. control_stop() shuts the listening socket down, which ends a blocked accept()
 * at once on Linux. Each connection is answered in turn (they are rare and short: a pause is
 * one file write), with a receive timeout so a silent client cannot hold the thread.
 */
#include "ops/history_json.h"
#include "ops/control.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "core/clock.h"
#include "core/thread.h"
#include "ops/status_json.h"
#include "ops/status_text.h"
#include "ops/unix_addr.h"

/* The socket's mode: the agent's user and group may control it, nobody else. */
#define SOCKET_MODE 0660

struct control {
	int fd;
	int dirfd;        /* the socket's directory (O_PATH): every name is resolved in it */
	char *path;       /* as configured, for messages */
	const char *name; /* the file's name, in path */
	struct pause_switch *ps;
	struct gw_log *log;
	pthread_t thread;
	int started;
	atomic_int stop;
	_Atomic(struct status_sources *) status; /* for "status"; NULL: not yet */
};

void control_set_status(struct control *c, struct status_sources *src)
{
	if (c)
		atomic_store(&c->status, src);
}

/* {"status": /status, "history": the last changes}, or {"error"}. */
static json_t *status_answer(struct control *c)
{
	struct status_sources *src = atomic_load(&c->status);
	if (!src)
		return json_pack("{s:s}", "error", "the agent is starting: no status yet");
	struct status_view v;
	struct gw_err err = {0};
	if (status_view_take(src, &v, &err) != 0)
		return json_pack("{s:s}", "error", err.msg);
	json_t *st = status_json(&v);
	status_view_free(&v);
	json_t *hist = NULL;
	if (src->history) {
		history_settle(src->history);
		hist = history_json(src->history, src->cfg->groups, src->cfg->n_groups, ~0u, 0,
		                    STATUS_TEXT_CHANGES);
	}
	if (!st)
		return NULL;
	return json_pack("{s:o, s:o}", "status", st, "history", hist ? hist : json_null());
}

/* One request line ("pause", "resume", "state") into its answer. */
static char *answer(struct control *c, const char *line, const char *who)
{
	int paused = pause_get(c->ps), changed = 0, persisted = 1, rc = 0;
	struct gw_err err = {0};
	if (strcmp(line, "status") == 0) {
		json_t *doc = status_answer(c);
		char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
		json_decref(doc);
		return text;
	}
	if (strcmp(line, "pause") == 0 || strcmp(line, "resume") == 0) {
		paused = strcmp(line, "pause") == 0;
		rc = pause_set(c->ps, paused, who, &changed, &persisted, &err);
	} else if (strcmp(line, "state") != 0) {
		json_t *doc = json_pack("{s:s}", "error",
		                        "unknown request: send pause, resume, state or status");
		char *text = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		return text;
	}
	json_t *doc = json_pack("{s:b, s:b, s:b, s:s, s:s?}", "paused", paused, "changed", changed,
	                        "persisted", persisted, "stateFile", pause_path(c->ps), "error",
	                        rc != 0 ? err.msg : NULL);
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return text;
}

/* All of it, or -1 (a client that stops reading is given up after the send timeout). */
static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void serve(struct control *c, int fd)
{
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	char line[64];
	size_t n = 0;
	while (n < sizeof line - 1) {
		ssize_t got = read(fd, line + n, sizeof line - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
		if (memchr(line, '\n', n))
			break;
	}
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	char who[96] = "the control socket";
	struct ucred cred;
	socklen_t len = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
		snprintf(who, sizeof who, "the control socket (uid %u, pid %d)", (unsigned)cred.uid,
		         (int)cred.pid);
	char *text = answer(c, line, who);
	if (text) {
		size_t tl = strlen(text);
		if (write_all(fd, text, tl) != 0 || write_all(fd, "\n", 1) != 0)
			LOG_W(c->log, "control", "%s: the answer could not be sent", who);
		free(text);
	}
}

static void *run(void *arg)
{
	struct control *c = arg;
	while (!atomic_load(&c->stop)) {
		int fd = accept(c->fd, NULL, NULL);
		if (fd < 0) {
			if (atomic_load(&c->stop))
				break; /* shut down by control_stop() */
			if (errno != EINTR && errno != ECONNABORTED) {
				/* out of descriptors or memory: say so, breathe, keep serving */
				LOG_W(c->log, "control", "%s: accept: %s", c->path,
				      strerror(errno));
				sleep(1);
			}
			continue;
		}
		serve(c, fd);
		close(fd);
		gw_thread_shed_stack(); /* the answer's pages: the next one may be days away */
	}
	return NULL;
}

/* A socket file at `name` already: a crash's leftover is removed, a live agent's is not, and
 * nothing that is not a socket is ever touched. */
static int clear_old(struct control *c, const struct unix_addr *ua, struct gw_err *err)
{
	struct stat sb;
	if (fstatat(c->dirfd, c->name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0
		                       : gw_errf(err, "control_socket: cannot check %s: %s",
		                                 c->path, strerror(errno));
	if (!S_ISSOCK(sb.st_mode))
		return gw_errf(
		    err, "control_socket: %s exists and is not a socket; not touching it", c->path);
	/* non-blocking: a live agent whose backlog is full answers EAGAIN, never a wait */
	int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (probe < 0)
		return gw_errf(err, "control_socket: cannot create a socket: %s", strerror(errno));
	int rc = connect(probe, (const struct sockaddr *)&ua->sa, ua->len), e = errno;
	close(probe);
	if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
		return gw_errf(err, "control_socket: another agent answers on %s", c->path);
	if (e != ECONNREFUSED)
		return gw_errf(err, "control_socket: cannot check %s: %s", c->path, strerror(e));
	unlinkat(c->dirfd, c->name, 0);
	return 0;
}

/* Give the socket file `tmp` (just bound) its exact mode without following a symlink, nor
 * touching anything but a socket: what bind() created is opened as itself (O_PATH |
 * O_NOFOLLOW) and changed through that descriptor, so a symlink or another file swapped
 * in under the name is refused, never changed. Returns the mode it has, or -1 with err. */
static int set_mode(struct control *c, const char *tmp, struct gw_err *err)
{
	int fd = openat(c->dirfd, tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return gw_errf(err, "control_socket: cannot open what was bound at %s: %s", c->path,
		               strerror(e));
	}
	if (!S_ISSOCK(sb.st_mode)) {
		close(fd);
		return gw_errf(err,
		               "control_socket: the socket just bound for %s was replaced (by %s); "
		               "not touching it",
		               c->path, S_ISLNK(sb.st_mode) ? "a symlink" : "something else");
	}
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	int mode = (int)(sb.st_mode & 07777);
	if (chmod(proc, SOCKET_MODE) == 0)
		mode = SOCKET_MODE;
	else if (errno != ENOENT) { /* ENOENT: no /proc; the mode bind() gave stays (below) */
		int e = errno;
		close(fd);
		return gw_errf(err, "control_socket: cannot set the mode of %s: %s", c->path,
		               strerror(e));
	}
	close(fd);
	return mode;
}

int control_start(struct control **out, const char *path, struct pause_switch *ps,
                  struct gw_log *log, struct gw_err *err)
{
	/* its directory (state_dir by default) may not exist yet on a first start */
	char *dir = strdup(path);
	if (!dir)
		return gw_errf(err, "control: out of memory");
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (make_dirs(dir, 0750, err) != 0) {
			free(dir);
			return gw_err_prefix(err, "control_socket");
		}
	}
	free(dir);

	struct control *c = calloc(1, sizeof *c);
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return gw_errf(err, "control: out of memory");
	}
	c->fd = c->dirfd = -1;
	c->ps = ps;
	c->log = log;
	atomic_init(&c->stop, 0);
	atomic_init(&c->status, NULL);
	char tmp[96], tmp_path[4200];
	struct unix_addr ua, tua;
	int mode = -1, bound = 0;
	if ((c->dirfd = unix_dir_open(c->path, &c->name, err)) < 0)
		goto fail;
	snprintf(tmp, sizeof tmp, "%.80s.%d", c->name, (int)getpid());
	snprintf(tmp_path, sizeof tmp_path, "%.*s%s", (int)(c->name - c->path), c->path, tmp);
	if (unix_addr_at(&ua, c->path, c->dirfd, c->name, err) != 0 ||
	    unix_addr_at(&tua, tmp_path, c->dirfd, tmp, err) != 0 || clear_old(c, &ua, err) != 0)
		goto fail;
	/* Bound under a temporary name, given its exact mode, then renamed into place: no
	 * client ever finds it with another mode, and no process-wide umask is touched while
	 * other threads run. The mode set on the socket before bind() caps what bind() creates
	 * (that, less the umask), so the file never exists with a wider one. */
	unlinkat(c->dirfd, tmp, 0); /* a crash's leftover of this very pid */
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || fchmod(c->fd, SOCKET_MODE) != 0 ||
	    bind(c->fd, (struct sockaddr *)&tua.sa, tua.len) != 0) {
		gw_errf(err, "control_socket: cannot listen on %s: %s", c->path, strerror(errno));
		goto fail;
	}
	bound = 1;
	if ((mode = set_mode(c, tmp, err)) < 0)
		goto fail;
	if (listen(c->fd, 8) != 0 || renameat(c->dirfd, tmp, c->dirfd, c->name) != 0) {
		gw_errf(err, "control_socket: cannot listen on %s: %s", c->path, strerror(errno));
		goto fail;
	}
	bound = 0;
	int rc = gw_thread_start(&c->thread, "control", run, c);
	if (rc != 0) {
		unlinkat(c->dirfd, c->name, 0);
		gw_errf(err, "control: cannot start thread: %s", strerror(rc));
		goto fail;
	}
	c->started = 1;
	if (mode == SOCKET_MODE)
		LOG_I(log, "control", "pause/resume on %s (mode %04o)", c->path, mode);
	else
		LOG_W(log, "control",
		      "pause/resume on %s with mode %04o, not %04o: /proc is not mounted, so the "
		      "mode cannot be set without following a symlink; the umask decided",
		      c->path, mode, SOCKET_MODE);
	*out = c;
	return 0;
fail:
	if (bound) {
		/* only what we bound: a name that is no longer our socket is left alone */
		struct stat sb;
		if (fstatat(c->dirfd, tmp, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(sb.st_mode))
			unlinkat(c->dirfd, tmp, 0);
	}
	if (c->fd >= 0)
		close(c->fd);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->path);
	free(c);
	return -1;
}

void control_stop(struct control *c)
{
	if (!c || atomic_exchange(&c->stop, 1))
		return;
	shutdown(c->fd, SHUT_RDWR); /* ends the blocked accept() */
}

void control_free(struct control *c)
{
	if (!c)
		return;
	control_stop(c);
	if (c->started)
		pthread_join(c->thread, NULL);
	close(c->fd);
	unlinkat(c->dirfd, c->name, 0);
	close(c->dirfd);
	free(c->path);
	free(c);
}
