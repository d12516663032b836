/*
 * What the config service answers, parsed and checked before anything is applied (a bad
 * reply changes nothing: the last good release stays):
 *  - /notifications/v2 200: [{"namespaceName","notificationId","messages":{...}}], the
 *    namespaces with a release newer than the ids the client sent (NotificationControllerV2);
 *  - /configs/{appId}/{cluster}/{namespace} 200: {"appId","cluster","namespaceName",
 *    "configurations":{key: value},"releaseKey"} (ConfigController, ApolloConfig); with the
 *    server's incremental option on and a known releaseKey sent, "configSyncType":
 *    "IncrementalSync" and "configurationChanges":[{"key","newValue",
 *    "configurationChangeType":"ADDED"|"MODIFIED"|"DELETED"}] instead of configurations
 *    (checked here, applied by diff.h's apollo_apply_changes at the cost of what changed);
 *  - the meta service's /services/config: [{"appName","instanceId","homepageUrl"}].
 * jansson reads the JSON: invalid UTF-8, duplicate keys and nesting beyond its depth limit
 * are refused.
 */
#ifndef GW_APOLLO_REPLY_H
#define GW_APOLLO_REPLY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/*
 * The notification id the reply gives `namespace_name`. 1 with *id set, 0 when the reply
 * does not name it (another namespace changed), -1 with err (the reply is not a list of
 * notifications).
 */
int apollo_parse_notifications(const char *body, size_t len, const char *namespace_name,
                               int64_t *id, struct gw_err *err);

struct apollo_release {
	json_t *configurations; /* a full reply: key -> string, the whole release; else NULL */
	json_t *changes;        /* an incremental reply: its configurationChanges, each entry
	                         * checked; else NULL */
	char *release_key;      /* owned */
};

/* A configs reply: 0 with *out filled (configurations or changes), -1 with err. */
int apollo_parse_release(const char *body, size_t len, struct apollo_release *out,
                         struct gw_err *err);
void apollo_release_free(struct apollo_release *r);

/* The homepageUrls of a meta service reply, each without trailing '/' (an array of
 * strings the caller frees with apollo_urls_free). 0 with at least one URL, -1 with err. */
int apollo_parse_services(const char *body, size_t len, char ***urls, size_t *n,
                          struct gw_err *err);
void apollo_urls_free(char **urls, size_t n);

#endif
