/*
 * The control socket's server (see control.h). One thread blocks in accept(): idle, it
 * never wakes. control_stop() shuts the listening socket down, which ends a blocked accept()
 * at once on Linux. Each connection is answered in turn (they are rare and short: a pause is
 * one file write), with a receive timeout so a silent client cannot hold the thread.
 */
#include "ops/control.h"

#include <errno.h>
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

#include "core/atomic_file.h"
#include "core/thread.h"

/* The socket's mode: the agent's user and group may control it, nobody else. */
#define SOCKET_MODE 0660

struct control {
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct pause_switch *ps;
	struct gw_log *log;
	pthread_t thread;
	int started;
	atomic_int stop;
};

static int set_addr(struct sockaddr_un *sa, const char *path, struct gw_err *err)
{
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sa->sun_path)
		return gw_errf(err,
		               "control_socket: %s is too long for a Unix socket (at most %zu "
		               "bytes)",
		               path, sizeof sa->sun_path - 1);
	memcpy(sa->sun_path, path, strlen(path) + 1);
	return 0;
}

/* One request line ("pause", "resume", "state") into its answer. */
static char *answer(struct control *c, const char *line, const char *who)
{
	int paused = pause_get(c->ps), changed = 0, persisted = 1, rc = 0;
	struct gw_err err = {{0}};
	if (strcmp(line, "pause") == 0 || strcmp(line, "resume") == 0) {
		paused = strcmp(line, "pause") == 0;
		rc = pause_set(c->ps, paused, who, &changed, &persisted, &err);
	} else if (strcmp(line, "state") != 0) {
		json_t *doc =
		    json_pack("{s:s}", "error", "unknown request: send pause, resume or state");
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

static void serve(struct control *c, int fd)
{
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
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
		if (write(fd, text, tl) != (ssize_t)tl || write(fd, "\n", 1) != 1)
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
	}
	return NULL;
}

int control_start(struct control **out, const char *path, struct pause_switch *ps,
                  struct gw_log *log, struct gw_err *err)
{
	struct sockaddr_un sa;
	if (set_addr(&sa, path, err) != 0)
		return -1;
	/* Only ever replace a socket: a mistyped path must not delete a file. Another agent
	 * answering here keeps its socket; a socket nobody answers on is a crash's leftover. */
	struct stat sb;
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			return gw_errf(
			    err, "control_socket: %s exists and is not a socket; not touching it",
			    path);
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0)
			return gw_errf(err, "control_socket: cannot create a socket: %s",
			               strerror(errno));
		int rc = connect(probe, (struct sockaddr *)&sa, sizeof sa), e = errno;
		close(probe);
		if (rc == 0)
			return gw_errf(err, "control_socket: another agent answers on %s", path);
		if (e != ECONNREFUSED)
			return gw_errf(err, "control_socket: cannot check %s: %s", path,
			               strerror(e));
		unlink(path);
	}
	/* its directory (state_dir by default) may not exist yet on a first start */
	char dir[sizeof sa.sun_path], why[300];
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (make_dirs(dir, 0750, why, sizeof why) != 0)
			return gw_errf(err, "control_socket: %s", why);
	}

	struct control *c = calloc(1, sizeof *c);
	if (!c)
		return gw_errf(err, "control: out of memory");
	snprintf(c->path, sizeof c->path, "%s", path);
	c->ps = ps;
	c->log = log;
	atomic_init(&c->stop, 0);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* Bound under a temporary name, given its exact mode, then renamed into place: no
	 * client ever finds it with another mode, and no process-wide umask is touched while
	 * other threads run. */
	struct sockaddr_un tmp = sa;
	int n = snprintf(tmp.sun_path, sizeof tmp.sun_path, "%s.%d", path, (int)getpid());
	int rc = n < 0 || (size_t)n >= sizeof tmp.sun_path || c->fd < 0
	             ? -1
	             : bind(c->fd, (struct sockaddr *)&tmp, sizeof tmp);
	if (rc != 0 || chmod(tmp.sun_path, SOCKET_MODE) != 0 || listen(c->fd, 8) != 0 ||
	    rename(tmp.sun_path, path) != 0) {
		gw_errf(err, "control_socket: cannot listen on %s: %s", path,
		        n >= (int)sizeof tmp.sun_path ? "path too long" : strerror(errno));
		if (rc == 0)
			unlink(tmp.sun_path);
		if (c->fd >= 0)
			close(c->fd);
		free(c);
		return -1;
	}
	rc = gw_thread_start(&c->thread, "control", run, c);
	if (rc != 0) {
		close(c->fd);
		unlink(path);
		free(c);
		return gw_errf(err, "control: cannot start thread: %s", strerror(rc));
	}
	c->started = 1;
	LOG_I(log, "control", "pause/resume on %s (mode %04o)", path, SOCKET_MODE);
	*out = c;
	return 0;
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
	unlink(c->path);
	free(c);
}
