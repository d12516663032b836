/*
 * The machinery of the configuration loader (config.c): a map of the YAML file is walked
 * against a table of its known keys (struct key), each key naming the function that
 * converts its value and where the result goes. Unknown keys, "did you mean" suggestions,
 * positioned messages ("FILE:LINE:COL: key.path: ...") and the generic conversions
 * (string, duration, size, number, boolean, nested map) live here once; the loaders of
 * particular keys live in config_admin.c and config.c.
 *
 * Conventions: every loader returns 0, or -1 with ld->err filled; `path` is the dotted key
 * path for messages ("admin.retry.interval", "subscribers[1].name"); `base` is the struct
 * that key->off is an offset into (struct cfg, or one struct cfg_subscriber), or NULL to
 * check a value without keeping it (a plugin's declared options, plugin_options.c).
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
	/* nodes kept for the checks that involve several keys (NULL: key absent) */
	const struct ynode *admin, *read_timeout, *hold, *username, *password, *password_file;
	const struct ynode *cert_file, *key_file;
	const struct ynode *first_server, *websocket, *ws_token, *ws_token_file;
	const struct ynode *status_token, *status_token_file;
	const struct ynode *zookeeper, *etcd, *groups, *kv_root;
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
};

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

/* A list of words, or one comma-separated string of them (spaces around commas ignored);
 * calls `each` per word with the node to point messages at. An empty list or an empty
 * entry is refused. */
typedef int (*word_fn)(struct loader *ld, const struct ynode *at, const char *path,
                       const char *word, size_t len);
int cfgw_each_word(struct loader *ld, const struct ynode *v, const char *path, const char *what,
                   word_fn each);

#endif
