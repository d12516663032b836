/*
 * Signals as events. SIGTERM, SIGINT and SIGHUP are blocked in every thread (main blocks
 * them before creating any) and taken with sigwaitinfo(), so no code runs in a signal
 * handler: by a thread of their own during start-up, then by main itself once everything
 * runs (signals_serve()). SIGHUP reopens the log file; SIGTERM/SIGINT mark the agent as stopping,
 * call the registered interrupt hook (ending a start-up fetch that waits on a slow admin)
 * and wake signals_wait().
 */
#ifndef GW_SIGNALS_H
#define GW_SIGNALS_H

#include "core/error.h"
#include "core/log.h"

struct signals;

/* Blocks the signals in the calling thread (do it before any other thread exists). */
void signals_block(void);

/* Start the thread. `log` may be NULL: main starts it before the configuration is read, so
 * SIGTERM/SIGINT are taken at every moment of start-up (without a log, a stop is said on
 * stderr and SIGHUP is ignored), and hands the log over once it is open. */
int signals_start(struct signals **out, struct gw_log *log, struct gw_err *err);
void signals_set_log(struct signals *s, struct gw_log *log);

/* Call fn(arg) on stop (at once if already stopping). fn NULL clears. Thread-safe. */
void signals_on_stop(struct signals *s, void (*fn)(void *arg), void *arg);

/* 1 once SIGTERM/SIGINT arrived. */
int signals_stopping(struct signals *s);

/* Block until SIGTERM/SIGINT (or signals_stop()); returns the signal number (0 if none). */
int signals_wait(struct signals *s);

/* For main once everything runs and it has nothing else to do: end the thread and take
 * the signals in the calling thread (SIGHUP as the thread does) until SIGTERM/SIGINT;
 * returns that signal number, at once if a stop came before. */
int signals_serve(struct signals *s);

/* A part whose thread ends while the agent runs (the notifier) has main join it:
 * signals_wake(), from any thread, makes signals_serve() call fn(arg) in main (at once if
 * main already serves, else once it does). */
void signals_on_wake(struct signals *s, void (*fn)(void *arg), void *arg);
void signals_wake(struct signals *s);

/* Wake signals_wait() as if a stop arrived; returns at once. */
void signals_stop(struct signals *s);
/* Stop, end the thread if it still runs, free. Only from main. NULL is fine. */
void signals_free(struct signals *s);

#endif
