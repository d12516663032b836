/*
 * gwsync plugin testing library: the values a plugin receives, built the way the agent
 * builds them, for a plugin's own unit tests. Link with -lgwsync-testing
 * (`pkg-config --cflags --libs gwsync-testing`).
 *
 *   struct gwt_config *cfg = gwt_config_parse("dir: /tmp/x\nmode: \"0640\"\n", err, sizeof err);
 *   struct gwt_host *h = gwt_host_new("mine", my_plugin_options);
 *   void *state;
 *   desc->init(gwt_host(h), gwt_config(cfg), &state);
 *   struct gwt_change *c = gwt_change_new(GW_GROUP_RULE, NULL, "[{\"id\":\"r1\",...}]", err, sizeof
 * err); desc->apply(state, gwt_host(h), gwt_change(c));
 *
 * Everything goes through the agent's own code (its YAML reader, option checks, value
 * parsers, JSON model and delta), so a test needs no re-implementation of their rules.
 * Errors are returned as text in a caller's buffer; nothing here exits or aborts.
 */
#ifndef GWSYNC_TESTING_H
#define GWSYNC_TESTING_H

#include <gwsync/subscriber.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A plugin's `config:` map parsed from YAML text. */
struct gwt_config;

/** Parse `yaml` (a map, "" for an empty one). NULL on error, with the reason (FILE:LINE:COL,
 *  the file being "test.yaml") in err. */
GWSYNC_EXPORT struct gwt_config *gwt_config_parse(const char *yaml, char *err, size_t cap);
/** What init() receives. */
GWSYNC_EXPORT const struct gw_config *gwt_config(const struct gwt_config *c);
/** Check the map against declared options exactly as gwsyncd --check does: 0, or -1 with
 *  the agent's message in err. */
GWSYNC_EXPORT int gwt_config_check(const struct gwt_config *c, const struct gw_option *options,
                                   char *err, size_t cap);
GWSYNC_EXPORT void gwt_config_free(struct gwt_config *c);

/** A host table like the agent's. */
struct gwt_host;

/** `options`: the plugin's declared options (their defaults are returned for absent keys),
 *  or NULL. Log lines go to stderr and are kept (gwt_host_log). */
GWSYNC_EXPORT struct gwt_host *gwt_host_new(const char *instance, const struct gw_option *options);
GWSYNC_EXPORT const struct gw_host *gwt_host(struct gwt_host *h);
/** The last host->error() message ("" if none since the last gwt_host_clear()). */
GWSYNC_EXPORT const char *gwt_host_error(const struct gwt_host *h);
/** Every line logged so far, "LEVEL message\n" each ("" if none). */
GWSYNC_EXPORT const char *gwt_host_log(const struct gwt_host *h);
/** Forget the error message and the log. */
GWSYNC_EXPORT void gwt_host_clear(struct gwt_host *h);
GWSYNC_EXPORT void gwt_host_free(struct gwt_host *h);

/** One change of one group. */
struct gwt_change;

/**
 * The change from the version whose items are `from_json` to the one whose items are
 * `to_json`: each a JSON array of items exactly as the admin sends a group's "data"
 * (NULL: no version, so from NULL this is a group's first change). The versions are
 * tagged md5 "gwt1"/"gwt2", lastModifyTime 1/2. NULL on error with the reason in err
 * (the agent's message for a malformed item).
 */
GWSYNC_EXPORT struct gwt_change *gwt_change_new(enum gw_group group, const char *from_json,
                                                const char *to_json, char *err, size_t cap);
/** What apply() receives; valid until gwt_change_free(). */
GWSYNC_EXPORT const struct gw_change *gwt_change(const struct gwt_change *c);
GWSYNC_EXPORT void gwt_change_free(struct gwt_change *c);

#ifdef __cplusplus
}
#endif

#endif /* GWSYNC_TESTING_H */
