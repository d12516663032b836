/*
 * The pause switch (SOFARegistry's "stop push" idea): while paused the agent keeps polling
 * and storing but delivers nothing to the subscribers, for admin upgrades and incidents.
 *
 * The state is the presence of the file STATE_DIR/paused, so it survives a restart, an
 * operator can see it with ls, and can start an agent paused by creating the file before
 * starting it. Pausing writes the file atomically (atomic_file.h); resuming removes it and
 * syncs the directory. The switch is the one owner of the state: the status endpoint
 * changes it, /status and /metrics read it, the dispatcher is told through
 * dispatcher_set_paused().
 */
#ifndef GW_PAUSE_H
#define GW_PAUSE_H

#include "core/error.h"
#include "core/log.h"

#define PAUSE_FILE "paused"

struct dispatcher;
struct pause_switch;

/* Read the state kept in state_dir: *paused 1 if STATE_DIR/paused exists. Only a failure
 * to look (other than "no such file") is an error. For --once and for pause_open(). */
int pause_load(const char *state_dir, int *paused, struct gw_err *err);

/* Load the state; the switch is not attached to a dispatcher yet. */
int pause_open(struct pause_switch **out, const char *state_dir, struct gw_log *log,
               struct gw_err *err);
void pause_close(struct pause_switch *ps);

/*
 * Hand the state to the dispatcher (dispatcher_set_paused() if paused) and remember it for
 * later changes. Call right after dispatcher_start(), before anything is in the store, so a
 * paused agent never delivers a first version. d may be NULL (no dispatcher: --once).
 */
void pause_attach(struct pause_switch *ps, struct dispatcher *d);

int pause_get(struct pause_switch *ps);

/*
 * Pause (1) or resume (0). The new state takes effect at once, in memory and in the
 * dispatcher, even if it cannot be recorded in state_dir: then *persisted is 0, err says
 * why and -1 is returned (the state would not survive a restart). *changed is 0 if the
 * switch was already in that state. `who` names the requester in the log line.
 */
int pause_set(struct pause_switch *ps, int paused, const char *who, int *changed, int *persisted,
              struct gw_err *err);

/* STATE_DIR/paused, for messages. */
const char *pause_path(const struct pause_switch *ps);

#endif
