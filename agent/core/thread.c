/*
 * Thread start and monotonic condition variables (see thread.h). The signal mask is set
 * around pthread_create() because a new thread inherits its creator's mask; the creator's
 * own mask is restored at once.
 */
#include "core/thread.h"

#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

int gw_thread_start(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
	sigset_t all, old;
	sigfillset(&all);
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(&all, faults[i]);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0 && name) {
		char short_name[16]; /* the kernel's limit, NUL included */
		snprintf(short_name, sizeof short_name, "%s", name);
		pthread_setname_np(*thread, short_name); /* a name is a courtesy: ignore failure */
	}
	return rc;
}

int gw_cond_init_mono(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc = pthread_condattr_init(&ca);
	if (rc != 0)
		return rc;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return rc;
}
