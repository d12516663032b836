/*
 * The signal thread (see signals.h). It owns no agent state: it flips a flag, calls the
 * one hook main registered, and wakes main. It runs before the configuration is read (the
 * log comes later, signals_set_log()), so a stop during start-up is taken at once and
 * acted on by main at its next step. Once everything runs, main takes the signals itself
 * (signals_serve()): main has nothing else to do then, and the thread's stack, its own
 * mapping (gw_thread_start_own()), goes back to the kernel instead of staying dirty in
 * glibc's cache of stacks for as long as the agent idles. To end the thread, main sends
 * it SIGTERM with pthread_kill(): sigwaitinfo() tells that one (si_pid is our own process,
 * which never signals itself otherwise) from a SIGTERM sent from outside, so a real stop
 * arriving at that moment is still taken, by whichever of the two waits first; nothing is
 * lost while they change hands: the signals stay blocked in every thread and wait,
 * pending, for main.
 */
#include "signals.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/thread.h"

struct signals {
	struct gw_log *log;
	struct gw_thread_own thread; /* its stack goes back when it ends */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int stop_sig; /* the signal that stopped us, -1 for an internal shutdown */
	int stopping;
	int quit; /* shutdown requested: the thread exits */
	void (*hook)(void *);
	void *hook_arg;
	pthread_t main;       /* the thread that started us, and serves at the end */
	void (*wake)(void *); /* under mu: signals_on_wake() */
	void *wake_arg;
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

/* Take one signal: 1 if it stops the agent (SIGTERM, SIGINT), 0 for SIGHUP. */
static int take(struct signals *s, int sig)
{
	pthread_mutex_lock(&s->mu);
	struct gw_log *log = s->log;
	pthread_mutex_unlock(&s->mu);
	if (sig == SIGHUP) {
		struct gw_err err = {0};
		if (!log)
			return 0; /* start-up: no log file is open yet */
		if (gw_log_reopen(log, &err) != 0)
			LOG_E(log, "main", "SIGHUP: %s", err.msg);
		else
			LOG_I(log, "main", "SIGHUP: log reopened");
		return 0;
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
	return 1;
}

/* Wait for one of the handled signals; fills *own when it is our own pthread_kill(). */
static int next_signal(int *own)
{
	sigset_t set;
	handled(&set);
	for (;;) {
		siginfo_t info;
		int sig = sigwaitinfo(&set, &info);
		if (sig < 0)
			continue; /* EINTR: a signal we do not take (e.g. SIGSTOP/SIGCONT) */
		/* si_code is SI_TKILL or SI_USER depending on the kernel: the sender tells */
		*own = info.si_pid == getpid();
		return sig;
	}
}

static void *signal_main(void *arg)
{
	struct signals *s = arg;
	for (;;) {
		int own = 0;
		int sig = next_signal(&own);
		pthread_mutex_lock(&s->mu);
		int quit = s->quit;
		pthread_mutex_unlock(&s->mu);
		if (quit && own)
			return NULL;
		take(s, sig);
	}
}

int signals_start(struct signals **out, struct gw_log *log, struct gw_err *err)
{
	struct signals *s = calloc(1, sizeof *s);
	if (!s)
		return gw_errf(err, "signals: out of memory");
	s->log = log;
	s->main = pthread_self();
	pthread_mutex_init(&s->mu, NULL);
	gw_cond_init_mono(&s->cv);
	int rc = gw_thread_start_own(&s->thread, GW_THREAD_OWN_STACK, "signals", signal_main, s);
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

/* Ask the thread to end and wait for it; only the thread that started it calls this. */
static void end_thread(struct signals *s)
{
	if (!s->thread.map)
		return;
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_mutex_unlock(&s->mu);
	pthread_kill(s->thread.thread, SIGTERM);
	gw_thread_join_unmap(&s->thread);
}

void signals_on_wake(struct signals *s, void (*fn)(void *arg), void *arg)
{
	pthread_mutex_lock(&s->mu);
	s->wake = fn;
	s->wake_arg = arg;
	pthread_mutex_unlock(&s->mu);
}

/* SIGHUP from our own process to main: it waits, pending, until main serves */
void signals_wake(struct signals *s)
{
	pthread_kill(s->main, SIGHUP);
}

int signals_serve(struct signals *s)
{
	end_thread(s);
	while (!signals_stopping(s)) {
		int own = 0;
		int sig = next_signal(&own);
		if (!own) {
			take(s, sig);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		void (*fn)(void *) = s->wake;
		void *arg = s->wake_arg;
		pthread_mutex_unlock(&s->mu);
		if (fn)
			fn(arg);
	}
	return signals_wait(s);
}

void signals_stop(struct signals *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	if (!s->stop_sig)
		s->stop_sig = -1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void signals_free(struct signals *s)
{
	if (!s)
		return;
	signals_stop(s);
	end_thread(s);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
