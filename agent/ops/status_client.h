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
 * (main exits 1). The configuration's way is the socket: a terminal on the host uses the
 * host's socket.
 */
int status_client_show(const struct cfg *cfg, FILE *out, struct gw_err *err);

/* The same without a configuration (`gwsyncd --status ADDR`): `addr` is a control socket's
 * path, or the status endpoint's address (HOST:PORT, [IPv6]:PORT, an http:// or https://
 * URL; ops/status_http.h says how the two are told apart), asked with GET /status and
 * /history. Errors name `addr` (its base URL for the endpoint). */
int status_client_show_at(const char *addr, FILE *out, struct gw_err *err);

#endif
