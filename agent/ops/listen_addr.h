/*
 * The status endpoint's address, "HOST:PORT" or "[IPv6]:PORT" as written in status.listen,
 * split once here so the server (which binds it) and `gwsyncd --pause` (which connects to
 * it) agree on what it means. The configuration parser has already checked its shape; this
 * still refuses anything malformed, since tests and other callers may hand it any text.
 */
#ifndef GW_LISTEN_ADDR_H
#define GW_LISTEN_ADDR_H

#include <stddef.h>

#include "core/error.h"

struct listen_addr {
	char host[256]; /* without brackets: "127.0.0.1", "::1", "localhost" */
	char port[8];   /* "9196" */
	int ipv6;       /* written in brackets */
};

int listen_addr_parse(const char *text, struct listen_addr *out, struct gw_err *err);

/*
 * The base URL a client uses to reach the endpoint: "http://127.0.0.1:9196",
 * "http://[::1]:9196". A wildcard address (0.0.0.0, [::]) is reached on its loopback.
 */
void listen_addr_url(const struct listen_addr *a, char *url, size_t cap);

#endif
