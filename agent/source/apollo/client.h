/*
 * The Apollo source's requests to the config services (over the shared HTTP transport,
 * curl_http.h: one keep-alive connection per service, TLS, timeouts, interruptible): the
 * notification long poll, the configs read, and the meta service's discovery. Every
 * request carries the access-key signature when a secret is configured (sign.h), computed
 * over the path as sent, the base URL's own path included. What an answer means (200, 304,
 * 404, 401) is the caller's: replies come back whatever their status.
 *
 * Services: the configured servers, or, with a meta server, the ones it lists (asked again
 * by apollo_client_discover after a failed round). One is in use at a time; a failure moves
 * to the next.
 *
 * Threads: one thread calls everything but apollo_client_interrupt().
 */
#ifndef GW_APOLLO_CLIENT_H
#define GW_APOLLO_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "source/apollo/config.h"
#include "source/curl_http.h"

struct apollo_client;

int apollo_client_open(struct apollo_client **out, const struct cfg *cfg,
                       const struct apollo_config *ac, struct gw_err *err);
void apollo_client_close(struct apollo_client *c);
/* Every request, now and later, ends at once with SYNC_STOPPED. Thread-safe. */
void apollo_client_interrupt(struct apollo_client *c);

/* With a meta server: ask it for the config services and use those (the configured
 * servers stay the fallback). 0, or -1 with err naming the meta server. Without one: 0. */
int apollo_client_discover(struct apollo_client *c, struct gw_err *err);

/* The service in use, and how many there are. */
const char *apollo_client_server(const struct apollo_client *c);
size_t apollo_client_count(const struct apollo_client *c);
/* Use the next service. */
void apollo_client_next(struct apollo_client *c);

/* GET /notifications/v2 for the namespace at notification id `id`, held by the service.
 * 0 with rep (any status), -1 with err. */
int apollo_client_notifications(struct apollo_client *c, int64_t id, struct http_reply *rep,
                                struct gw_err *err);
/* GET /configs/{appId}/{cluster}/{namespace}[?releaseKey=]. release_key NULL: the whole
 * release whatever is held. 0 with rep (any status), -1 with err. */
int apollo_client_configs(struct apollo_client *c, const char *release_key, struct http_reply *rep,
                          struct gw_err *err);
/* Give a reply's buffer back to the service's connection. */
void apollo_client_recycle(struct apollo_client *c, struct http_reply *rep);

/* The notifications request's path and query for id (caller frees), for tests. */
char *apollo_notifications_path(const char *app_id, const char *cluster, const char *namespace_name,
                                int64_t id);
/* The configs request's path and query (caller frees). */
char *apollo_configs_path(const char *app_id, const char *cluster, const char *namespace_name,
                          const char *release_key);

#endif
