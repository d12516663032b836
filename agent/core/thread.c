/*
 * Thread start, monotonic condition variables and giving back a sleeping thread's stack
 * pages (see thread.h). The signal mask is set around pthread_create() because a new
 * thread inherits its creator's mask; the creator's own mask is restored at once.
 */
#include "core/thread.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* What the new thread needs before it runs its function: its name is set by the thread
 * itself, first thing, so nothing it does (or a test reading its name) can run before. */
struct start {
	void *(*fn)(void *);
	void *arg;
	char name[16]; /* the kernel's limit, NUL included */
};

static void *named(void *p)
{
	struct start st = *(struct start *)p;
	free(p);
	if (st.name[0])
		pthread_setname_np(pthread_self(), st.name); /* a courtesy: ignore failure */
	return st.fn(st.arg);
}

/* attr NULL: glibc's stack */
static int start(pthread_t *thread, const pthread_attr_t *attr, const char *name,
                 void *(*fn)(void *), void *arg)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
	struct start *st = calloc(1, sizeof *st);
	if (!st)
		return ENOMEM;
	st->fn = fn;
	st->arg = arg;
	snprintf(st->name, sizeof st->name, "%s", name ? name : "");
	sigset_t all, old;
	sigfillset(&all);
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(&all, faults[i]);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(thread, attr, named, st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		free(st);
	return rc;
}

int gw_thread_start(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg)
{
	return start(thread, NULL, name, fn, arg);
}

int gw_thread_start_own(struct gw_thread_own *t, size_t size, const char *name, void *(*fn)(void *),
                        void *arg)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size = (size + page - 1) / page * page;
	t->map_size = size + page; /* the guard page below the stack */
	t->map = mmap(NULL, t->map_size, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (t->map == MAP_FAILED) {
		t->map = NULL;
		return errno;
	}
	pthread_attr_t attr;
	int rc = mprotect(t->map, page, PROT_NONE) != 0 ? errno : pthread_attr_init(&attr);
	if (rc == 0) {
		rc = pthread_attr_setstack(&attr, (char *)t->map + page, size);
		if (rc == 0)
			rc = start(&t->thread, &attr, name, fn, arg);
		pthread_attr_destroy(&attr);
	}
	if (rc != 0) {
		munmap(t->map, t->map_size);
		t->map = NULL;
	}
	return rc;
}

void gw_thread_join_unmap(struct gw_thread_own *t)
{
	if (!t->map)
		return;
	/* the join returns once the kernel is done with the stack (CLONE_CHILD_CLEARTID) */
	pthread_join(t->thread, NULL);
	munmap(t->map, t->map_size);
	t->map = NULL;
}

/* What stays below this function's frame: madvise()'s own frame (the calls before it have
 * returned; nothing below the current frame is live; glibc's madvise() is a bare system
 * call, and no sanitizer intercepts it), with room to spare. Not a whole page: the page
 * below the caller's wait, touched by deeper work before, would stay dirty for nothing. */
#define SHED_KEEP ((uintptr_t)1024)

/* noinline: `here` must be a frame of its own, below the caller's, not merged into it. */
__attribute__((noinline)) void gw_thread_shed_stack(void)
{
	pthread_attr_t at;
	if (pthread_getattr_np(pthread_self(), &at) != 0)
		return;
	void *lowest;
	size_t size;
	int rc = pthread_attr_getstack(&at, &lowest, &size);
	pthread_attr_destroy(&at);
	long ps = sysconf(_SC_PAGESIZE);
	if (rc != 0 || ps <= 0)
		return;
	const uintptr_t page = (uintptr_t)ps;
	volatile char here = 0;
	uintptr_t top = (uintptr_t)&here;
	if (top < SHED_KEEP)
		return;
	/* [lowest, top - SHED_KEEP) rounded inwards to whole pages; the main thread's stack
	 * grows on demand, so part of that range may be unmapped: madvise() still applies to
	 * what is mapped (and says ENOMEM, which changes nothing here) */
	uintptr_t from = ((uintptr_t)lowest + page - 1) & ~(page - 1);
	uintptr_t to = (top - SHED_KEEP) & ~(page - 1);
	if (to > from)
		(void)madvise((void *)from, to - from, MADV_DONTNEED);
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

void gw_thread_background(void)
{
	/* Linux keeps a nice value per thread (setpriority on the thread id); the standard
	 * has none, so this is best effort and failure only means the default priority. */
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
}
