/*
 * The status endpoint (status.listen, off when absent): the routes of status_routes.h served
 * over HTTP/1.1 on one thread ("status"), within the limits of http_limits.h, so that no
 * number of idle or slow connections keeps a liveness probe out.
 *
 * Lifecycle (core/thread.h): status_server_start, status_server_stop (asks, returns at
 * once), status_server_free (stops, waits, frees).
 */
#ifndef GW_STATUS_SERVER_H
#define GW_STATUS_SERVER_H

#include "core/error.h"
#include "ops/status_view.h"

struct status_server;

/*
 * Bind cfg->status_listen exactly (a host name binds its first address that binds; [::] and
 * [::1] are IPv6 only) and start serving. src must outlive the server. With no
 * status.listen configured *out is NULL and 0 is returned. A bind failure is an error naming
 * the address ("status.listen 127.0.0.1:9196: Address already in use").
 */
int status_server_start(struct status_server **out, struct status_sources *src, struct gw_err *err);

/* Stop accepting and serving. NULL is fine. */
void status_server_stop(struct status_server *srv);

/* Stop, wait for the thread, close every connection and free. NULL is fine. */
void status_server_free(struct status_server *srv);

/* The address as bound, "127.0.0.1:9196" or "[::1]:9196". */
const char *status_server_address(const struct status_server *srv);

/* How many connections the endpoint holds at most (HTTP_MAX_CONNECTIONS unless the
 * open-files limit is too low; see http_limits.h). */
size_t status_server_max_connections(const struct status_server *srv);

#endif
