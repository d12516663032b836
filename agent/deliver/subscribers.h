/*
 * The loaded subscriber plugins: one struct subscriber per `subscribers:` entry of the
 * configuration, each a dlopen()ed shared object, its static description, its private
 * state and the host table it was given. Loading checks everything that can be checked
 * before the first change arrives (file found, entry point present, ABI version, apply()
 * present, `config:` matches the declared options, init() succeeds), so a broken plugin
 * stops start-up (and `gwsyncd --check`) instead of failing later in the dispatcher.
 *
 * ABI versions: a plugin of ABI 2 is called directly; one of ABI 1 through an adapter
 * (abi1.h) that the loader puts in place of its description, so everything after loading
 * (the dispatcher, /status) sees ABI 2 only.
 *
 * Where a library is found: `library:` with a '/' is a path used as written; a bare name
 * NAME (or NAME.so) is looked up as NAME.so in each directory of the environment variable
 * GWSYNC_PLUGIN_PATH (colon-separated, first match wins; for tests and development), then
 * in the package library directory (PKGLIBDIR, where `make install` puts the plugins).
 *
 * Threads: subscribers_load() and subscribers_free() run in the main thread; between them
 * only the dispatcher calls subscriber_apply()/subscriber_tick(), never concurrently.
 */
#ifndef GW_SUBSCRIBERS_H
#define GW_SUBSCRIBERS_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/error.h"
#include "core/log.h"
#include "deliver/host.h"

struct abi1;

#define GW_PLUGIN_PATH_ENV "GWSYNC_PLUGIN_PATH"

struct subscriber {
	char *name;                       /* the instance name (`name:`), tags its log lines */
	char *path;                       /* the file that was loaded */
	int abi;                          /* the ABI the plugin was built for (1 or 2) */
	const struct gw_subscriber *desc; /* ABI 2 (for ABI 1: the adapter's face) */
	void *state;                      /* what init() returned */
	int inited;                       /* init() succeeded (or there is none): fini() is owed */
	struct gw_host host;              /* host.priv points to ctx */
	struct host_ctx ctx; /* log, declared options, the last host->error() message */
	struct gw_log *log;
	void *dl;
	int gnutls;      /* it reaches GnuTLS and holds an initialisation (core/memory.h) */
	struct abi1 *v1; /* the ABI-1 adapter, or NULL */
	int typed;       /* reads every item's typed view (no GW_SUB_TYPED_ON_DEMAND) */
	int lists;       /* reads the change's lists (no GW_SUB_LISTS_ON_DEMAND) */
	unsigned groups; /* the groups it takes, bit (1u << group): its `groups:` or every synced
	                  * one; the dispatcher delivers and /status counts only these */
};

struct subscribers {
	struct subscriber *v; /* in configuration order */
	size_t n;
};

/*
 * Load, check and init() every configured subscriber, in order. On any failure everything
 * loaded so far is finished and unloaded and err names the instance, the file and the
 * reason ("subscriber 'files' (line 31): /usr/lib/gwsync/file.so: ..."). *out is set
 * only on success; zero subscribers is a valid result.
 */
int subscribers_load(const struct cfg *cfg, struct gw_log *log, struct subscribers **out,
                     struct gw_err *err);

/* fini() every initialised subscriber (in reverse order), dlclose and free. NULL is fine. */
void subscribers_free(struct subscribers *s);

/*
 * Call the plugin's apply() with `change` (model/abi.h), whose lists are made, or for a
 * plugin that reads them on demand are not: `lazy` is then the delta it shows
 * (host->change_item makes its items). Returns 0, or -1 with the reason the plugin gave
 * through host->error() in `why`, or "apply() returned N" when it gave none.
 */
int subscriber_apply(struct subscriber *s, const struct gw_change *change, struct diff *lazy,
                     struct gw_err *why);

/* A change of one group as the dispatcher hands it to one subscriber: the delta (only
 * counted for a subscriber that reads its lists on demand) and the ABI's change made from
 * it (model/abi.h). */
struct sub_change {
	struct diff d;
	struct abi_change ac;
};

/* Make c, from..to of group g for s (both versions the caller's references: their ABI
 * fields are written). 0, or -1 (why: out of memory). */
int subscriber_change(struct subscriber *s, enum gw_group g, struct group_data *from,
                      struct group_data *to, struct sub_change *c, struct gw_err *why);

/* subscriber_apply() with c. */
int subscriber_apply_change(struct subscriber *s, struct sub_change *c, struct gw_err *why);

void subscriber_change_free(struct sub_change *c);

/* Call the plugin's tick() if it has one; the next deadline (now_ms clock) or -1. A
 * host->error() message from tick() is logged as a warning. */
int64_t subscriber_tick(struct subscriber *s, int64_t now_ms);

/*
 * Where `library` would be loaded from, without loading it: a path as written, or the
 * first NAME.so found on GWSYNC_PLUGIN_PATH then PKGLIBDIR. On failure err lists the
 * places searched.
 */
int subscribers_resolve(const char *library, char *path, size_t cap, struct gw_err *err);

/*
 * Resolve, dlopen and check one plugin (entry point, ABI, apply()) without init(): for
 * --plugin-help. *dl is the handle to dlclose(); *abi the plugin's ABI; *desc its ABI-2
 * description, or NULL for an ABI-1 plugin.
 */
int subscribers_open(const char *library, void **dl, int *abi, const struct gw_subscriber **desc,
                     char *path, size_t cap, struct gw_err *err);

#endif
