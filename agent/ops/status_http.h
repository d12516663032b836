/*
 * `gwsyncd --status ADDR` when ADDR is the status endpoint rather than the control socket
 * (issue 31): in a build tree, or from another host, the operator knows the address they
 * curl, not a socket path. What ADDR names is decided by its form alone, so no probing of
 * the network happens before the one request: an http:// or https:// URL, or HOST:PORT /
 * [IPv6]:PORT as status.listen writes it (ops/listen_addr.h), is the endpoint, unless a
 * file of that name exists or it holds a '/' (a socket path); anything else is a socket
 * path, as before.
 *
 * Over HTTP the client builds the document the control socket answers to "status"
 * (ops/control.c): {"status": GET /status, "history": GET /history?limit=N}, so
 * ops/status_text.h renders both the same. Both routes are read-only and need no token
 * (ops/status_routes.h), so none is sent.
 */
#ifndef GW_STATUS_HTTP_H
#define GW_STATUS_HTTP_H

#include <jansson.h>
#include <stddef.h>

#include "core/error.h"

#define STATUS_REPLY_MAX (16 * 1024 * 1024) /* a status with many subscribers and history */
#define STATUS_URL_MAX   1024               /* the endpoint's base URL, with its NUL */

/*
 * 1 when `addr` names the status endpoint, its base URL (no trailing '/') written to `url`;
 * 0 when it names a control socket; -1 with err for an endpoint address that cannot be used
 * (credentials, a query or fragment in the URL, too long). A wildcard HOST (0.0.0.0, [::])
 * is reached on its loopback, as `gwsyncd --pause` does.
 */
int status_addr_http(const char *addr, char url[STATUS_URL_MAX], struct gw_err *err);

/*
 * GET url/status and url/history (its last STATUS_TEXT_CHANGES changes) into
 * {"status": ..., "history": ... or null when the agent keeps none}. Short timeouts, no
 * proxy, no redirect. NULL with err naming `url` when no agent answers there, or it answers
 * something else than those documents.
 */
json_t *status_http_fetch(const char *url, struct gw_err *err);

#endif
