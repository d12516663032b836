/*
 * A plugin's declared options (gw_subscriber.options) checked against its `config:` map
 * exactly as the agent checks its own keys, by the same table walk (config_walk.h): an
 * unknown key with "did you mean", a value of the wrong type, a missing required key, each
 * as "FILE:LINE:COL: PATH: message". Runs before init(), at --check and at start-up.
 */
#ifndef GW_PLUGIN_OPTIONS_H
#define GW_PLUGIN_OPTIONS_H

#include <gwsync/subscriber.h>

#include "config/ytree.h"
#include "core/error.h"

/* The name of a type as --plugin-help and the messages show it ("duration"). */
const char *plugin_option_type_name(enum gw_option_type t);

/*
 * Check `config` (a map; NULL counts as empty, `at` then gives the position for a missing
 * required key) against `declared` (ends with a NULL name). `path` names the map in
 * messages ("subscribers[2].config"). 0, or -1 with err set. Also refuses a declaration
 * that is itself broken (an unknown type, a default of the wrong form): a plugin bug.
 */
int plugin_options_check(const struct gw_option *declared, const struct ynode *config,
                         const struct ynode *at, const char *path, struct gw_err *err);

#endif
