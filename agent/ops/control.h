/*
 * The control socket: pause and resume without exposing them on the network. A Unix stream
 * socket (control_socket, default STATE_DIR/control.sock) whose file permissions say who may
 * control the agent: the owner and its group (0660), checked by the kernel at connect().
 * `gwsyncd --pause` / `--resume` talk to it (ops/status_client.h); the HTTP status endpoint stays
 * read-only unless status.token is set.
 *
 * Protocol: the client sends one line, "pause", "resume" or "state"; the agent answers one
 * line of JSON, {"paused","changed","persisted","stateFile","error"?} (as POST /sync/pause
 * does), and closes. "status" (`gwsyncd --status`) is answered with one line of JSON too:
 * {"status": the /status document, "history": the last changes as /history has them}.
 * The requester is named in the log by its uid (SO_PEERCRED).
 */
#ifndef GW_CONTROL_H
#define GW_CONTROL_H

#include "core/error.h"
#include "core/log.h"
#include "ops/pause.h"
#include "ops/status_view.h"

struct control;

/* Bind the socket and start its thread ("control"). Refuses when another agent already
 * answers on the path; removes a stale socket file left by a crash. 0, or -1 with err. */
int control_start(struct control **out, const char *path, struct pause_switch *ps,
                  struct gw_log *log, struct gw_err *err);

/* Answer "status" from `src` (which must outlive the control socket); until then "status" is
 * refused. NULL c is fine. */
void control_set_status(struct control *c, struct status_sources *src);

/* Ask the thread to stop (returns at once; NULL-safe). */
void control_stop(struct control *c);

/* Stop, wait, remove the socket file, free (NULL-safe). */
void control_free(struct control *c);

#endif
