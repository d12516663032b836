/*
 * The machinery of the configuration loader (config.c): a map of the YAML file is walked
 * against a table of its known keys (struct key), each key naming the function that
 * converts its value and where the result goes. Unknown keys, "did you mean" suggestions,
 * positioned messages ("FILE:LINE:COL: key.path: ...") and the generic conversions
 * (string, duration, size, number, boolean, nested map) live here once; the loaders of
 * particular keys live in config_admin.c and config.c, and in the sources' own sections
 * (struct cfg_section).
 *
 * Conventions: every loader returns 0, or -1 with ld->err filled; `path` is the dotted key
 * path for messages ("admin.retry.interval", "subscribers[1].name"); `base` is the struct
 * that key->off is an offset into (struct cfg, one struct cfg_subscriber, or a source
 * section's settings), or NULL to check a value without keeping it (a plugin's declared
 * options, plugin_options.c).
 */
#ifndef GW_CONFIG_WALK_H
#define GW_CONFIG_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "config/ytree.h"

struct loader {
	struct cfg *cfg;
	struct gw_err *err;
	const struct ynode *root; /* the document */
	/* nodes kept for the checks that involve several keys (NULL: key absent) */
	const struct ynode *username, *password, *password_file;
	const struct ynode *cert_file, *key_file;
	const struct ynode *status_token, *status_token_file;
	const struct ynode *groups;
	/* the top level's table (NULL: none), to say where an unknown key belongs */
	const struct key *root_keys;
	/* the map of each source section (cfg->sections[i]); NULL: absent */
	const struct ynode *section[CFG_SECTIONS_MAX];
};

struct key;
typedef int (*load_fn)(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base);

/* One known key of one level of the file. Tables end with a NULL name. */
struct key {
	const char *name;
	load_fn load;
	size_t off;            /* where the value goes in `base` */
	int64_t min, max;      /* numbers and durations */
	const struct key *sub; /* a nested map: its table */
	/* The keys a source declares (struct cfg_section) say more, as a plugin's gw_option
	 * does: */
	const char *def;  /* the default as written in the file ("10m"), loaded through `load`
	                   * before the file's value (only a key whose loader has no other
	                   * effect); NULL: none (zero, or a default derived by the check) */
	const char *help; /* one line of documentation; NULL for the agent's own keys (the man
	                   * page documents those) */
	int in_cfg;       /* 1: the value goes into the struct cfg field every source section
	                   * shares (groups, namespace, retry, tls, credentials, timeouts), not
	                   * into the section's own settings */
};
#define CFGW_NODOC NULL, NULL, 0

/*
 * A section of the file that a source declares in its own folder (source/NAME/config.c, or
 * the part two sources share: source/admin/, source/kv/), listed by the source registry and
 * handed to the loader by its caller (cfg_load()), so a new source adds its keys without
 * changing this folder, and this folder knows no source. Its settings are a struct of its
 * own, zeroed, given every key's default, filled by the walk and completed by `check`; a
 * source reads them with cfg_settings(). A section at the top level ("admin", "zookeeper")
 * is a source section: an agent has exactly one. A section with a parent ("websocket" in
 * "admin") is a map inside that section, for the source that shares it, checked after it.
 */
struct cfg_section {
	const char *name;       /* its key */
	const char *parent;     /* NULL: the top level; "admin": a map inside admin: */
	const char *what;       /* top level: the words after its key where the sections are
	                         * listed ("admin: (HTTP long-polling or WebSocket)"); NULL: none */
	const struct key *keys; /* its table: offsets into its settings (or struct cfg: in_cfg) */
	size_t size;            /* of its settings struct */
	/* After the walk, when the section is the source section in use (top level) or inside
	 * it (a parent): checks across keys and values derived from others. `node` is the
	 * section's map, NULL when absent. 0, or -1 with ld->err set. May be NULL. */
	int (*check)(struct loader *ld, const struct ynode *node, void *settings);
	/* Free what the settings own (not the struct itself). May be NULL. */
	void (*free)(void *settings);
	/* A secret among the settings (a token), masked in every log line and dropped from
	 * the environment like the password; NULL (or a NULL function) for none. */
	const char *(*secret)(const void *settings);
};

/* (config.c) A struct cfg with every default filled, for the entry points; NULL on out of
 * memory. */
struct cfg *cfg_new(void);
/* (config.c) control_socket: STATE_DIR/control.sock unless set; "" turns it off. */
int cfg_default_control_socket(struct cfg *c, struct gw_err *err);

/* The keys every source section may share with admin:, filling struct cfg (in_cfg). */
extern const struct key cfg_retry_keys[];
extern const struct key cfg_tls_keys[];

/* "FILE:LINE:COL: PATH: message" at node `at`; path may be NULL. Returns -1. */
int cfgw_err(struct loader *ld, const struct ynode *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A duration as a message shows it: "60s", "90s", "2m", "250ms". */
void cfgw_fmt_duration(char *buf, size_t cap, int64_t ms);

/* "parent.key", or "key" at the top. */
void cfgw_path_join(char *buf, size_t cap, const char *parent, const char *key);

/* The text of a scalar, or NULL after "expected EXPECTED, got a map" (or a list). */
const char *cfgw_scalar(struct loader *ld, const struct ynode *v, const char *path,
                        const char *expected);

/* The char * field at k->off in base. */
char **cfgw_field_str(void *base, const struct key *k);

/* Walk `map` against `keys`. A null value counts as absent: the default stays. */
int cfgw_map(struct loader *ld, const struct ynode *map, const struct key *keys, const char *path,
             void *base);

/* Generic loaders for struct key.load. */
int cfgw_string(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base); /* char *; empty refused */
int cfgw_optional_string(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base); /* char *; empty leaves NULL */
int cfgw_duration(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base); /* int64_t ms, k->min..k->max */
int cfgw_size(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base); /* int64_t bytes, >= k->min */
int cfgw_int(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
             void *base); /* int, k->min..k->max */
int cfgw_mode(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base); /* unsigned, an octal file mode ("0640") */
int cfgw_bool(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base); /* int 0/1 */
int cfgw_submap(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base); /* walks k->sub */
/* resync_interval: a duration, 0 (off) or at least 1s. */
int cfgw_resync_interval(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base);

/* A list of words, or one comma-separated string of them (spaces around commas ignored);
 * calls `each` per word with the node to point messages at (and `base`, the loader's). An empty
 * list or an empty entry is refused. */
typedef int (*word_fn)(struct loader *ld, const struct ynode *at, const char *path,
                       const char *word, size_t len, void *base);
int cfgw_each_word(struct loader *ld, const struct ynode *v, const char *path, const char *what,
                   word_fn each, void *base);

#endif
