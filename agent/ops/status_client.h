/*
 * `gwsyncd --pause` / `--resume`: ask the agent running with the same configuration file
 * to pause or resume delivery, through its status endpoint (POST /sync/pause or
 * /sync/resume at status.listen). The agent owns the switch and its state file; this only
 * asks, so two agents on one machine never fight over a file.
 */
#ifndef GW_STATUS_CLIENT_H
#define GW_STATUS_CLIENT_H

#include <stdio.h>

#include "config/config.h"
#include "core/error.h"

/*
 * Send the request and print what happened on stdout ("sync paused (agent at http://...;
 * state kept in /var/lib/gwsync/paused)"). -1 with err set if status.listen is not
 * configured, no agent answers, the agent refuses, or it changed the state but could not
 * record it in state_dir (main exits 1).
 */
int status_client_send(const struct cfg *cfg, int pause, struct gw_err *err);

/*
 * `gwsyncd --status`: ask the agent on the control socket for its state and print it on
 * `out` (ops/status_text.h). -1 with err set when no agent answers there (no control socket
 * configured, no socket file, nobody listening, not allowed) or its answer is not a status
 * (main exits 1). Never over HTTP: a terminal on the host uses the host's socket.
 */
int status_client_show(const struct cfg *cfg, FILE *out, struct gw_err *err);

/* The same, asking the control socket at `socket_path` (`gwsyncd --status SOCKET`): no
 * configuration needed. */
int status_client_show_at(const char *socket_path, FILE *out, struct gw_err *err);

#endif
