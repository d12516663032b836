/*
 * The GET /status document: everything an operator asks about a running agent, in one
 * JSON object built from a status view (a pure function, unit-tested on hand-made views).
 * Shape (docs/operations.md is the reference):
 *   { "version", "startedAt", "uptimeSeconds", "healthy", "health", "paused",
 *     "servers":     [ { "url", "state", "lastSuccess", "secondsSinceSuccess",
 *                        "consecutiveFailures", "lastError", "lastErrorAt", "polls",
 *                        "changes", "fetches", "fetchedBytes", "errors": {reason: n} } ],
 *     "groups":      { "PLUGIN": { "md5", "lastModifyTime", "items", "source",
 *                                  "fromSnapshot", "receivedAt", "ageSeconds" } | null },
 *     "subscribers": [ { "name", "plugin", "inStep", "applies", "failures", "lastError",
 *                        "lastErrorAt", "groups": { "PLUGIN": { "md5", "lastModifyTime",
 *                        "items", "deliveredAt", "inStep", "failures",
 *                        "consecutiveFailures", "lastError", "lastErrorAt" } } } ],
 *     "dispatcher":  { "alive", "busyIn", "busySeconds", "changes", "failures" } }
 * Times are RFC 3339 UTC strings (null: never); lastModifyTime stays the admin's epoch ms.
 */
#ifndef GW_STATUS_JSON_H
#define GW_STATUS_JSON_H

#include <jansson.h>
#include <stdint.h>

#include "ops/status_view.h"

/* A new reference, or NULL on out of memory. */
json_t *status_json(const struct status_view *v);

/* "2024-05-01T12:00:00.123Z" for an epoch-ms wall time. */
void status_time_text(int64_t wall_ms, char buf[32]);

#endif
