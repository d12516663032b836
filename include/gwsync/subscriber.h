/*
 * gwsync subscriber ABI 2: the only header a plugin author needs.
 *
 * A subscriber is a shared object that gwsyncd loads with dlopen(). It exports one
 * function, gwsync_subscriber(), returning a static description (ABI version, size, name,
 * callbacks, declared options). The agent checks the ABI version before reading anything
 * else, checks the plugin's `config:` against the declared options, hands init() that map
 * and a host table (logging, config access, clock), then calls apply() once per accepted
 * group version with the complete new item list and the delta against what this
 * subscriber last accepted.
 *
 * Rules of the road:
 *  - Callbacks are never called concurrently: init() and fini() run in the agent's main
 *    thread at start-up and shutdown, apply() and tick() in its one dispatcher thread in
 *    between. A plugin needs no locks for its own state.
 *  - The same shared object may be configured as several instances; keep all state in
 *    the pointer init() returns, never in globals. Without init() that pointer is NULL.
 *  - All memory passed to a callback belongs to the agent and stays valid only for the
 *    duration of that call (the host table: from init() until fini() returns). Copy what
 *    you keep.
 *  - Return 0 on success. Any other value rejects the change: the agent logs and counts
 *    it and later delivers a change from what this subscriber last accepted, with backoff.
 *    Never abort() or exit(): the gateway's other subscribers depend on the process.
 *  - Strings are NUL-terminated UTF-8; a field the admin sent as null, or did not send,
 *    is NULL (strings), GW_UNSET (booleans) or GW_INT_UNSET (integers).
 *
 * How this ABI grows without breaking compiled plugins (ABI 2 is the last breaking change;
 * the idea of sqlite3_vfs.iVersion and curl_version_info_data.age):
 *  1. `abi` is the first member of struct gw_subscriber in every version, and the agent
 *     reads it before anything else. The agent loads plugins of ABI 1 (it builds the ABI-1
 *     shapes for them) and of ABI 2.
 *  2. Every struct that crosses the boundary and may grow starts with its size as the
 *     other side built it: gw_subscriber.size (set by the plugin: GWSYNC_SUBSCRIBER_INIT),
 *     gw_host.size, gw_change.size and gw_item.size (set by the agent). Members are only
 *     ever appended, never removed, reordered or retyped. A reader reads a member only if
 *     the size covers it: the agent treats a member past gw_subscriber.size as absent
 *     (NULL/0), and a plugin tests a host function before calling it with
 *     GW_HAS(host, member) (functions of this header's own version are always there).
 *  3. Arrays of growable structs are arrays of pointers (gw_change.items, added, removed),
 *     so a bigger gw_item never changes the stride a compiled plugin walks.
 *     Members appended so far: gw_host.group_configured and configured_groups,
 *     gw_subscriber.flags (GW_SUB_TYPED_ON_DEMAND) and gw_host.item_typed,
 *     GW_SUB_LISTS_ON_DEMAND and gw_host.change_item.
 *  4. The other structs are frozen as they are: gw_version, gw_update, gw_option,
 *     gw_condition, gw_auth_param, gw_auth_path and the typed item views. A new need
 *     becomes a new struct reached through a new member appended to a growable one.
 *  5. New groups may appear (see enum gw_group), new enum values may appear: a plugin
 *     treats a value it does not know as "not mine".
 */
#ifndef GWSYNC_SUBSCRIBER_H
#define GWSYNC_SUBSCRIBER_H

#include <gwsync/log_level.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes. Put it in gw_subscriber.abi. */
#define GWSYNC_SUBSCRIBER_ABI 2

/** Name of the one symbol a plugin exports (see gwsync_subscriber()). */
#define GWSYNC_SUBSCRIBER_SYMBOL "gwsync_subscriber"

/**
 * Configuration groups, as the admin names them. GW_GROUP_COUNT is the number of groups
 * *this header* knows. A newer agent may know more and deliver them to you: a change
 * whose `group` is >= the GW_GROUP_COUNT you compiled is a group you do not know; its
 * `group_name` names it, its items carry key and raw JSON only. Never index an array of
 * your own by `group` without checking `group < GW_GROUP_COUNT`; return 0 to ignore it.
 * Use host->group_name() (or change->group_name) for the text, never a table of your own.
 */
enum gw_group {
	GW_GROUP_PLUGIN = 0,
	GW_GROUP_SELECTOR,
	GW_GROUP_RULE,
	GW_GROUP_APP_AUTH,
	GW_GROUP_META_DATA,
	GW_GROUP_PROXY_SELECTOR,    /* ShenYu 2.6+: carried as key + raw JSON */
	GW_GROUP_DISCOVER_UPSTREAM, /* ShenYu 2.6+: carried as key + raw JSON */
	GW_GROUP_AI_PROXY_API_KEY,  /* ShenYu 2.7: carried as key + raw JSON */
	GW_GROUP_COUNT
};

/** A JSON boolean that may be null or missing. */
enum gw_bool { GW_UNSET = -1, GW_FALSE = 0, GW_TRUE = 1 };

/** An integer field that was null or missing. */
#define GW_INT_UNSET INT64_MIN

/** One matching condition of a selector or rule. */
struct gw_condition {
	const char *param_type; /* "uri", "header", "query", ... */
	const char *op;         /* the admin's "operator": "match", "=", "regex", ... */
	const char *param_name;
	const char *param_value;
};

/** PLUGIN item. */
struct gw_plugin_data {
	const char *id;
	const char *name;
	const char *config;     /* a JSON document inside a string; may be NULL */
	const char *role;       /* Soul sends a number, ShenYu a string: both as text */
	const char *plugin_jar; /* base64 of an extension jar; usually NULL */
	const char *namespace_id;
	int64_t sort;
	enum gw_bool enabled;
};

/** SELECTOR item. */
struct gw_selector_data {
	const char *id;
	const char *plugin_id;
	const char *plugin_name;
	const char *name;
	const char *handle; /* plugin-specific JSON inside a string; may be NULL */
	const char *namespace_id;
	int64_t match_mode; /* 0 = and, 1 = or */
	int64_t type;       /* 0 = full flow, 1 = custom */
	int64_t sort;
	enum gw_bool enabled;
	enum gw_bool logged;
	enum gw_bool continued;
	enum gw_bool match_restful;
	const struct gw_condition *conditions; /* conditionList */
	size_t n_conditions;
	const struct gw_condition *before_conditions; /* beforeConditionList */
	size_t n_before_conditions;
};

/** RULE item. */
struct gw_rule_data {
	const char *id;
	const char *name;
	const char *plugin_name;
	const char *selector_id;
	const char *handle;
	const char *namespace_id;
	int64_t match_mode;
	int64_t sort;
	enum gw_bool enabled;
	enum gw_bool logged; /* the admin spells it "loged" */
	enum gw_bool match_restful;
	const struct gw_condition *conditions; /* conditionDataList */
	size_t n_conditions;
	const struct gw_condition *before_conditions; /* beforeConditionDataList */
	size_t n_before_conditions;
};

/** One paramDataList entry of an APP_AUTH item. */
struct gw_auth_param {
	const char *app_name;
	const char *app_param;
};

/** One pathDataList entry of an APP_AUTH item. */
struct gw_auth_path {
	const char *app_name;
	const char *path;
	enum gw_bool enabled;
};

/** APP_AUTH item (its key is app_key; it has no id). */
struct gw_app_auth_data {
	const char *app_key;
	const char *app_secret;
	const char *namespace_id;
	enum gw_bool enabled;
	enum gw_bool open;
	const struct gw_auth_param *params;
	size_t n_params;
	const struct gw_auth_path *paths;
	size_t n_paths;
};

/** META_DATA item. */
struct gw_meta_data {
	const char *id;
	const char *app_name;
	const char *context_path;
	const char *path;
	const char *rpc_type;
	const char *service_name;
	const char *method_name;
	const char *parameter_types;
	const char *rpc_ext;
	const char *namespace_id;
	enum gw_bool enabled;
};

/**
 * One item of a group. Exactly one of the typed pointers is non-NULL for the five
 * classic groups (the one matching `group`); for the newer ShenYu groups all are NULL
 * and `json` is the item. (A plugin that declared GW_SUB_TYPED_ON_DEMAND may find none
 * set: host->item_typed() gives the item with its view.) `json` is always the item's raw
 * JSON text exactly as the admin sent it, so fields this header does not model are never
 * lost. Grows at the end (check `size`); reached only through pointers.
 */
struct gw_item {
	size_t size; /* sizeof(struct gw_item) as the agent built it */
	enum gw_group group;
	const char *key;  /* the item's identity, never NULL: docs/keys.md (name for
	                   * PLUGIN, appKey for APP_AUTH, selectorId::proxyApiKey for
	                   * AI_PROXY_API_KEY, ...) */
	const char *name; /* a display name (name, appName, path...); may be NULL */
	const char *json; /* raw JSON text of the item, NUL-terminated */
	size_t json_len;
	const struct gw_plugin_data *plugin;
	const struct gw_selector_data *selector;
	const struct gw_rule_data *rule;
	const struct gw_app_auth_data *app_auth;
	const struct gw_meta_data *meta;
};

/** A group version: the admin's opaque md5 tag and its last-modified time (epoch ms). */
struct gw_version {
	const char *md5;          /* NULL in gw_change.previous when nothing was delivered */
	int64_t last_modify_time; /* GW_INT_UNSET in gw_change.previous then */
};

/** An item present before and after a change whose JSON differs. Frozen. */
struct gw_update {
	const struct gw_item *old_item;
	const struct gw_item *new_item;
};

/**
 * One change of one group, as seen by one subscriber: from the version it last accepted
 * (`previous`) to the newest (`version`). Intermediate versions that arrived while the
 * plugin was busy are coalesced away. The contract:
 *  - The first change of a group after every start is from nothing: previous.md5 is NULL,
 *    previous.last_modify_time is GW_INT_UNSET and every item is in `added`.
 *  - `items` is the complete new list in the admin's order. Items whose JSON did not
 *    change are in `items` but in none of the delta lists.
 *  - The delta lists are in key order (strcmp, byte order), each key at most once in all
 *    three. An update's old_item is the item as you last accepted it.
 *  - No list pointer is ever NULL, even when its count is 0 (an empty list is a valid
 *    pointer you must not dereference).
 *  - A plugin that declared GW_SUB_LISTS_ON_DEMAND gets the counts but empty lists (none
 *    of the four pointers may be dereferenced): it reads entry i of a list through
 *    host->change_item(), so the agent makes only the items it asks for.
 *  - An empty `items` with everything in `removed` means the admin deleted every item of
 *    the group: clear it.
 *  - `stale` is 1 while the data comes from the agent's local snapshot (no admin answered
 *    at start-up). When an admin then serves the very same data, you receive a change with
 *    version.md5 == previous.md5, all three delta lists empty, stale 0 and
 *    `confirmed_only` 1: nothing to apply, only the news that the data is now confirmed.
 *    (This is the one case where a version is delivered without its md5 changing.)
 * Grows at the end (check `size`).
 */
struct gw_change {
	size_t size; /* sizeof(struct gw_change) as the agent built it */
	enum gw_group group;
	const char *group_name; /* "PLUGIN", "SELECTOR", ...; never NULL */
	struct gw_version version;
	struct gw_version previous;
	const struct gw_item *const *items; /* the complete new list, in the admin's order */
	size_t n_items;
	const struct gw_item *const *added; /* key order */
	size_t n_added;
	const struct gw_update *updated; /* key order */
	size_t n_updated;
	const struct gw_item *const *removed; /* key order */
	size_t n_removed;
	int stale;          /* 1: data loaded from the local snapshot, not (yet) confirmed */
	int confirmed_only; /* 1: same data as `previous`, only `stale` went from 1 to 0 */
};

/** The lists of a gw_change, for gw_host.change_item(). New values may appear. */
enum gw_list {
	GW_LIST_ITEMS = 0,   /* change->items: the complete new list, n_items entries */
	GW_LIST_ADDED,       /* change->added, n_added */
	GW_LIST_REMOVED,     /* change->removed, n_removed */
	GW_LIST_UPDATED_OLD, /* change->updated[i].old_item, n_updated */
	GW_LIST_UPDATED_NEW  /* change->updated[i].new_item, n_updated */
};

/** How many of the items gw_host.change_item() returned last stay valid (see there). */
#define GW_CHANGE_ITEMS_KEPT 64

/** Log levels for gw_host.log: enum gw_log_level (GW_LOG_ERROR, GW_LOG_WARN, GW_LOG_INFO,
 *  GW_LOG_DEBUG), in <gwsync/log_level.h>, included above. */

/** Results of the config getters. */
enum gw_config_result {
	GW_CONFIG_OK = 0,      /* found and converted; *out set */
	GW_CONFIG_ABSENT = 1,  /* key not present (or null) and no declared default; *out
	                        * untouched: keep your default */
	GW_CONFIG_INVALID = -1 /* present but of the wrong type or form; the host has logged
	                        * FILE:LINE:COL and the key; fail init() */
};

/** The plugin's own `config:` map from the agent's YAML; read-only, opaque. */
struct gw_config;

/** The type of a declared option: how the agent checks its value (see gw_option). */
enum gw_option_type {
	GW_OPT_STRING = 1, /* any scalar, as written               config_string  */
	GW_OPT_BOOL,       /* true/false, yes/no, on/off           config_bool    */
	GW_OPT_INT,        /* a whole number                       config_int     */
	GW_OPT_DURATION,   /* "200ms", "5s", "2m", "1h" (unit required)  config_duration_ms */
	GW_OPT_SIZE,       /* bytes, or "512KiB", "64MiB", "1GiB"  config_size    */
	GW_OPT_MODE,       /* an octal file mode such as "0640"    config_mode    */
	GW_OPT_PATH,       /* a non-empty string naming a file or directory  config_string */
	GW_OPT_LIST        /* a YAML list of scalars               config_list_item */
};

/**
 * One declared option (the idea of Fluent Bit's config_map). An array of them, ended by
 * an entry whose name is NULL, goes in gw_subscriber.options. The agent then checks the
 * plugin's `config:` like its own keys, at `gwsyncd --check` and at start-up, before
 * init(): an unknown key (with "did you mean"), a value of the wrong type or a missing
 * required key stops start-up with FILE:LINE:COL (exit 2). The getters return `def` for
 * an absent key, so the default lives in one place; `gwsyncd --plugin-help NAME` prints
 * the table. Frozen.
 */
struct gw_option {
	const char *name;
	enum gw_option_type type;
	const char *def;  /* the default, written as in YAML ("1GiB", "0640"); NULL: none */
	int required;     /* 1: the key must be present */
	const char *help; /* one line, shown by --plugin-help */
};

/**
 * What the agent offers a plugin. Valid from init() until fini() returns. Every function
 * takes the host pointer itself first so a plugin needs no globals. Grows at the end:
 * a function added after ABI 2 is tested with GW_HAS(host, member) before use.
 */
struct gw_host {
	size_t size;               /* sizeof(struct gw_host) as the agent built it */
	int abi;                   /* GWSYNC_SUBSCRIBER_ABI of the agent */
	const char *agent_version; /* e.g. "0.1.0" */
	const char *instance;      /* the subscriber's `name:` from the YAML */
	void *priv;                /* the agent's; do not touch */

	/** Log one line, tagged with the instance name. Never log secrets. A message longer
	 *  than 4095 bytes (after formatting) is cut and ends with " ... [truncated]". */
	void (*log)(const struct gw_host *host, enum gw_log_level level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
	/** The same with a va_list (for a plugin's own logging wrapper). */
	void (*logv)(const struct gw_host *host, enum gw_log_level level, const char *fmt,
	             va_list ap) __attribute__((format(printf, 3, 0)));

	/**
	 * Say why the current callback fails. The rules:
	 *  - init(): the message is the reason in the start-up error; return non-zero.
	 *  - apply(): the message is the rejection's reason (logs, /status); return non-zero.
	 *    Called twice in one call: the last message wins. Called, then 0 returned: the
	 *    change is accepted and the message is logged as a warning. Non-zero returned
	 *    without it: the reason reads "apply() returned N".
	 *  - tick() and fini(): they have no verdict; the message is logged as a warning.
	 */
	void (*error)(const struct gw_host *host, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
	/** The same with a va_list. */
	void (*errorv)(const struct gw_host *host, const char *fmt, va_list ap)
	    __attribute__((format(printf, 2, 0)));

	/** A scalar as text (strings, numbers, booleans as written in the YAML). */
	enum gw_config_result (*config_string)(const struct gw_host *host,
	                                       const struct gw_config *config, const char *key,
	                                       const char **out);
	/** A whole number. */
	enum gw_config_result (*config_int)(const struct gw_host *host,
	                                    const struct gw_config *config, const char *key,
	                                    int64_t *out);
	/** true/false, yes/no, on/off. */
	enum gw_config_result (*config_bool)(const struct gw_host *host,
	                                     const struct gw_config *config, const char *key,
	                                     int *out);
	/** A duration such as "200ms", "5s", "2m", "1h"; in milliseconds. */
	enum gw_config_result (*config_duration_ms)(const struct gw_host *host,
	                                            const struct gw_config *config, const char *key,
	                                            int64_t *out);
	/** A file mode as an octal string such as "0640". */
	enum gw_config_result (*config_mode)(const struct gw_host *host,
	                                     const struct gw_config *config, const char *key,
	                                     unsigned *out);
	/** A size: bytes, or with KiB, MiB, GiB ("64MiB"). */
	enum gw_config_result (*config_size)(const struct gw_host *host,
	                                     const struct gw_config *config, const char *key,
	                                     int64_t *out);
	/** Entry `i` (from 0) of a list of scalars: OK, or ABSENT past its end (or if the
	 *  key is absent). */
	enum gw_config_result (*config_list_item)(const struct gw_host *host,
	                                          const struct gw_config *config, const char *key,
	                                          size_t i, const char **out);

	/** Monotonic clock in milliseconds (the clock tick() deadlines use). */
	int64_t (*now_ms)(const struct gw_host *host);

	/** The text name of a group ("PLUGIN"...), also of groups newer than your header;
	 *  NULL if the agent does not know `group` either. */
	const char *(*group_name)(const struct gw_host *host, enum gw_group group);
	/** How many groups the agent knows (its GW_GROUP_COUNT; may exceed yours). */
	int (*group_count)(const struct gw_host *host);

	/* ---- appended after ABI 2's first release: test with GW_HAS(host, member) ---- */

	/**
	 * The groups this agent syncs (its source section's `groups:`, or the default five),
	 * so a plugin can tell a group that will come from one that never will: e.g. take a
	 * selector's upstreams from DISCOVER_UPSTREAM when it is synced and from the selector's
	 * `handle` otherwise, and write its output once at start instead of twice. Fixed from
	 * init() until fini(). An older agent lacks them: GW_HAS(host, group_configured) is 0.
	 */
	/** 1 if the agent syncs `group`, 0 if not (also for a group it does not know). */
	int (*group_configured)(const struct gw_host *host, enum gw_group group);
	/** The synced groups in the configured order: their number, and the first `cap` of
	 *  them in out[] (out may be NULL when cap is 0). host->group_count() entries always
	 *  suffice. Groups newer than your header are >= your GW_GROUP_COUNT. */
	size_t (*configured_groups)(const struct gw_host *host, enum gw_group *out, size_t cap);

	/** In apply(): `item` (of the change being applied) with its typed view: item itself
	 *  when it has one (or its group has none), else a copy that has it, valid until
	 *  apply() returns. NULL only when out of memory. For GW_SUB_TYPED_ON_DEMAND. */
	const struct gw_item *(*item_typed)(const struct gw_host *host, const struct gw_item *item);

	/**
	 * In apply(): entry `i` of one list of `change` (the change being applied), the way a
	 * plugin that declared GW_SUB_LISTS_ON_DEMAND reads its items (any plugin may call it).
	 * NULL when `i` is past the list's count, `list` is unknown, or out of memory. The
	 * item, its strings and its JSON stay valid until apply() returns or until you have
	 * asked for GW_CHANGE_ITEMS_KEPT more items, whichever comes first (so an update's old
	 * and new item, asked for one after the other, are both valid): copy what you keep.
	 * Typed views as for every item (host->item_typed() for GW_SUB_TYPED_ON_DEMAND).
	 */
	const struct gw_item *(*change_item)(const struct gw_host *host,
	                                     const struct gw_change *change, enum gw_list list,
	                                     size_t i);
};

/** 1 if the host table has `member` (a function appended after your header's version). */
#define GW_HAS(host, member)                                                                       \
	((host)->size >= offsetof(struct gw_host, member) + sizeof((host)->member) &&              \
	 (host)->member != NULL)

/** Entry `i` of a list of `change` read from the list itself (NULL past its count): what
 *  host->change_item() gives, for a change whose lists are filled. */
static inline const struct gw_item *gw_change_list_entry(const struct gw_change *change,
                                                         enum gw_list list, size_t i)
{
	switch (list) {
	case GW_LIST_ITEMS:
		return i < change->n_items ? change->items[i] : NULL;
	case GW_LIST_ADDED:
		return i < change->n_added ? change->added[i] : NULL;
	case GW_LIST_REMOVED:
		return i < change->n_removed ? change->removed[i] : NULL;
	case GW_LIST_UPDATED_OLD:
		return i < change->n_updated ? change->updated[i].old_item : NULL;
	case GW_LIST_UPDATED_NEW:
		return i < change->n_updated ? change->updated[i].new_item : NULL;
	}
	return NULL;
}

/**
 * Entry `i` of a list of `change` for a plugin that declared GW_SUB_LISTS_ON_DEMAND and
 * may also run on an agent older than host->change_item (which ignores the flag and fills
 * the lists): through change_item() when the host has it, from the list itself otherwise.
 * NULL past the list's count (or out of memory); the lifetime is change_item()'s.
 */
static inline const struct gw_item *gw_change_entry(const struct gw_host *host,
                                                    const struct gw_change *change,
                                                    enum gw_list list, size_t i)
{
	return GW_HAS(host, change_item) ? host->change_item(host, change, list, i)
	                                 : gw_change_list_entry(change, list, i);
}

/** The static description a plugin exports. Grows at the end (see `size`). */
struct gw_subscriber {
	int abi;          /* GWSYNC_SUBSCRIBER_ABI; the first member in every ABI version */
	size_t size;      /* sizeof(struct gw_subscriber): GWSYNC_SUBSCRIBER_INIT sets both */
	const char *name; /* the plugin's name, e.g. "file" */

	/** Build private state from `config` (may be an empty map). Return 0 and set *state,
	 *  or non-zero after host->error() says why (that message becomes the reason in the
	 *  start-up error); start-up then stops. Optional: without it, state is NULL. */
	int (*init)(const struct gw_host *host, const struct gw_config *config, void **state);

	/** Apply one change atomically from the gateway's point of view. Required. */
	int (*apply)(void *state, const struct gw_host *host, const struct gw_change *change);

	/** Deferred work (debounced reloads...). Called once when delivery starts, after
	 *  every apply() (accepted or not) and whenever the deadline it last returned has
	 *  passed, also while delivery is paused. Return the next deadline on the now_ms()
	 *  clock, or -1 for none. Optional. */
	int64_t (*tick)(void *state, const struct gw_host *host, int64_t now_ms);

	/** Finish deferred work and free the state. Optional. */
	void (*fini)(void *state, const struct gw_host *host);

	/** The declared options, ended by {NULL}; NULL: none declared (the agent then only
	 *  warns that it cannot check this plugin's config:). */
	const struct gw_option *options;
	/** One line saying what the plugin does (for --plugin-help); may be NULL. */
	const char *description;

	/* ---- appended after ABI 2's first release: read only when `size` covers them (the
	 * GWSYNC_SUBSCRIBER_INIT of an older header does not: they are then 0) ---- */

	/** GW_SUB_* bits; 0: none. */
	unsigned flags;
};

/**
 * gw_subscriber.flags: apply() reads each item's key, name and json, and a typed view
 * (item->plugin, selector, rule, app_auth, meta) only through host->item_typed(), for the
 * items it asks about. Without it every item of every change carries its typed view, as
 * ABI 2 always promised, and the agent keeps them for it; when no loaded plugin needs them
 * the agent keeps none (they are about half of what it holds per item).
 */
#define GW_SUB_TYPED_ON_DEMAND 0x1u

/**
 * gw_subscriber.flags: apply() reads the items of a change only through
 * host->change_item(), never through change->items, added, removed or updated (their
 * counts are set, the lists are empty). The agent then makes a struct gw_item only when
 * it is asked for, and keeps none: it holds its items in 16 bytes each, and a subscriber
 * that reads the lists makes it keep a gw_item (88 bytes, three times the JSON of a small
 * item) for every item of every version it is delivered. Needs an agent
 * with GW_HAS(host, change_item); an older one ignores the flag and fills the lists, so a
 * plugin that reads through change_item() when it has it works with both.
 */
#define GW_SUB_LISTS_ON_DEMAND 0x2u

/** Starts a description: `static const struct gw_subscriber s = { GWSYNC_SUBSCRIBER_INIT,
 *  .name = "mine", .apply = mine_apply };` */
#define GWSYNC_SUBSCRIBER_INIT .abi = GWSYNC_SUBSCRIBER_ABI, .size = sizeof(struct gw_subscriber)

/* Keeps the entry point exported when a plugin is built with -fvisibility=hidden (as it
 * should be: gwsyncd exports its own symbols, and a plugin's non-static functions with the
 * same names would otherwise be bound to the agent's at load time). */
#if defined(__GNUC__) || defined(__clang__)
#define GWSYNC_EXPORT __attribute__((visibility("default")))
#else
#define GWSYNC_EXPORT
#endif

/** The entry point every plugin defines, returning a pointer to a static struct. */
GWSYNC_EXPORT const struct gw_subscriber *gwsync_subscriber(void);

#ifdef __cplusplus
}
#endif

#endif /* GWSYNC_SUBSCRIBER_H */
