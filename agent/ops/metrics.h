/*
 * GET /metrics: a status view rendered in the Prometheus text exposition format 0.0.4
 * (HELP and TYPE lines, escaped label values, cumulative histogram buckets). A pure
 * function of the view, so a unit test checks every line. docs/operations.md lists the
 * metrics; their names and labels are an interface: dashboards and alerts depend on them.
 */
#ifndef GW_METRICS_H
#define GW_METRICS_H

#include <stddef.h>

#include "core/error.h"
#include "ops/status_view.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Render into a new NUL-terminated buffer (*out, caller frees; *len without the NUL). */
int metrics_render(const struct status_view *v, char **out, size_t *len, struct gw_err *err);

/* Escape a label value (\ " and newline) into buf; returns buf. Truncates to cap. */
const char *metrics_escape_label(const char *value, char *buf, size_t cap);

#endif
