/*
 * The `file` subscriber: keeps one JSON file per group, <dir>/<GROUP>.json, always the
 * complete newest version, for gateways and tools that read configuration from disk:
 *
 *   {"group": "RULE", "md5": "...", "lastModifyTime": N, "data": [ITEM,ITEM,...]}
 *
 * Each ITEM is the item's raw JSON exactly as the admin sent it, in the admin's order, so
 * nothing the admin sends is lost or reformatted. Files are replaced atomically
 * (agent/shared/atomic_file.c); an optional check_command vets the new file before it replaces the
 * old one (a rejection keeps the old file and rejects the change, so the agent retries
 * it later), and an optional reload_command runs after changes, debounced (debounce.c),
 * through tick(). See README.md for the options.
 */
#include <gwsync/subscriber.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "shared/groupdoc.h"
#include "command.h"
#include "debounce.h"

/* Defaults live in the declaration (file_options); these are for a host without one. */
/* 0640: APP_AUTH carries each app's appSecret and AI_PROXY_API_KEY the real API keys, so
 * the files are for the gateway's group, not for every local user (a world-readable mode
 * needs allow_world_readable: true). */
#define DEFAULT_MODE     0640
#define DEFAULT_DEBOUNCE 200
#define DEFAULT_DEB_MAX  2000
#define DEFAULT_TIMEOUT  30000
#define MAX_OUTPUT_LINES 20

struct file_state {
	const struct gw_host *host;
	char *dir;
	unsigned mode;
	char *check_command;
	char *reload_command;
	int64_t timeout_ms;
	struct debounce reload;
	unsigned reload_groups; /* one bit per enum gw_group changed since the last reload */
	int swept;              /* the directory made and crash leftovers removed (at the first
	                         * apply, not in init: `gwsyncd --check` runs init, and a
	                         * validator must change nothing, beside a live agent or not) */
};

/* Remove temporary files a writer killed mid-write left in dir (the real files are whole). */
static void sweep_temporaries(struct file_state *st)
{
	const struct gw_host *host = st->host;
	st->swept = 1;
	for (int g = 0; g < host->group_count(host); g++) {
		char name[64];
		snprintf(name, sizeof name, "%s.json", host->group_name(host, (enum gw_group)g));
		int n = atomic_file_sweep(st->dir, name);
		if (n)
			host->log(host, GW_LOG_INFO,
			          "removed %d temporary file(s) of %s left by a crash", n, name);
	}
}

static void file_fini(void *state, const struct gw_host *host);

/* ---------------------------------------------------------------- options */

static int opt_string(struct file_state *st, const struct gw_config *config, const char *key,
                      char **out)
{
	const struct gw_host *h = st->host;
	const char *v = NULL;
	enum gw_config_result r = h->config_string(h, config, key, &v);
	if (r == GW_CONFIG_INVALID)
		return -1;
	if (r == GW_CONFIG_ABSENT || !v || !*v)
		return 0;
	*out = strdup(v);
	if (!*out) {
		h->error(h, "out of memory");
		return -1;
	}
	return 0;
}

static int opt_duration(struct file_state *st, const struct gw_config *config, const char *key,
                        int64_t *out)
{
	const struct gw_host *h = st->host;
	if (h->config_duration_ms(h, config, key, out) == GW_CONFIG_INVALID)
		return -1;
	if (*out < 0) {
		h->error(h, "%s: must not be negative", key);
		return -1;
	}
	return 0;
}

static int file_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct file_state *st = calloc(1, sizeof *st);
	if (!st) {
		host->error(host, "out of memory");
		return -1;
	}
	st->host = host;
	st->mode = DEFAULT_MODE;
	st->timeout_ms = DEFAULT_TIMEOUT;
	int64_t quiet = DEFAULT_DEBOUNCE, ceiling = DEFAULT_DEB_MAX;
	int world = 0;

	if (opt_string(st, config, "dir", &st->dir) < 0 ||
	    opt_string(st, config, "check_command", &st->check_command) < 0 ||
	    opt_string(st, config, "reload_command", &st->reload_command) < 0 ||
	    host->config_mode(host, config, "mode", &st->mode) == GW_CONFIG_INVALID ||
	    opt_duration(st, config, "debounce", &quiet) < 0 ||
	    opt_duration(st, config, "debounce_max", &ceiling) < 0 ||
	    opt_duration(st, config, "command_timeout", &st->timeout_ms) < 0 ||
	    host->config_bool(host, config, "allow_world_readable", &world) == GW_CONFIG_INVALID)
		goto fail;
	if (st->mode & 0002) {
		host->error(host,
		            "mode: \"%04o\" lets every local user change the gateway's "
		            "configuration; no write bit for others",
		            st->mode);
		goto fail;
	}
	if ((st->mode & 0004) && !world) {
		host->error(
		    host,
		    "mode: \"%04o\" lets every local user read the files, and APP_AUTH.json "
		    "holds appSecrets, AI_PROXY_API_KEY.json the real API keys; use a group "
		    "mode such as \"0640\", or set allow_world_readable: true",
		    st->mode);
		goto fail;
	}
	if (!st->dir) {
		host->error(host, "dir: required (the directory to keep GROUP.json files in)");
		goto fail;
	}
	if (ceiling < quiet) {
		host->error(host, "debounce_max (%lld ms) is shorter than debounce (%lld ms)",
		            (long long)ceiling, (long long)quiet);
		goto fail;
	}
	if (st->timeout_ms == 0) {
		host->error(host, "command_timeout: must be more than 0");
		goto fail;
	}
	struct gw_err why;
	if (dir_creatable(st->dir, &why) != 0) {
		host->error(host, "dir: %s", why.msg);
		goto fail;
	}
	debounce_init(&st->reload, quiet, ceiling);
	host->log(host, GW_LOG_INFO, "writing group files to %s (mode %04o)%s%s", st->dir, st->mode,
	          st->check_command ? ", with check_command" : "",
	          st->reload_command ? ", with reload_command" : "");
	*state = st;
	return 0;
fail:
	file_fini(st, host);
	return -1;
}

/* ---------------------------------------------------------------- commands */

static void log_output(struct file_state *st, enum gw_log_level level, const char *what,
                       const struct command_result *r)
{
	const struct gw_host *h = st->host;
	const char *p = r->output;
	for (int lines = 0; *p && lines < MAX_OUTPUT_LINES; lines++) {
		size_t n = strcspn(p, "\n");
		if (n > 0)
			h->log(h, level, "%s: %.*s", what, (int)n, p);
		p += n + (p[n] == '\n');
	}
	if (*p || r->truncated)
		h->log(h, level, "%s: (more output not shown)", what);
}

/* `groups` is a bit set; the variables list the groups and files space-separated. */
static int run(struct file_state *st, const char *what, const char *command, unsigned groups,
               const char *file, struct command_result *r)
{
	size_t cap = 64 + GW_GROUP_COUNT * (strlen(st->dir) + 32) + (file ? strlen(file) : 0);
	char *group_var = malloc(cap), *file_var = malloc(cap), *dir_var = malloc(cap);
	if (!group_var || !file_var || !dir_var) {
		free(group_var);
		free(file_var);
		free(dir_var);
		snprintf(r->summary, sizeof r->summary, "out of memory");
		r->ok = 0;
		return -1;
	}
	size_t gl = (size_t)snprintf(group_var, cap, "GWSYNC_GROUP=");
	size_t fl = (size_t)snprintf(file_var, cap, "GWSYNC_FILE=");
	snprintf(dir_var, cap, "GWSYNC_DIR=%s", st->dir);
	const char *sep = "";
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		if (!(groups & (1u << g)))
			continue;
		const char *gname = st->host->group_name(st->host, (enum gw_group)g);
		gl += (size_t)snprintf(group_var + gl, cap - gl, "%s%s", sep, gname);
		if (!file)
			fl += (size_t)snprintf(file_var + fl, cap - fl, "%s%s/%s.json", sep,
			                       st->dir, gname);
		sep = " ";
	}
	if (file)
		snprintf(file_var + fl, cap - fl, "%s", file);
	const char *extra[] = {group_var, file_var, dir_var, NULL};

	int64_t t0 = st->host->now_ms(st->host);
	int rc = command_run(command, extra, st->timeout_ms, r);
	int64_t ms = st->host->now_ms(st->host) - t0;
	const struct gw_host *h = st->host;
	if (rc == 0) {
		h->log(h, GW_LOG_DEBUG, "%s for %s %s in %lld ms", what, group_var + 13, r->summary,
		       (long long)ms);
		log_output(st, GW_LOG_DEBUG, what, r);
	} else {
		h->log(h, GW_LOG_WARN, "%s for %s: %s (%lld ms)", what, group_var + 13, r->summary,
		       (long long)ms);
		log_output(st, GW_LOG_WARN, what, r);
	}
	free(group_var);
	free(file_var);
	free(dir_var);
	return rc;
}

static void run_reload(struct file_state *st)
{
	unsigned groups = st->reload_groups;
	st->reload_groups = 0;
	debounce_clear(&st->reload);
	struct command_result r;
	if (run(st, "reload_command", st->reload_command, groups, NULL, &r) == 0)
		st->host->log(st->host, GW_LOG_INFO, "reload_command done (%s)", r.summary);
	/* A failed reload is logged by run(); the files are already in place and the next
	 * change will reload again, so there is nothing to retry here. */
}

/* ---------------------------------------------------------------- the document */

/* The change's items, one at a time (GW_SUB_LISTS_ON_DEMAND), for groupdoc_write_each. */
struct reading {
	const struct gw_host *h;
	const struct gw_change *ch;
};

static const char *item_json(void *arg, size_t i, size_t *len)
{
	const struct reading *rd = arg;
	const struct gw_item *it = gw_change_entry(rd->h, rd->ch, GW_LIST_ITEMS, i);
	if (!it)
		return NULL;
	*len = it->json_len;
	return it->json;
}

static int file_apply(void *state, const struct gw_host *h, const struct gw_change *ch)
{
	struct file_state *st = state;
	char name[64];
	struct gw_err why;
	snprintf(name, sizeof name, "%s.json", ch->group_name);
	if (!st->swept) {
		/* the directory's mode follows the files': search where they may be read */
		unsigned dmode = 0700 | (st->mode & 0040 ? 0050 : 0) | (st->mode & 0004 ? 0005 : 0);
		if (make_dirs(st->dir, dmode, &why) < 0) {
			h->error(h, "dir: %s", why.msg);
			return -1;
		}
		sweep_temporaries(st);
	}

	struct atomic_file af;
	if (atomic_file_open(&af, st->dir, name, st->mode, &why) < 0) {
		h->error(h, "%s", why.msg);
		return -1;
	}
	struct reading rd = {h, ch};
	if (groupdoc_write_each(af.fp, ch->group_name, ch->version.md5,
	                        ch->version.last_modify_time, ch->n_items, item_json, &rd) < 0) {
		atomic_file_abort(&af);
		h->error(h, "%s: out of memory reading the items", ch->group_name);
		return -1;
	}
	if (atomic_file_finish(&af, &why) < 0) {
		atomic_file_abort(&af);
		h->error(h, "%s", why.msg);
		return -1;
	}
	if (st->check_command) {
		struct command_result r;
		if (run(st, "check_command", st->check_command, 1u << ch->group, af.tmp, &r) < 0) {
			char last[200];
			command_last_line(&r, last, sizeof last);
			atomic_file_abort(&af);
			h->error(h, "check_command %s%s%s; kept the old %s/%s", r.summary,
			         last[0] ? ": " : "", last, st->dir, name);
			return -1;
		}
	}
	if (atomic_file_commit(&af, &why) < 0) {
		atomic_file_abort(&af);
		h->error(h, "%s", why.msg);
		return -1;
	}
	h->log(h, GW_LOG_DEBUG, "wrote %s/%s (%zu items)", st->dir, name, ch->n_items);
	if (st->reload_command && (unsigned)ch->group < 32) {
		debounce_note(&st->reload, h->now_ms(h));
		st->reload_groups |= 1u << ch->group;
	}
	return 0;
}

static int64_t file_tick(void *state, const struct gw_host *host, int64_t now_ms)
{
	struct file_state *st = state;
	if (debounce_due(&st->reload, now_ms))
		run_reload(st);
	return debounce_deadline(&st->reload);
}

static void file_fini(void *state, const struct gw_host *host)
{
	struct file_state *st = state;
	if (!st)
		return;
	if (st->reload.pending && st->reload_command) {
		st->host->log(st->host, GW_LOG_INFO, "running the pending reload_command");
		run_reload(st);
	}
	free(st->dir);
	free(st->check_command);
	free(st->reload_command);
	free(st);
}

static const struct gw_option file_options[] = {
    {"dir", GW_OPT_PATH, NULL, 1, "the directory to keep GROUP.json files in (created if missing)"},
    {"mode", GW_OPT_MODE, "0640", 0, "the files' mode"},
    {"allow_world_readable", GW_OPT_BOOL, "false", 0,
     "accept a mode every local user can read (the files hold APP_AUTH secrets)"},
    {"check_command", GW_OPT_STRING, NULL, 0,
     "vets each new file before it replaces the old one; non-zero exit rejects the change"},
    {"reload_command", GW_OPT_STRING, NULL, 0,
     "runs after changes, once they have been quiet for `debounce`"},
    {"debounce", GW_OPT_DURATION, "200ms", 0, "the quiet time before reload_command runs"},
    {"debounce_max", GW_OPT_DURATION, "2s", 0,
     "reload_command runs at the latest this long after the first pending change"},
    {"command_timeout", GW_OPT_DURATION, "30s", 0,
     "a command running longer is killed and counts as failed"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gw_subscriber file_subscriber = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "file",
    .description = "keeps one JSON file per group, <dir>/<GROUP>.json, replaced atomically",
    .options = file_options,
    .init = file_init,
    .apply = file_apply,
    .tick = file_tick,
    .fini = file_fini,
    /* writes each item's raw JSON, read one at a time */
    .flags = GW_SUB_TYPED_ON_DEMAND | GW_SUB_LISTS_ON_DEMAND,
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &file_subscriber;
}
