/*
 * The TLS options of a libcurl handle from a `tls:` section (CA, client certificate and
 * key, insecure_skip_verify), shared by every source that speaks HTTP through libcurl
 * (long-polling, the etcd gateway), so they read the same keys the same way.
 */
#ifndef GW_CURL_TLS_H
#define GW_CURL_TLS_H

#include <curl/curl.h>

#include "config/config.h"

/* 0, or -1 if libcurl refused an option (built without TLS support). */
int source_curl_tls(CURL *e, const struct cfg_tls *tls);

#endif
