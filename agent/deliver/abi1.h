/*
 * Plugins built against subscriber ABI 1 keep working: this is ABI 1's layout (from
 * tests/abi1/gwsync/subscriber.h, the header as it was released, prefixed gw1_ here so it
 * sits beside ABI 2), and an adapter that puts an ABI-2 face on an ABI-1 plugin. The
 * loader swaps the plugin's description for an ABI-2 one whose callbacks convert each
 * change to the ABI-1 shapes (a contiguous item array, no size fields, previous's
 * last_modify_time 0 on a first change) and call the plugin with an ABI-1 host table.
 * Nothing else in the agent knows ABI 1 exists.
 */
#ifndef GW_ABI1_H
#define GW_ABI1_H

#include <gwsync/subscriber.h>

struct gw1_host;

struct gw1_item {
	enum gw_group group;
	const char *key;
	const char *name;
	const char *json;
	size_t json_len;
	const struct gw_plugin_data *plugin;
	const struct gw_selector_data *selector;
	const struct gw_rule_data *rule;
	const struct gw_app_auth_data *app_auth;
	const struct gw_meta_data *meta;
};

struct gw1_update {
	const struct gw1_item *old_item;
	const struct gw1_item *new_item;
};

struct gw1_change {
	enum gw_group group;
	const char *group_name;
	struct gw_version version;
	struct gw_version previous;
	const struct gw1_item *items;
	size_t n_items;
	const struct gw1_item *const *added;
	size_t n_added;
	const struct gw1_update *updated;
	size_t n_updated;
	const struct gw1_item *const *removed;
	size_t n_removed;
	int stale;
};

struct gw1_host {
	int abi;
	const char *agent_version;
	const char *instance;
	void (*log)(const struct gw1_host *host, enum gw_log_level level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
	void (*error)(const struct gw1_host *host, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
	enum gw_config_result (*config_string)(const struct gw1_host *host,
	                                       const struct gw_config *config, const char *key,
	                                       const char **out);
	enum gw_config_result (*config_int)(const struct gw1_host *host,
	                                    const struct gw_config *config, const char *key,
	                                    int64_t *out);
	enum gw_config_result (*config_bool)(const struct gw1_host *host,
	                                     const struct gw_config *config, const char *key,
	                                     int *out);
	enum gw_config_result (*config_duration_ms)(const struct gw1_host *host,
	                                            const struct gw_config *config, const char *key,
	                                            int64_t *out);
	enum gw_config_result (*config_mode)(const struct gw1_host *host,
	                                     const struct gw_config *config, const char *key,
	                                     unsigned *out);
	int64_t (*now_ms)(const struct gw1_host *host);
	void *priv;
};

struct gw1_subscriber {
	int abi; /* 1 */
	const char *name;
	int (*init)(const struct gw1_host *host, const struct gw_config *config, void **state);
	int (*apply)(void *state, const struct gw1_change *change);
	int64_t (*tick)(void *state, int64_t now_ms);
	void (*fini)(void *state);
};

/* The adapter: owned by the loader, one per ABI-1 subscriber. */
struct abi1 {
	const struct gw1_subscriber *desc; /* the plugin's own description */
	struct gw_subscriber face;         /* the ABI-2 description the agent uses */
	struct gw1_host host;              /* what the plugin sees; priv: this adapter */
	const struct gw_host *host2;       /* the ABI-2 host it forwards to */
	void *state;                       /* what the plugin's init() returned */
};

/*
 * A new adapter for the ABI-1 description `desc` (its abi already checked), whose host
 * forwards to `host2` (the subscriber's ABI-2 host table, which must outlive it). The
 * face's init() stores the adapter itself as the agent-side state. NULL on out of memory.
 */
struct abi1 *abi1_new(const void *desc, const struct gw_host *host2);
void abi1_free(struct abi1 *a);

#endif
