/*
 * systemd's notify protocol without libsystemd: datagrams to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for an abstract socket).
 *
 *  - READY=1 once the agent is worth starting a gateway for: every configured group holds
 *    data (from an admin or the snapshot) and every subscriber has had it delivered, or,
 *    while paused, once it is stored (status_ready() in status_view.h);
 *  - WATCHDOG=1 every half of $WATCHDOG_USEC (when set and $WATCHDOG_PID, if set, is us),
 *    only while the dispatcher thread is alive and the store and dispatcher locks can be
 *    taken: a wedged agent stops pinging and systemd restarts it;
 *  - STATUS=<one line> whenever the summary changes (systemctl status shows it);
 *  - STOPPING=1 when shutdown begins.
 * A small thread of its own watches status views (10 times a second until ready, then for
 * the watchdog and every 30 s), so nothing else in the agent needs to know about systemd.
 * Without $NOTIFY_SOCKET the thread still runs until ready, logs that moment, and ends.
 */
#ifndef GW_NOTIFY_H
#define GW_NOTIFY_H

#include <stdint.h>
#include <sys/types.h>

#include "core/error.h"
#include "ops/status_view.h"

struct notifier;

/* Read the environment and start the thread. src must outlive the notifier. */
int notify_start(struct notifier **out, struct status_sources *src, struct gw_err *err);

/* Send STOPPING=1 (once) and ask the thread to stop; returns at once. NULL is fine. */
void notify_stop(struct notifier *n);
/* Stop, wait for the thread, free. NULL is fine. */
void notify_free(struct notifier *n);

/* Without a systemd socket the thread ends once ready: fn(arg) is called then, from that
 * thread (at once, from this one, if it already ended), to have the notifier's owner call
 * notify_reap(). Not called when the end came from notify_stop(). */
void notify_on_end(struct notifier *n, void (*fn)(void *arg), void *arg);
/* Join the thread if it ended on its own, giving its stack back; only from the thread that
 * frees the notifier. NULL is fine. */
void notify_reap(struct notifier *n);

/* 1 once READY=1 was sent (or would have been, without a socket). */
int notify_is_ready(struct notifier *n);

/* ---- the protocol's pieces, for tests */

/* Send one datagram to `socket_name` ("/run/...", or "@abstract"). */
int notify_send(const char *socket_name, const char *msg, struct gw_err *err);

/* The ping interval in ms from $WATCHDOG_USEC / $WATCHDOG_PID: half the timeout, or -1 when
 * no watchdog applies to process `self` (unset, unparsable, zero, or another pid). */
int64_t notify_watchdog_interval_ms(const char *watchdog_usec, const char *watchdog_pid,
                                    pid_t self);

#endif
