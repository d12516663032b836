/*
 * `gwsyncd --plugin-help NAME`: a plugin's options printed from its declaration
 * (gw_subscriber.options), so the help can never drift from what the agent checks.
 * docs/configuration.md carries the same text for the bundled plugins (a test compares).
 */
#ifndef GW_PLUGIN_HELP_H
#define GW_PLUGIN_HELP_H

#include <stdio.h>

#include "core/error.h"

/* Load `library` (a name or a path, found as subscribers load it; init() is not called)
 * and write its help to `out`. 0, or -1 with err set (not found, not a plugin...). */
int plugin_help_write(FILE *out, const char *library, struct gw_err *err);

#endif
