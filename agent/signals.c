/*
 * The signal thread (see signals.h). It owns no agent state: it flips a flag, calls the
 * one hook main registered, and wakes main. It runs before the configuration is read (the
 * log comes later, signals_set_log()), so a stop during start-up is taken at once and
 * acted on by main at its next step. Shutdown sends the thread a blocked signal of
 * one of the handled signals with pthread_kill() so its sigwait() returns.
 */
#include "signals.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"

struct signals {
	struct gw_log *log;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_sig; /* the signal that stopped us, -1 for an internal shutdown */
	int stopping;
	int quit; /* shutdown requested: the thread exits */
	void (*hook)(void *);
	void *hook_arg;
};

static void handled(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
}

void signals_block(void)
{
	sigset_t set;
	handled(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a closed admin socket must not kill us */
}

static void *signal_main(void *arg)
{
	struct signals *s = arg;
	sigset_t set;
	handled(&set);
	for (;;) {
		int sig = 0;
		if (sigwait(&set, &sig) != 0)
			continue;
		pthread_mutex_lock(&s->mu);
		int quit = s->quit;
		struct gw_log *log = s->log;
		pthread_mutex_unlock(&s->mu);
		if (quit)
			return NULL;
		if (sig == SIGHUP) {
			struct gw_err err = {0};
			if (!log)
				continue; /* start-up: no log file is open yet */
			if (gw_log_reopen(log, &err) != 0)
				LOG_E(log, "main", "SIGHUP: %s", err.msg);
			else
				LOG_I(log, "main", "SIGHUP: log reopened");
			continue;
		}
		const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
		if (log)
			LOG_I(log, "main", "%s received, stopping", name);
		else
			fprintf(stderr, "gwsyncd: %s received during start-up, stopping\n", name);
		pthread_mutex_lock(&s->mu);
		s->stopping = 1;
		s->stop_sig = sig;
		void (*hook)(void *) = s->hook;
		void *hook_arg = s->hook_arg;
		pthread_cond_broadcast(&s->cv);
		/* the hook only sets flags and wakes transfers: safe under our lock */
		if (hook)
			hook(hook_arg);
		pthread_mutex_unlock(&s->mu);
	}
}

int signals_start(struct signals **out, struct gw_log *log, struct gw_err *err)
{
	struct signals *s = calloc(1, sizeof *s);
	if (!s)
		return gw_errf(err, "signals: out of memory");
	s->log = log;
	pthread_mutex_init(&s->mu, NULL);
	gw_cond_init_mono(&s->cv);
	int rc = gw_thread_start(&s->thread, "signals", signal_main, s);
	if (rc != 0) {
		free(s);
		return gw_errf(err, "signals: cannot start thread: %s", strerror(rc));
	}
	*out = s;
	return 0;
}

void signals_set_log(struct signals *s, struct gw_log *log)
{
	pthread_mutex_lock(&s->mu);
	s->log = log;
	pthread_mutex_unlock(&s->mu);
}

void signals_on_stop(struct signals *s, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&s->mu);
	s->hook = fn;
	s->hook_arg = arg;
	if (s->stopping && fn)
		fn(arg);
	pthread_mutex_unlock(&s->mu);
}

int signals_stopping(struct signals *s)
{
	pthread_mutex_lock(&s->mu);
	int r = s->stopping;
	pthread_mutex_unlock(&s->mu);
	return r;
}

int signals_wait(struct signals *s)
{
	pthread_mutex_lock(&s->mu);
	while (!s->stopping)
		pthread_cond_wait(&s->cv, &s->mu);
	int sig = s->stop_sig > 0 ? s->stop_sig : 0;
	pthread_mutex_unlock(&s->mu);
	return sig;
}

void signals_stop(struct signals *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	s->stopping = 1;
	if (!s->stop_sig)
		s->stop_sig = -1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_kill(s->thread, SIGTERM);
}

void signals_free(struct signals *s)
{
	if (!s)
		return;
	signals_stop(s);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
