/*
 * gwsyncd: the daemon's lifecycle, and the only place that exits.
 *
 *   configuration -> log -> subscribers (dlopen, init) -> store
 *   -> start-up full fetch -> dispatcher thread + one poller thread per admin server
 *   -> wait for a signal -> stop pollers, then the dispatcher, then free everything.
 *
 * Signals are blocked in every thread and taken synchronously here with sigwait(), so no
 * code runs in a signal handler and the stop path is ordinary code.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "dispatch.h"
#include "log.h"
#include "options.h"
#include "poller.h"
#include "startup.h"
#include "store.h"
#include "subscribers.h"

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
	struct dispatcher *dispatcher;
	struct poller **pollers;
	size_t n_pollers;
};

static void agent_free(struct agent *a)
{
	for (size_t i = 0; i < a->n_pollers; i++)
		poller_stop(a->pollers[i]);
	for (size_t i = 0; i < a->n_pollers; i++)
		poller_join(a->pollers[i]);
	free(a->pollers);
	if (a->dispatcher)
		dispatcher_stop(a->dispatcher);
	subscribers_free(a->subs);
	store_free(a->store);
	cfg_free(a->cfg);
	gw_log_close(a->log);
}

/* Configuration, log and subscribers: everything that can be a configuration error. */
static int agent_configure(struct agent *a)
{
	struct gw_err err = {{0}};
	if (cfg_load(a->opt.config_path, &a->cfg, &err) != 0) {
		fprintf(stderr, "gwsyncd: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	enum gw_log_level level =
	    a->opt.log_level >= 0 ? (enum gw_log_level)a->opt.log_level : a->cfg->log_level;
	const char *file = a->opt.mode == MODE_CHECK ? NULL : a->cfg->log_file;
	if (gw_log_open(&a->log, level, a->cfg->log_format, file, &err) != 0) {
		fprintf(stderr, "gwsyncd: %s\n", err.msg);
		return EXIT_CONFIG;
	}
	gw_log_secret(a->log, a->cfg->password);
	if (subscribers_load(a->cfg, a->log, &a->subs, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_CONFIG;
	}
	return EXIT_OK;
}

static int run_once(struct agent *a)
{
	struct gw_err err = {{0}};
	if (startup_fetch(a->cfg, a->store, a->log, &err) != 0) {
		LOG_E(a->log, "main", "--once: could not sync: %s", err.msg);
		return EXIT_RUNTIME;
	}
	int failed = dispatch_once(a->subs, a->store, a->cfg, a->log);
	if (failed) {
		LOG_E(a->log, "main", "--once: %d subscriber deliveries failed", failed);
		return EXIT_RUNTIME;
	}
	LOG_I(a->log, "main", "--once: synced and delivered");
	return EXIT_OK;
}

static int run_daemon(struct agent *a, const sigset_t *sigs)
{
	struct gw_err err = {{0}};
	LOG_I(a->log, "main", "gwsyncd %s starting: %zu admin server(s), %zu group(s), %zu subscriber(s)",
	      GWSYNC_VERSION, a->cfg->n_servers, a->cfg->n_groups, a->cfg->n_subscribers);
	if (dispatcher_start(&a->dispatcher, a->subs, a->store, a->cfg, a->log, &err) != 0) {
		LOG_E(a->log, "main", "%s", err.msg);
		return EXIT_RUNTIME;
	}
	if (startup_fetch(a->cfg, a->store, a->log, &err) != 0)
		LOG_W(a->log, "main", "start-up fetch failed (%s); not ready, the pollers keep trying",
		      err.msg);

	a->pollers = calloc(a->cfg->n_servers, sizeof *a->pollers);
	if (!a->pollers) {
		LOG_E(a->log, "main", "out of memory");
		return EXIT_RUNTIME;
	}
	for (size_t i = 0; i < a->cfg->n_servers; i++) {
		if (poller_start(&a->pollers[i], a->cfg, i, a->store, a->log, &err) != 0) {
			LOG_E(a->log, "main", "%s", err.msg);
			return EXIT_RUNTIME;
		}
		a->n_pollers++;
	}

	for (;;) {
		int sig = 0;
		if (sigwait(sigs, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			if (gw_log_reopen(a->log, &err) != 0)
				LOG_E(a->log, "main", "SIGHUP: %s", err.msg);
			else
				LOG_I(a->log, "main", "SIGHUP: log file reopened");
			continue;
		}
		LOG_I(a->log, "main", "%s received, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		return EXIT_OK;
	}
}

int main(int argc, char **argv)
{
	struct agent a;
	memset(&a, 0, sizeof a);
	char msg[256];
	if (options_parse(argc, argv, &a.opt, msg, sizeof msg) != 0) {
		fprintf(stderr, "gwsyncd: %s\n%s", msg, options_usage());
		return EXIT_CONFIG;
	}
	if (a.opt.mode == MODE_HELP) {
		fputs(options_usage(), stdout);
		return EXIT_OK;
	}
	if (a.opt.mode == MODE_VERSION) {
		printf("gwsyncd %s (subscriber ABI %d)\n", GWSYNC_VERSION, GWSYNC_SUBSCRIBER_ABI);
		return EXIT_OK;
	}

	/* Block the signals we handle before any thread exists, so every thread inherits
	 * the mask and only sigwait() sees them; a closed admin socket must not kill us. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	int rc = agent_configure(&a);
	if (rc == EXIT_OK && a.opt.mode == MODE_CHECK) {
		printf("configuration OK: %s (%zu admin server(s), %zu group(s), %zu subscriber(s) loaded)\n",
		       a.opt.config_path, a.cfg->n_servers, a.cfg->n_groups, a.cfg->n_subscribers);
	} else if (rc == EXIT_OK) {
		a.store = store_new();
		if (!a.store)
			rc = EXIT_RUNTIME;
		else if (a.opt.mode == MODE_ONCE)
			rc = run_once(&a);
		else
			rc = run_daemon(&a, &sigs);
	}
	agent_free(&a);
	return rc;
}
