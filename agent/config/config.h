/*
 * The agent's configuration: the YAML file (etc/gwsync.yaml) turned into one plain,
 * validated struct. Everything the agent needs is resolved here once ("${VAR}" expanded,
 * secret files read, durations in ms, defaults filled), so no other file parses YAML. A
 * subscriber's own `config:` map is the exception: it is kept as a YAML tree (ytree.h),
 * checked against the plugin's declared options (deliver/plugin_options.h) and read
 * through the host table of the plugin ABI.
 */
#ifndef GW_CONFIG_H
#define GW_CONFIG_H

#include <gwsync/subscriber.h>
#include <stdint.h>

#include "core/error.h"
#include "core/log.h"
#include "model/groups.h"

struct ynode;
struct cfg_section;

#define GW_DEFAULT_NAMESPACE "649330b6-c2d7-4edc-be8e-8a54df9eb385"

struct cfg_subscriber {
	char *name;                 /* instance name, unique */
	char *library;              /* as written: a bare name or a path */
	const struct ynode *config; /* the `config:` map (an empty map if absent); owned by cfg */
	int line;                   /* where the entry starts in the file, for messages */
	int col;
	int library_line, library_col; /* where `library:`'s value is (0: unknown) */
	struct ynode *own_config;      /* private: the empty map made when `config:` is absent */
	int bare_config; /* gwsync-replay: `config` is a file of its own (-c), so messages name
	                  * its keys alone and the entry has no position ("" = no prefix) */
	/* `groups:`, the groups it takes, in the order written (each one synced: checked once
	 * the source section is read); 0 of them: every synced group */
	enum gw_group groups[GW_GROUP_COUNT];
	size_t n_groups;
	const struct ynode *groups_node; /* where `groups:` is, for messages; NULL: absent */
};

struct cfg_tls {
	char *ca_file;
	char *cert_file;
	char *key_file;
	int insecure_skip_verify;
};

/* The most source sections the registry may declare (struct cfg_section). */
#define CFG_SECTIONS_MAX 16

struct cfg {
	char *path; /* the file it came from */
	/* The source section in use: the name of the top-level section a source declares
	 * ("admin", "zookeeper", "etcd"; struct cfg_section). */
	const char *section;

	/* What every source section shares, filled by the section in use (its keys marked
	 * in_cfg, struct cfg_section); the rest of a section is its own settings. */
	char *username;      /* NULL: no login */
	char *password;      /* secret: never log; NULL if neither password nor password_file */
	char *password_file; /* as written, or NULL; the password was read from it */
	char *namespace_id;
	enum gw_group groups[GW_GROUP_COUNT]; /* in the order configured */
	size_t n_groups;
	int64_t connect_timeout_ms;       /* default 10 s */
	int64_t read_timeout_ms;          /* default 90 s; admin: must be > admin.hold */
	int64_t transfer_timeout_ms;      /* default 5 min: the longest a fetch, a login (an etcd
	                                   * call) may take whole; the listener: read_timeout */
	int retry_attempts;               /* default 3 */
	int64_t retry_interval_ms;        /* default 5 s */
	int64_t retry_backoff_ms;         /* default 5 min */
	int64_t retry_startup_backoff_ms; /* default 10 s: the backoff's cap until data is held */
	int64_t max_response;             /* bytes; default 64 MiB */
	struct cfg_tls tls;

	/* gateway: */
	int gateway_port; /* default 0 */

	char *state_dir; /* default /var/lib/gwsync */

	/* log: */
	enum gw_log_level log_level; /* default info */
	enum gw_log_format log_format;
	char *log_file; /* NULL: stderr */

	/* status: */
	char *status_listen; /* "HOST:PORT"; NULL: off */
	char *status_token;  /* secret: never log; allows POST on the endpoint; NULL: read-only */
	char *status_token_file;  /* as written, or NULL; the token was read from it */
	int status_history;       /* versions kept per group for /history (default 50) */
	int status_expose_config; /* GET /config/<GROUP> answers (default 0: 404) */
	char *control_socket;     /* the --pause/--resume socket; NULL: none */

	struct cfg_subscriber *subscribers;
	size_t n_subscribers;

	struct ynode *tree; /* the parsed document; owns the subscriber config maps */

	/* the sources' sections (handed to cfg_load) and their settings: cfg_settings() */
	const struct cfg_section *sections[CFG_SECTIONS_MAX];
	void *settings[CFG_SECTIONS_MAX];
	size_t n_sections;
};

/* The settings of a source's section (its own struct, filled and checked by the load), or
 * NULL when the configuration has none (cfg_load_control, a struct cfg made by hand). */
const void *cfg_settings(const struct cfg *cfg, const struct cfg_section *section);

/* The configured secrets (the password, a source section's token, the status token), for
 * the log to mask and main to drop from the environment: up to `cap` into out, how many. */
size_t cfg_secrets(const struct cfg *cfg, const char **out, size_t cap);

/*
 * Load and validate `path`. `sections`: the sources' sections, NULL-terminated, as the source
 * registry lists them (main asks it: source.h source_config_sections), so this folder knows
 * no source. On error returns -1 with err->msg as "FILE:LINE:COL: message" naming the key
 * (and, for an unknown key, the closest known one). Every such error is a configuration
 * error (exit code 2).
 */
int cfg_load(const char *path, const struct cfg_section *const *sections, struct cfg **out,
             struct gw_err *err);

/* For `gwsyncd --pause` / `--resume`: only what is needed to reach the running agent
 * (state_dir, control_socket, status.listen, status.token or token_file), with ${VAR}
 * expanded in those alone. The rest of the file is not read, so an operator who may use the
 * control socket does not also need the admin password's file or variable. */
int cfg_load_control(const char *path, struct cfg **out, struct gw_err *err);

/* The same from text already in memory; `name` stands for the file in messages (tests,
 * fuzzing). A password_file is still read from disk. */
int cfg_parse(const char *name, const char *text, size_t len,
              const struct cfg_section *const *sections, struct cfg **out, struct gw_err *err);
void cfg_free(struct cfg *cfg);

/* The TLS files of the source section's tls: are still regular files this process can
 * open, checked without blocking (core/readfile.h) right before a library is handed their
 * paths (libcurl opens them at each new connection, libwebsockets at its context's
 * creation), so a file replaced by a FIFO fails one try instead of hanging a thread.
 * -1 with err "SECTION.tls.KEY: PATH: not a regular file (a FIFO)" and the like. */
int cfg_tls_check(const struct cfg *cfg, struct gw_err *err);

/* Group name -> enum gw_group; -1 if unknown (exact, upper case, as the admin spells it).
 * The other way is gw_group_name() in <gwsync/subscriber.h>. */
int cfg_group_parse(const char *name);

#endif
