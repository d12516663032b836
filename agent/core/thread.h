/*
 * Threads and waits, the same way everywhere in the agent. Every thread starts with the
 * asynchronous signals blocked, so SIGTERM/SIGINT/SIGHUP reach only the thread that
 * waits for them (signals.h), whatever the creating thread's mask is. Every condition
 * variable that is waited on with a deadline runs on the monotonic clock, so an NTP step
 * neither ends a wait early nor stretches it (deadlines come from gw_mono_deadline()).
 *
 * Every part that owns a thread has the same lifecycle:
 *   X_start(&x, ...)  allocate and start the thread; on failure nothing is left behind;
 *   X_stop(x)         ask it to stop: returns at once, idempotent, thread-safe, NULL-safe;
 *   X_free(x)         stop if not yet asked, wait for the thread, free; NULL-safe.
 * Stopping several parts before freeing any ends them in parallel (the pollers do this).
 */
#ifndef GW_THREAD_H
#define GW_THREAD_H

#include <pthread.h>

/* pthread_create() with every asynchronous signal blocked in the new thread (fault
 * signals stay open, so crashes still reach sanitizers and core dumps), named `name` (at
 * most 15 bytes: "poll-0", "dispatch", "snapshot"...) so `top -H`, `ps -L` and
 * /proc/PID/task/ tell the agent's threads apart. 0 or an errno. */
int gw_thread_start(pthread_t *thread, const char *name, void *(*fn)(void *), void *arg);

/* A thread whose stack goes back to the kernel when it ends: glibc keeps the stacks of
 * ended threads in a cache for the next pthread_create(), their touched pages still dirty,
 * private memory. For a thread that ends while the agent lives on (the signal thread once
 * start-up is over). The stack is `size` bytes of our own mapping (a guard page below it;
 * pages cost only once touched), unmapped by gw_thread_join_unmap(). */
/* glibc's default stack size: only the touched pages cost memory, and ThreadSanitizer
 * puts ~900 KiB of static TLS in a thread's stack, so a small one fails under it. */
#define GW_THREAD_OWN_STACK ((size_t)8 << 20)
struct gw_thread_own {
	pthread_t thread;
	void *map;
	size_t map_size;
};
int gw_thread_start_own(struct gw_thread_own *t, size_t size, const char *name, void *(*fn)(void *),
                        void *arg);
/* pthread_join(), then the stack is unmapped. Once only. */
void gw_thread_join_unmap(struct gw_thread_own *t);

/* The calling thread does background work (the snapshot writer): the lowest priority
 * (nice 19), so on a machine with two cores it never takes one from polling and delivery;
 * it still runs whenever they do not need the CPU. */
void gw_thread_background(void);

/* The calling thread is about to sleep for long (the main thread once everything runs, a
 * poller before a held poll): give back the pages of its stack below the current frame.
 * The kernel zero-fills them again if the thread goes that deep once more. Each page a
 * thread has touched once (a start-up sync, a fetch and its parse, a delivery) otherwise
 * stays dirty, private memory, for the life of the process (issue 30 item 9). Best effort:
 * a failure changes nothing but the memory. */
void gw_thread_shed_stack(void);

/* pthread_cond_init() on CLOCK_MONOTONIC. 0 or an errno. */
int gw_cond_init_mono(pthread_cond_t *cv);

#endif
