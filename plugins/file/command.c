/*
 * Command runner (see command.h). posix_spawn rather than fork: the agent is
 * multithreaded, and between fork() and exec() only async-signal-safe calls are allowed,
 * which rules out building an environment in the child. Everything the child needs (its
 * environment, its process group, a clean signal mask and default signal dispositions,
 * stdin from /dev/null, stdout and stderr into a pipe) is prepared before the spawn.
 *
 * Waiting polls the pipe (to capture output) and waitpid(WNOHANG) in short steps; a
 * command is rare (one per change or reload), so a few wake-ups per second cost nothing
 * and keep this free of SIGCHLD handlers, which belong to the host process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2, posix_spawn_file_actions_addclosefrom_np */
#endif
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define KILL_GRACE_MS 1000

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The agent's environment without the names `extra` sets, then `extra`. */
static char **build_env(const char *const *extra)
{
	size_t n_env = 0, n_extra = 0;
	while (environ && environ[n_env])
		n_env++;
	while (extra && extra[n_extra])
		n_extra++;
	char **env = calloc(n_env + n_extra + 1, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n_env; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t nlen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int replaced = 0;
		for (size_t j = 0; j < n_extra && !replaced; j++)
			replaced =
			    strncmp(extra[j], environ[i], nlen) == 0 && extra[j][nlen] == '=';
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < n_extra; j++)
		env[k++] = (char *)extra[j];
	env[k] = NULL;
	return env;
}

static void collect(int fd, struct command_result *r, int *open)
{
	char buf[4096];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n > 0) {
			size_t room = sizeof r->output - 1 - r->output_len;
			size_t take = (size_t)n < room ? (size_t)n : room;
			memcpy(r->output + r->output_len, buf, take);
			r->output_len += take;
			r->output[r->output_len] = '\0';
			if (take < (size_t)n)
				r->truncated = 1;
			continue;
		}
		if (n == 0)
			*open = 0;
		else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN && errno != EWOULDBLOCK)
			*open = 0;
		return;
	}
}

static void describe(struct command_result *r, int status)
{
	if (WIFEXITED(status)) {
		r->ok = WEXITSTATUS(status) == 0;
		snprintf(r->summary, sizeof r->summary, "exited with status %d",
		         WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		snprintf(r->summary, sizeof r->summary, "killed by signal %d (%s)",
		         WTERMSIG(status), strsignal(WTERMSIG(status)));
	} else {
		snprintf(r->summary, sizeof r->summary, "ended with wait status %d", status);
	}
}

/* Kill the command's process group: TERM, a grace period, then KILL. Reaps the child. */
static void kill_group(pid_t pid, int *status)
{
	kill(-pid, SIGTERM);
	int64_t until = mono_ms() + KILL_GRACE_MS;
	while (mono_ms() < until) {
		if (waitpid(pid, status, WNOHANG) == pid) {
			kill(-pid, SIGKILL); /* whatever it started in its group */
			return;
		}
		sleep_ms(10);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

static int spawn(const char *command, char **env, int wfd, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);

	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, wfd, 1);
	posix_spawn_file_actions_adddup2(&fa, wfd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* no agent socket leaks into it */
#endif

	/* A process group of its own (so a timeout kills everything it started), no blocked
	 * signals and default handlers for the signals a host daemon commonly ignores or
	 * catches: a shell started with SIGPIPE ignored misbehaves in pipelines. */
	sigset_t none, defaults;
	sigemptyset(&none);
	sigemptyset(&defaults);
	int sigs[] = {SIGPIPE, SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
	              SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset(&defaults, sigs[i]);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &defaults);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	                                  POSIX_SPAWN_SETSIGDEF);

	char *argv[] = {"sh", "-c", (char *)command, NULL};
	int rc = posix_spawn(pid, "/bin/sh", &fa, &at, argv, env);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

int command_run(const char *command, const char *const *extra, int64_t timeout_ms,
                struct command_result *r)
{
	memset(r, 0, sizeof *r);
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(r->summary, sizeof r->summary, "cannot create a pipe: %s",
		         strerror(errno));
		return -1;
	}
	char **env = build_env(extra);
	if (!env) {
		close(p[0]);
		close(p[1]);
		snprintf(r->summary, sizeof r->summary, "out of memory");
		return -1;
	}
	pid_t pid;
	int rc = spawn(command, env, p[1], &pid);
	free(env);
	close(p[1]);
	if (rc != 0) {
		close(p[0]);
		snprintf(r->summary, sizeof r->summary, "cannot run /bin/sh: %s", strerror(rc));
		return -1;
	}
	fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);

	int64_t deadline = mono_ms() + timeout_ms;
	int open = 1, status = 0;
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			describe(r, status);
			break;
		}
		if (w < 0 && errno != EINTR) {
			snprintf(r->summary, sizeof r->summary,
			         "cannot wait for it: %s (is SIGCHLD ignored by the host?)",
			         strerror(errno));
			break;
		}
		int64_t left = deadline - mono_ms();
		if (left <= 0) {
			kill_group(pid, &status);
			snprintf(r->summary, sizeof r->summary,
			         "timed out after %lld ms and was killed", (long long)timeout_ms);
			break;
		}
		int step = left < 20 ? (int)left : 20;
		if (open) {
			struct pollfd pfd = {.fd = p[0], .events = POLLIN};
			if (poll(&pfd, 1, step) > 0)
				collect(p[0], r, &open);
		} else {
			sleep_ms(step < 5 ? step : 5);
		}
	}
	if (open)
		collect(p[0], r, &open); /* what it wrote just before exiting */
	close(p[0]);
	return r->ok ? 0 : -1;
}

void command_last_line(const struct command_result *r, char *buf, size_t cap)
{
	size_t end = r->output_len;
	while (end > 0 && (r->output[end - 1] == '\n' || r->output[end - 1] == '\r' ||
	                   r->output[end - 1] == ' '))
		end--;
	size_t start = end;
	while (start > 0 && r->output[start - 1] != '\n')
		start--;
	size_t n = end - start;
	if (cap == 0)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, r->output + start, n);
	buf[n] = '\0';
}
