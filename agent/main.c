/*
 * gwsyncd: the daemon's lifecycle, and the only place that exits.
 *
 *   command line -> client modes (--pause, --resume, --status: the configuration only)
 *   -> signal mask, libcurl, the signal thread (a stop is taken from here on)
 *   -> configuration, log, state_dir, subscribers (dlopen, init) -> store and its ingest
 *   -> --once (one fetch, then deliver) or the daemon: dispatcher thread, pause switch,
 *      control socket, snapshot writer, history, the source (source/source.h: the one the
 *      configuration selects, from one registry of source types) opened, the status
 *      endpoint and systemd notifier, the source's start-up sync (else the snapshot),
 *      then its start
 *   -> wait for a signal -> stop the source, then the dispatcher, then free everything.
 *
 * Signals are blocked in every thread and taken by one signal thread during start-up, then
 * by main itself once everything runs (signals.h), so no code runs in a signal handler and
 * the stop path is ordinary code.
 */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/memory.h"
#include "core/thread.h"
#include "config/config.h"
#include "deliver/dispatch.h"
#include "deliver/plugin_help.h"
#include "core/log.h"
#include "ops/notify.h"
#include "options.h"
#include "ops/control.h"
#include "ops/dryrun.h"
#include "ops/pause.h"
#include "ops/state_dir.h"
#include "source/source.h"
#include "signals.h"
#include "store/history.h"
#include "store/history_file.h"
#include "store/snapshot.h"
#include "ops/status_client.h"
#include "ops/status_server.h"
#include "ops/status_view.h"
#include "store/ingest.h"
#include "store/store.h"
#include "deliver/subscribers.h"

#ifndef GWSYNC_VERSION
#define GWSYNC_VERSION "0.0.0"
#endif

enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_CONFIG = 2 };

/* Everything main owns, freed in reverse order by agent_free(). */
struct agent {
	struct options opt;
	struct cfg *cfg;
	struct gw_log *log;
	struct subscribers *subs;
	struct store *store;
	struct ingest *ingest; /* the sources' way into the store */
	struct dispatcher *dispatcher;
	struct snapshot_writer *snapshots;
	struct signals *signals;
	const struct source_ops *source_ops; /* how versions arrive (source/source.h) */
	struct source *source;
	struct pause_switch *pause;
	struct status_sources status_src; /* what /status and the notifier read */
	struct status_server *status;
	struct notifier *notifier;
	struct control *control;
	struct history *history; /* what changed, for /history, the page and --status */
};

/* The change history: kept from its file in state_dir, fed by the ingest and the dispatcher,
 * written by the snapshot writer (store/history.h). */
static int start_history(struct agent *a, struct gw_err *err)
{
	const char **names = calloc(a->subs->n ? a->subs->n : 1, sizeof *names);
	for (size_t i = 0; names && i < a->subs->n; i++)
		names[i] = a->subs->v[i].name;
	a->history =
	    names ? history_new((size_t)a->cfg->status_history, names, a->subs->n, a->log) : NULL;
	free(names);
	if (!a->history)
		return gw_errf(err, "history: out of memory");
	for (size_t i = 0; i < a->subs->n; i++) /* an entry lists the subscribers it concerns */
		history_set_takes(a->history, i, a->subs->v[i].groups);
	struct gw_err lerr = {0};
	history_load(a->history, a->cfg->state_dir, a->cfg->groups, a->cfg->n_groups, &lerr);
	ingest_set_history(a->ingest, a->history);
	dispatcher_set_history(a->dispatcher, a->history);
	snapshot_writer_set_history(a->snapshots, a->history);
	return 0;
}

/* After the dispatcher: its last outcomes are written too. */
static void stop_history(struct agent *a)
{
	struct gw_err err = {0};
	if (a->history && history_dirty(a->history) &&
	    history_save(a->history, a->cfg->state_dir, &err) != 0)
		LOG_E(a->log, "main", "%s", err.msg);
	history_free(a->history);
	a->history = NULL;
}

static void agent_free(struct agent *a)
{
	/* STOPPING=1 first; both readers of the status sources go before the source. */
	notify_free(a->notifier);
	control_free(a->control);
	status_server_free(a->status);
	if (a->source_ops)
		a->source_ops->free(a->source);
	snapshot_writer_free(a->snapshots);
	if (a->dispatcher)
		dispatcher_free(a->dispatcher);
	stop_history(a);
	pause_close(a->pause);
	subscribers_free(a->subs);
	signals_free(a->signals);
	ingest_free(a->ingest);
	store_free(a->store);
	cfg_free(a->cfg);
	gw_log_close(a->log);
}

/* The password often arrives as ${GWSYNC_ADMIN_PASSWORD}; once it is in the configuration
 * no child process needs it, so drop every environment variable holding it before any
 * plugin can run a command (they inherit the environment). Single-threaded here. */
static void scrub_secret_env(const char *secret)
{
	extern char **environ;
	if (!secret || !*secret)
		return;
	size_t n = strlen(secret);
	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; e && *e; e++) {
			const char *eq = strchr(*e, '=');
			if (eq && strlen(eq + 1) == n && memcmp(eq + 1, secret, n) == 0) {
				char name[256];
				snprintf(name, sizeof name, "%.*s", (int)(eq - *e), *e);
				unsetenv(name); /* environ changed: start over */
				again = 1;
				break;
			}
		}
	}
}

/* Configuration, log and subscribers: everything that can be a configuration error. */
static int agent_configure(struct agent *a)
{
	struct gw_err err = {0};
	/* the sources' sections, from the registry: config/ knows no source */
	const struct cfg_section *sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(sections);
	if (cfg_load(a->opt.config_path, sections, &a->cfg, &err) != 0) {
		fprintf(stderr, "gwsyncd: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	enum gw_log_level level =
	    a->opt.log_level >= 0 ? (enum gw_log_level)a->opt.log_level : a->cfg->log_level;
	/* --check and a dry run write nothing, not even the log file */
	const char *file = a->opt.mode == MODE_CHECK || a->opt.dry_run ? NULL : a->cfg->log_file;
	if (gw_log_open(&a->log, level, a->cfg->log_format, file, &err) != 0) {
		fprintf(stderr, "gwsyncd: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	const char *secrets[4];
	for (size_t i = 0, n = cfg_secrets(a->cfg, secrets, 4); i < n; i++) {
		gw_log_secret_pin(a->log, secrets[i]);
		scrub_secret_env(secrets[i]);
	}
	if (a->opt.dry_run)
		return EXIT_OK; /* a dry run loads no plugin: an init() might touch the system */
	/* before the plugins, which may keep their data inside it (the sample's lmdb cache);
	 * --check only asks whether it could be made */
	int sd = state_dir_prepare(a->cfg->state_dir, a->opt.mode != MODE_CHECK, &err);
	if (sd < 0) {
		fprintf(stderr, "gwsyncd: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	if (sd > 0)
		LOG_W(a->log, "main", "%s", err.msg);
	if (subscribers_load(a->cfg, a->log, &a->subs, &err) != 0) {
		/* a configuration error like any other: FILE:LINE:COL: key: why, untimestamped */
		fprintf(stderr, "gwsyncd: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	return EXIT_OK;
}

static void stop_source(void *arg)
{
	struct agent *a = arg;
	a->source_ops->stop(a->source);
}

/* The source the configuration selects (source/registry.c); opened, not started. */
static int open_source(struct agent *a, struct gw_err *err)
{
	if (!(a->source_ops = source_select(a->cfg)))
		return gw_errf(err, "no source type takes the %s: section",
		               a->cfg->section ? a->cfg->section : "source");
	const struct source_args args = {a->cfg, a->ingest, a->log};
	if (a->source_ops->open(&a->source, &args, err) != 0) {
		a->source_ops = NULL;
		return -1;
	}
	return 0;
}

/* The start-up full sync, interruptible by SIGTERM/SIGINT through the signal thread. */
static int initial_fetch(struct agent *a, struct gw_err *err)
{
	if (!a->source_ops->initial_sync)
		return gw_errf(err, "the %s source has no start-up sync", a->source_ops->type);
	signals_on_stop(a->signals, stop_source, a);
	int rc = a->source_ops->initial_sync(a->source, err);
	signals_on_stop(a->signals, NULL, NULL);
	return rc;
}

/* No admin answered: fall back to the snapshot. Returns the number of groups loaded. */
static size_t load_snapshot(struct agent *a, const char *why)
{
	size_t n =
	    snapshot_load(a->cfg->state_dir, a->cfg->groups, a->cfg->n_groups, a->store, a->log);
	history_held(a->history, a->store, a->cfg->groups, a->cfg->n_groups);
	if (n)
		LOG_W(a->log, "main",
		      "%s; serving %zu of %zu group(s) from the snapshot in %s (STALE until an "
		      "admin answers)",
		      why, n, a->cfg->n_groups, a->cfg->state_dir);
	return n;
}

static int run_once(struct agent *a)
{
	struct gw_err err = {0};
	if (open_source(a, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	if (a->opt.dry_run) {
		if (initial_fetch(a, &err) != 0) {
			if (signals_stopping(a->signals))
				return EXIT_OK;
			LOG_E(a->log, "main", "--dry-run: no admin server answered: %s", err.msg);
			return EXIT_RUNTIME;
		}
		/* what a running agent asks next (long-polling: the listener call), answered at
		 * once, so an admin that would refuse every poll fails the dry run, not the
		 * daemon after its start */
		struct gw_err perr = {0};
		int probe = 0;
		if (a->source_ops->probe) {
			signals_on_stop(a->signals, stop_source, a); /* SIGTERM ends the call */
			probe = a->source_ops->probe(a->source, stdout, &perr);
			signals_on_stop(a->signals, NULL, NULL);
		}
		if (probe != 0 && signals_stopping(a->signals))
			return EXIT_OK;
		if (dryrun_report(a->cfg, a->store, stdout, &err) < 0) {
			LOG_E(a->log, "main", "--dry-run: %s", err.msg);
			return EXIT_RUNTIME;
		}
		if (probe != 0) {
			LOG_E(a->log, "main", "--dry-run: %s", perr.msg);
			return EXIT_RUNTIME;
		}
		return EXIT_OK;
	}
	if (initial_fetch(a, &err) != 0) {
		if (signals_stopping(a->signals))
			return EXIT_OK;
		LOG_E(a->log, "main", "--once: no admin server answered: %s", err.msg);
		if (load_snapshot(a, "--once: no admin answered") == 0) {
			LOG_E(a->log, "main",
			      "--once: could not sync and there is no snapshot in %s",
			      a->cfg->state_dir);
			return EXIT_RUNTIME;
		}
	} else {
		for (size_t i = 0; i < a->cfg->n_groups; i++) {
			struct group_data *gd = store_get(a->store, a->cfg->groups[i]);
			if (gd && snapshot_write(a->cfg->state_dir, gd, &err) != 0)
				LOG_E(a->log, "main", "%s", err.msg);
			group_data_unref(gd);
		}
	}
	int paused = 0;
	if (pause_load(a->cfg->state_dir, &paused, &err) != 0)
		LOG_W(a->log, "main", "%s", err.msg);
	if (paused) {
		LOG_W(a->log, "main",
		      "--once: sync is paused (%s/" PAUSE_FILE " exists): fetched and stored, "
		      "delivered nothing; `gwsyncd --resume` or removing the file resumes",
		      a->cfg->state_dir);
		return EXIT_OK;
	}
	int failed = dispatch_once(a->subs, a->store, a->cfg, a->log);
	if (failed) {
		LOG_E(a->log, "main", "--once: %d subscriber deliveries failed", failed);
		return EXIT_RUNTIME;
	}
	LOG_I(a->log, "main", "--once: synced and delivered");
	return EXIT_OK;
}

/* "2 admin server(s)" or "zookeeper source zookeeper://h:2181/ns/shenyu", for the first
 * lines an operator reads: the selected source's own words. */
static const char *source_summary(const struct cfg *cfg, char *buf, size_t cap)
{
	const struct source_ops *t = source_select(cfg);
	if (t)
		t->summary(cfg, buf, cap);
	else
		snprintf(buf, cap, "no source");
	return buf;
}

/* The notifier's thread ends once ready without systemd: main joins it (its stack goes
 * back), woken in signals_serve(). */
static void wake_main(void *signals)
{
	signals_wake(signals);
}

static void reap_notifier(void *notifier)
{
	notify_reap(notifier);
}

static int run_daemon(struct agent *a)
{
	char summary[512];
	struct gw_err err = {0};
	LOG_I(a->log, "main", "gwsyncd %s starting: %s, %zu group(s), %zu subscriber(s)",
	      GWSYNC_VERSION, source_summary(a->cfg, summary, sizeof summary), a->cfg->n_groups,
	      a->cfg->n_subscribers);
	if (dispatcher_start(&a->dispatcher, a->subs, a->store, a->cfg, a->log, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	/* Before anything is in the store, so a paused agent never delivers a first version. */
	if (pause_open(&a->pause, a->cfg->state_dir, a->log, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	pause_attach(a->pause, a->dispatcher);
	/* Control without exposure: pause/resume on a Unix socket, not on the network. Never
	 * fatal: syncing is the agent's job, and without the socket nothing can be changed. */
	if (a->cfg->control_socket &&
	    control_start(&a->control, a->cfg->control_socket, a->pause, a->log, &err) != 0)
		LOG_W(a->log, "main",
		      "%s; running without the control socket: --pause and --resume will not "
		      "reach this agent",
		      err.msg);
	if (snapshot_writer_start(&a->snapshots, a->cfg->state_dir, a->store, a->log, &err) != 0 ||
	    start_history(a, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	if (open_source(a, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	/* The endpoint answers from now on (503 during the start-up fetch); the notifier
	 * sends READY=1 once the data is in. */
	struct status_sources *src = &a->status_src;
	src->cfg = a->cfg;
	src->store = a->store;
	src->dispatcher = a->dispatcher;
	src->pause = a->pause;
	src->log = a->log;
	src->started_wall_ms = gw_wall_ms();
	src->source_ops = a->source_ops;
	src->source = a->source;
	src->history = a->history;
	control_set_status(a->control, src);
	if (status_server_start(&a->status, src, &err) != 0 ||
	    notify_start(&a->notifier, src, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	if (initial_fetch(a, &err) != 0) {
		if (signals_stopping(a->signals))
			return EXIT_OK;
		LOG_W(a->log, "main", "start-up fetch failed: %s; the source keeps trying",
		      err.msg);
		if (load_snapshot(a, "no admin answered at start") == 0)
			LOG_W(a->log, "main",
			      "no snapshot in %s either: not ready until an admin "
			      "answers",
			      a->cfg->state_dir);
	}

	if (a->source_ops->start(a->source, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}

	LOG_I(a->log, "main", "running: %zu %s, dispatcher, snapshot writer",
	      a->source_ops->conns(a->cfg), a->source_ops->running);
	/* this thread only takes signals from now on (the signal thread ends and its stack
	 * goes back): the start-up's stack pages (the configuration, the
	 * plugins, the start-up sync and its parse) go back */
	gw_thread_shed_stack();
	notify_on_end(a->notifier, wake_main, a->signals); /* no systemd: it ends once ready */
	signals_on_wake(a->signals, reap_notifier, a->notifier);
	signals_serve(a->signals);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	struct agent a;
	memset(&a, 0, sizeof a);
	struct gw_err oerr;
	if (options_parse(argc, argv, &a.opt, &oerr) != 0) {
		fprintf(stderr, "gwsyncd: %s\n%s", oerr.msg, options_usage());
		return EXIT_CONFIG;
	}
	if (a.opt.mode == MODE_HELP) {
		fputs(options_usage(), stdout);
		return EXIT_OK;
	}
	if (a.opt.mode == MODE_PLUGIN_HELP) {
		struct gw_err err = {0};
		if (plugin_help_write(stdout, a.opt.plugin, &err) != 0) {
			fprintf(stderr, "gwsyncd: %s\n", err.msg);
			return EXIT_CONFIG;
		}
		return EXIT_OK;
	}
	if (a.opt.mode == MODE_VERSION) {
		printf("gwsyncd %s (subscriber ABI %d)\n", GWSYNC_VERSION, GWSYNC_SUBSCRIBER_ABI);
		return EXIT_OK;
	}

	if (a.opt.mode == MODE_PAUSE || a.opt.mode == MODE_RESUME || a.opt.mode == MODE_STATUS) {
		/* only the configuration: the running agent owns everything else. Before the
		 * signal mask, so Ctrl-C still ends a client waiting on an agent. */
		struct gw_err err = {0};
		int rc = EXIT_OK;
		if (a.opt.mode == MODE_STATUS && a.opt.status_addr) {
			if (status_client_show_at(a.opt.status_addr, stdout, &err) != 0) {
				fprintf(stderr, "gwsyncd: %s\n", err.msg);
				rc = EXIT_RUNTIME;
			}
		} else if (cfg_load_control(a.opt.config_path, &a.cfg, &err) != 0) {
			/* --status needs the configuration only to find the control socket */
			fprintf(
			    stderr, "gwsyncd: %s%s\n", err.msg,
			    a.opt.mode == MODE_STATUS
			        ? "\n(or name the running agent instead of its configuration: "
			          "its control socket, gwsyncd --status STATE_DIR/control.sock, "
			          "or its status address, gwsyncd --status 127.0.0.1:9196)"
			        : "");
			rc = EXIT_CONFIG;
		} else if ((a.opt.mode == MODE_STATUS
		                ? status_client_show(a.cfg, stdout, &err)
		                : status_client_send(a.cfg, a.opt.mode == MODE_PAUSE, &err)) != 0) {
			fprintf(stderr, "gwsyncd: %s\n", err.msg);
			rc = EXIT_RUNTIME;
		}
		cfg_free(a.cfg);
		return rc;
	}

	/* before any thread exists, so every thread inherits the mask and libcurl's global
	 * state is set up once, single-threaded; then at once the thread that takes the
	 * signals, so SIGTERM is obeyed at every moment of start-up, reading the configuration
	 * included (and nothing read there can block: core/readfile.h) */
	signals_block();
	/* what GnuTLS's constructor built for nothing goes back first, so that libcurl's and
	 * our own allocations fill it (core/memory.h) */
	gw_memory_release_gnutls();
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "gwsyncd: libcurl initialisation failed\n");
		return EXIT_RUNTIME;
	}
	struct gw_err serr = {0};
	if (signals_start(&a.signals, NULL, &serr) != 0) {
		fprintf(stderr, "gwsyncd: cannot start: %s\n", serr.msg);
		curl_global_cleanup();
		return EXIT_RUNTIME;
	}

	int rc = agent_configure(&a);
	signals_set_log(a.signals, a.log);
	if (rc == EXIT_OK && signals_stopping(a.signals)) {
		LOG_I(a.log, "main", "stopped during start-up");
	} else if (rc == EXIT_OK && a.opt.mode == MODE_CHECK) {
		char summary[512];
		printf("configuration OK: %s (%s, %zu group(s), %zu subscriber(s) loaded)\n",
		       a.opt.config_path, source_summary(a.cfg, summary, sizeof summary),
		       a.cfg->n_groups, a.cfg->n_subscribers);
	} else if (rc == EXIT_OK) {
		a.store = store_new();
		a.ingest = a.store ? ingest_new(a.store, a.log) : NULL;
		if (!a.ingest) {
			fprintf(stderr, "gwsyncd: cannot start: out of memory\n");
			rc = EXIT_RUNTIME;
		} else if (a.opt.mode == MODE_ONCE)
			rc = run_once(&a);
		else
			rc = run_daemon(&a);
	}
	agent_free(&a);
	curl_global_cleanup();
	return rc;
}
