/*
 * gwsync subscriber ABI: the only header a plugin author needs.
 *
 * A subscriber is a shared object that gwsyncd loads with dlopen(). It exports one
 * function, gwsync_subscriber(), returning a static description (ABI version, name,
 * callbacks). The agent checks the ABI version before calling anything else, hands
 * init() the plugin's own `config:` map and a host table (logging, config access,
 * clock), then calls apply() once per accepted group version with the complete new
 * item list and the delta against what this subscriber last accepted.
 *
 * Rules of the road:
 *  - Callbacks are never called concurrently: init() and fini() run in the agent's main
 *    thread at start-up and shutdown, apply() and tick() in its one dispatcher thread in
 *    between. A plugin needs no locks for its own state.
 *  - The same shared object may be configured as several instances; keep all state in
 *    the pointer init() returns, never in globals.
 *  - All memory passed to a callback belongs to the agent and stays valid only for the
 *    duration of that call. Copy what you keep.
 *  - Return 0 on success. Any other value rejects the change: the agent logs and counts
 *    it and later delivers a change from what this subscriber last accepted, with backoff.
 *    Never abort() or exit(): the gateway's other subscribers depend on the process.
 *  - Strings are NUL-terminated UTF-8; a field the admin sent as null, or did not send,
 *    is NULL (strings), GW_UNSET (booleans) or GW_INT_UNSET (integers).
 *
 * Compatibility: GWSYNC_SUBSCRIBER_ABI changes whenever a struct here changes in a way
 * that breaks compiled plugins; the agent refuses a plugin built for another version.
 */
#ifndef GWSYNC_SUBSCRIBER_H
#define GWSYNC_SUBSCRIBER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header describes. Put it in gw_subscriber.abi. */
#define GWSYNC_SUBSCRIBER_ABI 1

/** Name of the one symbol a plugin exports (see gwsync_subscriber()). */
#define GWSYNC_SUBSCRIBER_SYMBOL "gwsync_subscriber"

/** Configuration groups, as the admin names them (gw_group_name() gives the text). */
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
 * and `json` is the item. `json` is always the item's raw JSON text exactly as the admin
 * sent it, so fields this header does not model are never lost.
 */
struct gw_item {
	enum gw_group group;
	const char *key;  /* id; appKey for APP_AUTH; never NULL */
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
	const char *md5; /* NULL in gw_change.previous when nothing was delivered */
	int64_t last_modify_time;
};

/** An item present before and after a change whose JSON differs. */
struct gw_update {
	const struct gw_item *old_item;
	const struct gw_item *new_item;
};

/**
 * One change of one group, as seen by one subscriber: from the version it last accepted
 * (`previous`) to the newest (`version`). Intermediate versions that arrived while the
 * plugin was busy are coalesced away. Items whose JSON did not change are in `items`
 * but in none of the delta lists. An empty `items` with everything in `removed` means
 * the admin deleted every item of the group: clear it.
 */
struct gw_change {
	enum gw_group group;
	const char *group_name; /* "PLUGIN", "SELECTOR", ... */
	struct gw_version version;
	struct gw_version previous;
	const struct gw_item *items; /* the complete new list, in the admin's order */
	size_t n_items;
	const struct gw_item *const *added;
	size_t n_added;
	const struct gw_update *updated;
	size_t n_updated;
	const struct gw_item *const *removed;
	size_t n_removed;
	int stale; /* 1: data loaded from the local snapshot, not (yet)
	            * confirmed by an admin */
};

/** Log levels for gw_host.log. */
enum gw_log_level { GW_LOG_ERROR = 0, GW_LOG_WARN, GW_LOG_INFO, GW_LOG_DEBUG };

/** Results of the config getters. */
enum gw_config_result {
	GW_CONFIG_OK = 0,      /* found and converted; *out set */
	GW_CONFIG_ABSENT = 1,  /* key not present (or null); *out untouched: keep your default */
	GW_CONFIG_INVALID = -1 /* present but of the wrong type or form; the host has logged
	                        * FILE:LINE:COL and the key; fail init() */
};

/** The plugin's own `config:` map from the agent's YAML; read-only, opaque. */
struct gw_config;

/**
 * What the agent offers a plugin. Valid from init() until fini() returns. Every function
 * takes the host pointer itself first so a plugin needs no globals.
 */
struct gw_host {
	int abi;                   /* GWSYNC_SUBSCRIBER_ABI of the agent */
	const char *agent_version; /* e.g. "0.1.0" */
	const char *instance;      /* the subscriber's `name:` from the YAML */

	/** Log one line, tagged with the instance name. Never log secrets. */
	void (*log)(const struct gw_host *host, enum gw_log_level level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

	/** Record why the current apply() fails (shown in logs and /status), then return
	 *  non-zero from apply(). */
	void (*error)(const struct gw_host *host, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

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

	/** Monotonic clock in milliseconds (the clock tick() deadlines use). */
	int64_t (*now_ms)(const struct gw_host *host);

	void *priv; /* the agent's; do not touch */
};

/** The static description a plugin exports. */
struct gw_subscriber {
	int abi;          /* must be GWSYNC_SUBSCRIBER_ABI */
	const char *name; /* the plugin's name, e.g. "file" */

	/** Build private state from `config` (may be an empty map). Return 0 and set *state,
	 *  or non-zero after host->error() says why (that message becomes the reason in the
	 *  start-up error); start-up then stops. Optional. */
	int (*init)(const struct gw_host *host, const struct gw_config *config, void **state);

	/** Apply one change atomically from the gateway's point of view. Required. */
	int (*apply)(void *state, const struct gw_change *change);

	/** Deferred work (debounced reloads...). Called once when delivery starts, after
	 *  every apply() (accepted or not) and whenever the deadline it last returned has
	 *  passed, also while delivery is paused. Return the next deadline on the now_ms()
	 *  clock, or -1 for none. Optional. */
	int64_t (*tick)(void *state, int64_t now_ms);

	/** Finish deferred work and free the state. Optional. */
	void (*fini)(void *state);
};

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

/** Text name of a group ("PLUGIN"...), or NULL if out of range. Header-only. */
static inline const char *gw_group_name(enum gw_group g)
{
	static const char *const names[GW_GROUP_COUNT] = {"PLUGIN",
	                                                  "SELECTOR",
	                                                  "RULE",
	                                                  "APP_AUTH",
	                                                  "META_DATA",
	                                                  "PROXY_SELECTOR",
	                                                  "DISCOVER_UPSTREAM",
	                                                  "AI_PROXY_API_KEY"};
	return (unsigned)g < GW_GROUP_COUNT ? names[g] : NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* GWSYNC_SUBSCRIBER_H */
