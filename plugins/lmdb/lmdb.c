/*
 * The `lmdb` subscriber: keeps every group in an LMDB environment that any number of gateway
 * processes read at once, without locks and without copies (the contract for readers is
 * docs/lmdb-cache.md; the names are in gwsync/cache.h). This file is the plugin's shell:
 * options, the environment's lifetime and the retry of a commit that found the map full.
 * The filesystem side is cache_env.c, the transaction is cache_write.c.
 *
 * The environment is opened at the first apply(), not in init(): init() also runs under
 * `gwsyncd --check`, which must not create directories or files; it only checks that the
 * path could be created and written.
 *
 * Options: path (required), map_size (1GiB), mode ("0640"), max_readers (126),
 * allow_world_readable (false), change_log (1000). See README.md.
 */
#include <gwsync/subscriber.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_env.h"
#include "cache_write.h"
#include "shared/atomic_file.h"

#define DEFAULT_MAP_SIZE    (1LL << 30)
#define DEFAULT_MODE        0640
#define DEFAULT_MAX_READERS 126
#define MIN_MAP_SIZE        (64LL * 1024)
#define DEFAULT_CHANGE_LOG  1000
/* A bound that keeps generation arithmetic far from overflow; no reader needs more. */
#define MAX_CHANGE_LOG 1000000000LL
/* A commit that finds the map full grows it and runs again; each growth doubles it, so a
 * handful of rounds covers any change that fits on the disk at all. */
#define MAX_GROW_ROUNDS 16

struct lmdb_state {
	const struct gw_host *host;
	struct cache_env ce;
	int64_t change_log; /* generations the change log keeps; 0: none */
	int opened;
};

static void lmdb_fini(void *state, const struct gw_host *host);

static int lmdb_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct lmdb_state *st = calloc(1, sizeof *st);
	if (!st) {
		host->error(host, "out of memory");
		return -1;
	}
	st->host = host;
	st->ce.map_size = DEFAULT_MAP_SIZE;
	st->ce.mode = DEFAULT_MODE;
	st->change_log = DEFAULT_CHANGE_LOG;
	int64_t readers = DEFAULT_MAX_READERS;
	int world = 0;
	const char *path = NULL;

	if (host->config_string(host, config, "path", &path) == GW_CONFIG_INVALID ||
	    host->config_size(host, config, "map_size", &st->ce.map_size) == GW_CONFIG_INVALID ||
	    host->config_mode(host, config, "mode", &st->ce.mode) == GW_CONFIG_INVALID ||
	    host->config_int(host, config, "max_readers", &readers) == GW_CONFIG_INVALID ||
	    host->config_bool(host, config, "allow_world_readable", &world) == GW_CONFIG_INVALID ||
	    host->config_int(host, config, "change_log", &st->change_log) == GW_CONFIG_INVALID)
		goto fail;
	if (!path || !*path) {
		host->error(host, "path: required (the directory of the LMDB environment)");
		goto fail;
	}
	if (st->ce.map_size < MIN_MAP_SIZE) {
		host->error(host, "map_size: at least 64KiB, got %lld bytes",
		            (long long)st->ce.map_size);
		goto fail;
	}
	if (st->change_log < 0 || st->change_log > MAX_CHANGE_LOG) {
		host->error(host, "change_log: between 0 (no log) and %lld generations, got %lld",
		            MAX_CHANGE_LOG, (long long)st->change_log);
		goto fail;
	}
	if (readers < 1 || readers > 65536) {
		host->error(host, "max_readers: between 1 and 65536, got %lld", (long long)readers);
		goto fail;
	}
	if (st->ce.mode & ~0666u) {
		host->error(host,
		            "mode: \"%04o\" sets execute or special bits; the cache's files "
		            "take read and write bits only",
		            st->ce.mode);
		goto fail;
	}
	if ((st->ce.mode & 0600) != 0600) {
		host->error(host, "mode: \"%04o\" must let the owner read and write (0600)",
		            st->ce.mode);
		goto fail;
	}
	if (st->ce.mode & 0022) {
		host->error(
		    host,
		    "mode: \"%04o\" lets others than the owner change the cache; readers need "
		    "read on data.mdb (write on lock.mdb is given to them), so no write bit "
		    "for group or others",
		    st->ce.mode);
		goto fail;
	}
	if ((st->ce.mode & 0004) && !world) {
		host->error(host,
		            "mode: \"%04o\" lets every local user read the cache, which holds "
		            "APP_AUTH secrets and AI proxy API keys; use a group mode such as "
		            "\"0640\", or set allow_world_readable: true",
		            st->ce.mode);
		goto fail;
	}
	st->ce.max_readers = (unsigned)readers;
	st->ce.path = strdup(path);
	if (!st->ce.path) {
		host->error(host, "out of memory");
		goto fail;
	}
	struct gw_err why;
	if (dir_creatable(path, &why) != 0) {
		host->error(host, "path: %s", why.msg);
		goto fail;
	}
	*state = st;
	return 0;
fail:
	lmdb_fini(st, host);
	return -1;
}

static int open_env(struct lmdb_state *st)
{
	struct gw_err why;
	if (cache_env_open(&st->ce, &why) != 0) {
		st->host->error(st->host, "%s", why.msg);
		return -1;
	}
	st->opened = 1;
	st->host->log(st->host, GW_LOG_INFO,
	              "LMDB cache at %s (map %lld bytes, data mode %04o, lock mode %04o)",
	              st->ce.path, (long long)st->ce.map_size, st->ce.mode,
	              cache_env_lock_mode(st->ce.mode));
	return 0;
}

static int cause(void *arg, int rc)
{
	return cache_env_cause(arg, rc);
}

static int lmdb_apply(void *state, const struct gw_host *h, const struct gw_change *ch)
{
	struct lmdb_state *st = state;
	if (!st->opened && open_env(st) != 0)
		return -1;

	struct gw_err why = {0};
	struct cache_write_result res;
	struct cache_writer w = {st->ce.env, (unsigned long long)st->change_log, cause, &st->ce, h};
	for (int round = 0;; round++) {
		int rc = cache_write_change(&w, ch, &res, &why);
		if (rc == 0)
			break;
		if (rc != MDB_MAP_FULL || round == MAX_GROW_ROUNDS) {
			h->error(h, "%s", why.msg);
			return -1;
		}
		int64_t from, to;
		if (cache_env_grow(&st->ce, &from, &to, &why) != 0) {
			h->error(h, "%s: %s", ch->group_name, why.msg);
			return -1;
		}
		h->log(h, GW_LOG_INFO,
		       "%s: map of %s full at %lld bytes: grown to %lld, writing again",
		       ch->group_name, st->ce.path, (long long)from, (long long)to);
	}
	if (res.repaired)
		h->log(h, GW_LOG_WARN,
		       "%s: the cache's database did not hold the last committed version; "
		       "rewrote the group whole",
		       ch->group_name);
	h->log(h, GW_LOG_DEBUG, "%s: committed %s%zu items (+%zu ~%zu -%zu), generation %llu%s",
	       ch->group_name, res.replaced ? "all " : "", res.count, ch->n_added, ch->n_updated,
	       ch->n_removed, res.generation, ch->stale ? ", stale" : "");
	return 0;
}

static void lmdb_fini(void *state, const struct gw_host *host)
{
	struct lmdb_state *st = state;
	if (!st)
		return;
	cache_env_close(&st->ce);
	free(st->ce.path);
	free(st);
}

static const struct gw_option lmdb_options[] = {
    {"path", GW_OPT_PATH, NULL, 1,
     "the environment's directory (created with missing parents at the first change)"},
    {"map_size", GW_OPT_SIZE, "1GiB", 0,
     "the initial memory map, at least 64KiB; doubled when a commit finds it full"},
    {"mode", GW_OPT_MODE, "0640", 0, "data.mdb's mode (read/write bits only)"},
    {"max_readers", GW_OPT_INT, "126", 0,
     "LMDB's reader table, 1 to 65536; fixed when the environment is created"},
    {"allow_world_readable", GW_OPT_BOOL, "false", 0,
     "allow a mode readable by others (the cache holds secrets)"},
    {"change_log", GW_OPT_INT, "1000", 0,
     "generations the `changes` log keeps for gateway readers; 0: no log"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gw_subscriber lmdb_subscriber = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "lmdb",
    .description = "keeps every group in an LMDB environment that gateway processes read",
    .options = lmdb_options,
    .init = lmdb_init,
    .apply = lmdb_apply,
    .fini = lmdb_fini,
    /* keys and raw JSON only, of the items it asks for */
    .flags = GW_SUB_TYPED_ON_DEMAND | GW_SUB_LISTS_ON_DEMAND,
};

GWSYNC_EXPORT const struct gw_subscriber *gwsync_subscriber(void)
{
	return &lmdb_subscriber;
}
