/*
 * `gwsyncd --pause` / `--resume`: ask the agent running with the same configuration file
 * to pause or resume delivery, through its status endpoint (POST /sync/pause or
 * /sync/resume at status.listen). The agent owns the switch and its state file; this only
 * asks, so two agents on one machine never fight over a file.
 */
#ifndef GW_STATUS_CLIENT_H
#define GW_STATUS_CLIENT_H

#include "config/config.h"
#include "core/error.h"

/*
 * Send the request and print what happened on stdout ("sync paused (agent at http://...;
 * state kept in /var/lib/gwsync/paused)"). -1 with err set if status.listen is not
 * configured, no agent answers, the agent refuses, or it changed the state but could not
 * record it in state_dir (main exits 1).
 */
int status_client_send(const struct cfg *cfg, int pause, struct gw_err *err);

#endif
