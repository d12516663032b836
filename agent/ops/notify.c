/*
 * systemd notification (see notify.h). The thread sleeps on its own condition variable
 * (monotonic clock) so notify_free() ends it at once; everything it judges comes from a
 * status view, the same one /healthz and /status read.
 */
#include "ops/notify.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/thread.h"

/* Until ready the thread looks every 100 ms (start-up only). Once ready, with no systemd
 * socket there is nothing left to tell: the thread ends and says so (notify_on_end()), so
 * main joins it at once and its stack, our own mapping, goes back (glibc would keep a
 * stack of its own allocation, dirty, in its cache). Under systemd it wakes for the watchdog ping
 * (only if systemd asked for one) and otherwise refreshes STATUS= every 30 s. Idle means
 * asleep: no 1 s tick. */
#define POLL_UNTIL_READY_MS 100
#define STATUS_REFRESH_MS   30000

struct notifier {
	struct status_sources *src;
	struct gw_log *log;
	char *socket_name;   /* NULL: not run by systemd (or not Type=notify) */
	int64_t watchdog_ms; /* ping interval, -1: none */

	struct gw_thread_own thread; /* its stack goes back once it ended and is reaped */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop;                  /* under mu */
	int ended;                 /* under mu: the thread returned on its own */
	void (*on_end)(void *arg); /* under mu: told once it did (notify_on_end()) */
	void *on_end_arg;
	atomic_int ready;
	char status[256]; /* the last STATUS= sent */
};

int notify_send(const char *socket_name, const char *msg, struct gw_err *err)
{
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	size_t n = strlen(socket_name);
	if (n < 2 || n >= sizeof sa.sun_path || (socket_name[0] != '/' && socket_name[0] != '@'))
		return gw_errf(err,
		               "NOTIFY_SOCKET '%.200s': not an absolute path or @abstract name",
		               socket_name);
	memcpy(sa.sun_path, socket_name, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return gw_errf(err, "NOTIFY_SOCKET %s: socket: %s", socket_name, strerror(errno));
	ssize_t sent = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	int e = errno;
	close(fd);
	if (sent < 0)
		return gw_errf(err, "NOTIFY_SOCKET %s: %s", socket_name, strerror(e));
	return 0;
}

int64_t notify_watchdog_interval_ms(const char *watchdog_usec, const char *watchdog_pid, pid_t self)
{
	if (!watchdog_usec || !*watchdog_usec)
		return -1;
	if (watchdog_pid && *watchdog_pid) {
		char *end;
		errno = 0;
		long long pid = strtoll(watchdog_pid, &end, 10);
		if (errno || *end || pid != (long long)self)
			return -1;
	}
	char *end;
	errno = 0;
	unsigned long long usec = strtoull(watchdog_usec, &end, 10);
	if (errno || *end || usec == 0 || watchdog_usec[0] == '-')
		return -1;
	int64_t ms = (int64_t)(usec / 2000); /* half the timeout, in ms */
	return ms > 0 ? ms : 1;
}

/* Send to systemd if we have a socket; a failure is logged at debug level only, since
 * systemd may simply not care (e.g. the unit is not Type=notify). */
static void tell(struct notifier *n, const char *msg)
{
	if (!n->socket_name)
		return;
	struct gw_err err = {0};
	if (notify_send(n->socket_name, msg, &err) != 0)
		LOG_D(n->log, "notify", "%s", err.msg);
}

/* Sleep up to ms (< 0: no sleep, the thread ends) or until stopped; 1 to end. */
static int nap(struct notifier *n, int64_t ms)
{
	if (ms < 0)
		return 1;
	pthread_mutex_lock(&n->mu);
	struct timespec until = gw_mono_deadline(ms);
	while (!n->stop && pthread_cond_timedwait(&n->cv, &n->mu, &until) != ETIMEDOUT)
		;
	int stop = n->stop;
	pthread_mutex_unlock(&n->mu);
	return stop;
}

/* How long to sleep (-1: nothing left to do): see POLL_UNTIL_READY_MS. */
static int64_t next_wait(struct notifier *n, int64_t next_ping)
{
	if (atomic_load(&n->ready) && !n->socket_name)
		return -1;
	int64_t wait = atomic_load(&n->ready) ? STATUS_REFRESH_MS : POLL_UNTIL_READY_MS;
	if (n->watchdog_ms > 0) {
		int64_t due = next_ping - gw_mono_ms();
		if (due < wait)
			wait = due < 1 ? 1 : due;
	}
	return wait;
}

static void *run(void *arg)
{
	struct notifier *n = arg;
	int64_t next_ping = gw_mono_ms();
	int64_t last_wait_log = gw_mono_ms();
	char msg[400], summary[256];
	struct gw_err why;
	int trim = 0;
	do {
		struct status_view v;
		struct gw_err err = {0};
		int64_t now = gw_mono_ms();
		if (status_view_take(n->src, &v, &err) != 0) {
			LOG_W(n->log, "notify", "%s", err.msg);
			continue;
		}
		status_summary(&v, summary, sizeof summary);
		if (!atomic_load(&n->ready) && status_ready(&v, &why)) {
			atomic_store(&n->ready, 1);
			LOG_I(n->log, "notify", "ready: %s", summary);
			trim = 1;
			snprintf(msg, sizeof msg, "READY=1\nSTATUS=%s", summary);
			tell(n, msg);
			snprintf(n->status, sizeof n->status, "%s", summary);
		} else if (!atomic_load(&n->ready) && now - last_wait_log >= 30000) {
			LOG_I(n->log, "notify", "not ready yet: %s", why.msg);
			last_wait_log = now;
		}
		if (strcmp(summary, n->status) != 0) {
			snprintf(msg, sizeof msg, "STATUS=%s", summary);
			tell(n, msg);
			snprintf(n->status, sizeof n->status, "%s", summary);
		}
		/* Pinging proves this thread, the store and the dispatcher's status lock are
		 * not wedged (the view took both) and the dispatcher thread still runs. */
		if (n->watchdog_ms > 0 && now >= next_ping) {
			/* held back while the dispatcher is dead (systemd then restarts us); the
			 * next look is a whole interval away either way, never a 1 ms spin */
			if (v.have_dispatch && v.dispatch.alive)
				tell(n, "WATCHDOG=1");
			next_ping = now + n->watchdog_ms;
		}
		status_view_free(&v);
		if (trim) {
			/* The start-up is over (every group held and delivered): the whole free
			 * pages its temporaries left inside the heap (and in this thread's arena,
			 * the view's) go back to the kernel, or they stay dirty, private memory,
			 * for as long as the agent idles. */
			malloc_trim(0);
			trim = 0;
		}
	} while (!nap(n, next_wait(n, next_ping)));
	pthread_mutex_lock(&n->mu);
	n->ended = 1;
	void (*fn)(void *) = n->stop ? NULL : n->on_end; /* stopped: notify_free() joins */
	void *fn_arg = n->on_end_arg;
	pthread_mutex_unlock(&n->mu);
	if (fn)
		fn(fn_arg);
	return NULL;
}

int notify_start(struct notifier **out, struct status_sources *src, struct gw_err *err)
{
	struct notifier *n = calloc(1, sizeof *n);
	if (!n)
		return gw_errf(err, "notify: out of memory");
	n->src = src;
	n->log = src->log;
	const char *sock = getenv("NOTIFY_SOCKET");
	if (sock && *sock) {
		n->socket_name = strdup(sock);
		if (!n->socket_name) {
			free(n);
			return gw_errf(err, "notify: out of memory");
		}
	}
	n->watchdog_ms =
	    notify_watchdog_interval_ms(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid());
	if (!n->socket_name)
		n->watchdog_ms = -1;
	atomic_init(&n->ready, 0);
	pthread_mutex_init(&n->mu, NULL);
	gw_cond_init_mono(&n->cv);
	if (n->socket_name)
		LOG_D(n->log, "notify", "systemd notify socket %s, watchdog ping every %lld ms",
		      n->socket_name, (long long)n->watchdog_ms);
	int rc = gw_thread_start_own(&n->thread, GW_THREAD_OWN_STACK, "notify", run, n);
	if (rc != 0) {
		pthread_cond_destroy(&n->cv);
		pthread_mutex_destroy(&n->mu);
		free(n->socket_name);
		free(n);
		return gw_errf(err, "notify: cannot start thread: %s", strerror(rc));
	}
	*out = n;
	return 0;
}

void notify_stop(struct notifier *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	int first = !n->stop;
	n->stop = 1;
	pthread_cond_signal(&n->cv);
	pthread_mutex_unlock(&n->mu);
	if (first)
		tell(n, "STOPPING=1\nSTATUS=stopping");
}

void notify_free(struct notifier *n)
{
	if (!n)
		return;
	notify_stop(n);
	gw_thread_join_unmap(&n->thread);
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n->socket_name);
	free(n);
}

void notify_on_end(struct notifier *n, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&n->mu);
	n->on_end = fn;
	n->on_end_arg = arg;
	int ended = n->ended;
	pthread_mutex_unlock(&n->mu);
	if (ended && fn)
		fn(arg);
}

void notify_reap(struct notifier *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	int ended = n->ended;
	pthread_mutex_unlock(&n->mu);
	if (ended)
		gw_thread_join_unmap(&n->thread);
}

int notify_is_ready(struct notifier *n)
{
	return n && atomic_load(&n->ready);
}
