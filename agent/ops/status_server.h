/*
 * The status endpoint (status.listen, off when absent), served by libmicrohttpd on one
 * internal thread:
 *   GET  /healthz       200 "ok" | 503 and a one-line reason (status_view.h)
 *   GET  /status        the JSON document of status_json.h
 *   GET  /metrics       Prometheus text (metrics.h)
 *   POST /sync/pause    stop delivering to subscribers (pause.h); JSON reply
 *   POST /sync/resume   deliver again
 * Any other path is 404, another method on a known path 405 (with Allow). HEAD works where
 * GET does. A POST carrying an Origin header (a web browser on some page) is refused with
 * 403, so a page the operator happens to visit cannot pause the agent behind their back.
 *
 * Requests only read snapshots (status_view_take): the thread never waits on a plugin, a
 * poll or the disk, except for the pause file write on POST.
 */
#ifndef GW_STATUS_SERVER_H
#define GW_STATUS_SERVER_H

#include "core/error.h"
#include "ops/status_view.h"

struct status_server;

/*
 * Bind cfg->status_listen exactly (a host name binds its first address; [::] and [::1]
 * are IPv6 only) and start serving. src must outlive the server. With no status.listen
 * configured *out is NULL and 0 is returned. A bind failure is an error naming the
 * address ("status.listen 127.0.0.1:9196: Address already in use").
 */
int status_server_start(struct status_server **out, struct status_sources *src, struct gw_err *err);

/* Stop serving (requests in progress finish) and free. NULL is fine. */
void status_server_free(struct status_server *srv);

/* The address as bound, "127.0.0.1:9196" or "[::1]:9196". */
const char *status_server_address(const struct status_server *srv);

#endif
