// clang-format off
/*
 * gwsync plugin testing library: the values a plugin receives, built the way the agent
 * builds them, for a plugin's own unit tests. Link with -lgwsync-testing
 * (`pkg-config --cflags --libs gwsync-testing`).
 *
 *   struct gwt_config *cfg = gwt_config_parse("dir: /tmp/x\nmode: \"0640\"\n", err, sizeof err);
 *   struct gwt_host *h = gwt_host_new("mine", my_plugin_options);
 *   void *state;
 *   desc->init(gwt_host(h), gwt_config(cfg), &state);
 *   struct gwt_change *c = gwt_change_new(GW_GROUP_RULE, NULL, "[{\"id\":\"r1\"}]", err, sizeof err);
 *   desc->apply(state, gwt_host(h), gwt_change(c));
 *
 * Everything goes through the agent's own code (its YAML reader, option checks, value
 * parsers, JSON model and delta), so a test needs no re-implementation of their rules.
 * What the agent would deliver and a test may want to build:
 *   - any number of versions of a group, each with its own md5 and lastModifyTime, and the
 *     change between any two of them (gwt_version_new, gwt_change_between);
 *   - a `stale` change (data from the agent's snapshot) and the `confirmed_only` change
 *     that follows it when an admin serves the same data (gwt_version_set_stale);
 *   - a group your header does not know, as a newer agent delivers it
 *     (gwt_host_add_group, gwt_version_new_unknown);
 *   - the groups the agent syncs (gwt_host_set_groups) and an older agent's host table
 *     (gwt_host_set_size);
 *   - tick() driven as the dispatcher drives it, on a fake clock (gwt_clock_set,
 *     gwt_apply, gwt_tick_until), so a debounce is tested without sleeping.
 *   - the .so you ship, opened as the agent opens it (gwt_plugin_open), and an instance of
 *     it run as the agent runs one: started, delivered to version after version, the delta
 *     always from what it last accepted, stopped (gwt_instance_start, gwt_instance_deliver,
 *     gwt_instance_stop).
 * Errors are returned as text in a caller's buffer; nothing here exits or aborts. Nothing
 * is global: every object is independent of the others.
 */
// clang-format on
#ifndef GWSYNC_TESTING_H
#define GWSYNC_TESTING_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- config */

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

/* ---------------------------------------------------------------- host */

/** A host table like the agent's. */
struct gwt_host;

/** `options`: the plugin's declared options (their defaults are returned for absent keys),
 *  or NULL. Log lines go to stderr and are kept (gwt_host_log). The host syncs the agent's
 *  default groups (PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA) and its clock is the real
 *  monotonic clock until gwt_clock_set(). NULL on out of memory. */
GWSYNC_EXPORT struct gwt_host *gwt_host_new(const char *instance, const struct gw_option *options);
GWSYNC_EXPORT const struct gw_host *gwt_host(struct gwt_host *h);
/** The last host->error() message ("" if none since the last gwt_host_clear()). */
GWSYNC_EXPORT const char *gwt_host_error(const struct gwt_host *h);
/** Every line logged so far, "LEVEL message\n" each ("" if none). A message is cut as the
 *  agent cuts it: past 4095 bytes, ending with " ... [truncated]". */
GWSYNC_EXPORT const char *gwt_host_log(const struct gwt_host *h);
/** Forget the error message and the log. */
GWSYNC_EXPORT void gwt_host_clear(struct gwt_host *h);
/** The groups the agent syncs, as admin.groups lists them (host->group_configured() and
 *  host->configured_groups() answer from it); groups added with gwt_host_add_group() may be
 *  among them. 0, or -1 if n is over 64. */
GWSYNC_EXPORT int gwt_host_set_groups(struct gwt_host *h, const enum gw_group *groups, size_t n);
/** Teach the host a group this header does not know, as a newer agent knows it: returns its
 *  number (GW_GROUP_COUNT for the first, then one more each time), which host->group_name()
 *  names and host->group_count() counts. -1 on out of memory or after 16 of them. */
GWSYNC_EXPORT int gwt_host_add_group(struct gwt_host *h, const char *name);
/** Make the table look as an older agent builds it: host->size is `size` (e.g.
 *  offsetof(struct gw_host, group_configured) for an agent from before that member), so
 *  GW_HAS() is 0 for every member past it. From before change_item, gwt_apply() hands a
 *  plugin with GW_SUB_LISTS_ON_DEMAND the lists filled, as that agent does. */
GWSYNC_EXPORT void gwt_host_set_size(struct gwt_host *h, size_t size);
GWSYNC_EXPORT void gwt_host_free(struct gwt_host *h);

/* ---------------------------------------------------------------- clock and tick */

/** From now on host->now_ms() is a fake clock standing at `ms`, moved only by
 *  gwt_clock_advance(), gwt_clock_set() and gwt_tick_until(). */
GWSYNC_EXPORT void gwt_clock_set(struct gwt_host *h, int64_t ms);
/** Move the fake clock forward by `ms` (it must have been set); returns the new time. */
GWSYNC_EXPORT int64_t gwt_clock_advance(struct gwt_host *h, int64_t ms);
/** What host->now_ms() answers now. */
GWSYNC_EXPORT int64_t gwt_now(struct gwt_host *h);

/**
 * What the agent's dispatcher does with one change: apply(), then at once tick() (also
 * after a rejection), at host->now_ms(). Returns apply()'s result; *next (may be NULL) gets
 * the deadline tick() returned (-1: none, or no tick()). gwt_host_error() is then apply()'s
 * message; one from tick() is logged as a warning "tick(): MESSAGE", as the agent logs it.
 */
GWSYNC_EXPORT int gwt_apply(struct gwt_host *h, const struct gw_subscriber *desc, void *state,
                            const struct gw_change *change, int64_t *next);
/**
 * Drive tick() as the dispatcher does while the fake clock runs to `until_ms`: whenever the
 * deadline `next` (the last one tick() returned; 0 for the tick() the agent makes when
 * delivery starts) has come, the clock is moved to it and tick() called. Returns the
 * deadline pending at the end (-1: none), the clock then standing at `until_ms`. A tick()
 * asking for its deadline again and again without the clock moving is stopped after
 * 10,000 calls (the agent would spin).
 */
GWSYNC_EXPORT int64_t gwt_tick_until(struct gwt_host *h, const struct gw_subscriber *desc,
                                     void *state, int64_t next, int64_t until_ms);

/* ---------------------------------------------------------------- versions and changes */

/** One version of one group, as the agent holds it. */
struct gwt_version;

/**
 * A version of `group` whose items are `items_json`, a JSON array of items exactly as the
 * admin sends a group's "data" (NULL: "[]"), tagged `md5` (1 to 64 letters and digits, as
 * the agent requires; NULL: a digest of the items' text, the same for the same text, so
 * distinct item lists get distinct md5s) and
 * `last_modify_time`. NULL on error with the reason in err (the agent's message for a
 * malformed item or a missing key field).
 */
GWSYNC_EXPORT struct gwt_version *gwt_version_new(enum gw_group group, const char *md5,
                                                  int64_t last_modify_time, const char *items_json,
                                                  char *err, size_t cap);
/**
 * A version of a group your header does not know (`group` >= GW_GROUP_COUNT, as returned by
 * gwt_host_add_group), named `name`: its items come as key + raw JSON, the typed views
 * NULL, each item keyed by its "id" member.
 */
GWSYNC_EXPORT struct gwt_version *gwt_version_new_unknown(int group, const char *name,
                                                          const char *md5, int64_t last_modify_time,
                                                          const char *items_json, char *err,
                                                          size_t cap);
/** Mark the version as the agent's snapshot data, not (yet) confirmed by an admin: a change
 *  to it has `stale` 1; from it to a version of the same md5 not stale, the change is
 *  `confirmed_only`. */
GWSYNC_EXPORT void gwt_version_set_stale(struct gwt_version *v, int stale);
/** Its md5 (the one given or the digest). */
GWSYNC_EXPORT const char *gwt_version_md5(const struct gwt_version *v);
/** Its group: the enum gw_group given, or the number of a group the header does not know. */
GWSYNC_EXPORT int gwt_version_group(const struct gwt_version *v);
GWSYNC_EXPORT void gwt_version_free(struct gwt_version *v);

/** One change of one group. */
struct gwt_change;

/**
 * The change from version `from` (NULL: nothing delivered yet, the group's first change) to
 * `to`, built as the dispatcher builds it for a subscriber whose last accepted version is
 * `from`. It keeps what it needs: the versions may be freed before it. NULL on error.
 */
GWSYNC_EXPORT struct gwt_change *gwt_change_between(const struct gwt_version *from,
                                                    const struct gwt_version *to, char *err,
                                                    size_t cap);
/**
 * The change from the version whose items are `from_json` to the one whose items are
 * `to_json` (NULL from_json: a group's first change; NULL to_json: "[]"). The versions are
 * tagged md5 "gwt1"/"gwt2", lastModifyTime 1/2. NULL on error with the reason in err.
 */
GWSYNC_EXPORT struct gwt_change *gwt_change_new(enum gw_group group, const char *from_json,
                                                const char *to_json, char *err, size_t cap);
/** What apply() receives; valid until gwt_change_free(). */
GWSYNC_EXPORT const struct gw_change *gwt_change(const struct gwt_change *c);
GWSYNC_EXPORT void gwt_change_free(struct gwt_change *c);

/* ---------------------------------------------------------------- plugins and instances */

/** A plugin's .so, opened as the agent's loader opens it. */
struct gwt_plugin;

/** dlopen() `path` (RTLD_NOW | RTLD_LOCAL, as the agent does) and call its
 *  GWSYNC_SUBSCRIBER_SYMBOL entry point. NULL with the reason in err (dlerror()'s, or the
 *  entry point missing or returning NULL). The ABI checks are the agent's (`gwsyncd --check`,
 *  gwsync-replay); this is for driving the very .so you ship from a unit test. */
GWSYNC_EXPORT struct gwt_plugin *gwt_plugin_open(const char *path, char *err, size_t cap);
/** Its description, valid until gwt_plugin_close(). */
GWSYNC_EXPORT const struct gw_subscriber *gwt_plugin_desc(const struct gwt_plugin *p);
GWSYNC_EXPORT void gwt_plugin_close(struct gwt_plugin *p);

/**
 * One instance of a plugin as the agent runs it: its `config:` map, a host, its state after
 * init(), and per group the version it last accepted, from which the next change is built
 * (as the dispatcher builds a subscriber's delta).
 */
struct gwt_instance;

/**
 * What the agent does at start-up (and `gwsyncd --check`): parse `yaml` (the plugin's
 * `config:` map), check it against desc->options, make a host named `name` (the
 * subscriber's name) with those options, call init() (if the plugin has one; without it the
 * state is NULL). The host syncs the agent's default groups (see gwt_host_new); to start it
 * with others, use gwt_instance_start_groups(). NULL with the reason in err: the agent's
 * message for a bad option, "init() failed: MESSAGE" (its host->error()) when init()
 * refused, or "out of memory". Set the host up further (fake clock) with
 * gwt_instance_host().
 */
GWSYNC_EXPORT struct gwt_instance *gwt_instance_start(const struct gw_subscriber *desc,
                                                      const char *name, const char *yaml, char *err,
                                                      size_t cap);
/**
 * gwt_instance_start() with the groups the agent syncs set before init(), as admin.groups
 * (or the source section's `groups:`) sets them: what host->group_configured() and
 * host->configured_groups() answer from init() on, fixed from then as in the agent. So a
 * plugin's check of the synced groups in init() (e.g. refusing to start without APP_AUTH)
 * is tested. `groups` NULL: the default groups. "more than 64 synced groups" if n_groups is
 * over 64. Added in the library's interface 2 (libtool -version-info 2:0:2).
 */
GWSYNC_EXPORT struct gwt_instance *
gwt_instance_start_groups(const struct gw_subscriber *desc, const char *name, const char *yaml,
                          const enum gw_group *groups, size_t n_groups, char *err, size_t cap);
/** Its host, for gwt_host_error(), gwt_host_log(), gwt_clock_set(), gwt_tick_until()... */
GWSYNC_EXPORT struct gwt_host *gwt_instance_host(const struct gwt_instance *in);
/** Its state, as init() set it. */
GWSYNC_EXPORT void *gwt_instance_state(const struct gwt_instance *in);
/**
 * Deliver version `v` as the dispatcher does: the change from the version of its group the
 * instance last accepted (none: the group's first change), then gwt_apply() (apply() and at
 * once tick(); *next, may be NULL, its deadline). As in the agent, a plugin that declared
 * GW_SUB_TYPED_ON_DEMAND gets its items without typed views (PLUGIN's excepted, which the
 * agent always keeps; and a view gwt_change_between() made on `v` before stays): its apply()
 * asks host->item_typed() for them. `v` is consumed: kept as the accepted
 * version when apply() returns 0, freed otherwise, so a retry's delta is again from the last
 * accepted one. Returns apply()'s result, its message also in err; -1 with the reason in err
 * when the change could not be built.
 */
GWSYNC_EXPORT int gwt_instance_deliver(struct gwt_instance *in, struct gwt_version *v,
                                       int64_t *next, char *err, size_t cap);
/** The version of `group` the instance last accepted (NULL: none yet). */
GWSYNC_EXPORT const struct gwt_version *gwt_instance_accepted(const struct gwt_instance *in,
                                                              int group);
/** fini(), as at shutdown, then free everything it holds (a restart's first half). NULL is
 *  fine. */
GWSYNC_EXPORT void gwt_instance_stop(struct gwt_instance *in);

#ifdef __cplusplus
}
#endif

#endif /* GWSYNC_TESTING_H */
