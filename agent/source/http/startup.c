/*
 * The start-up full fetch (see startup.h). It uses the same admin client as the pollers,
 * one server at a time; the mutex only guards which admin is current, so that
 * startup_stop() never touches one that is being closed.
 */
#include "source/admin/config.h"
#include "source/http/startup.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/clock.h"
#include "source/http/admin.h"
#include "source/http/poller.h"

struct startup {
	const struct cfg *cfg;
	struct ingest *in;
	struct gw_log *log;
	pthread_mutex_t mu;
	struct admin *cur; /* under mu */
	int stop;          /* under mu */
	size_t served;     /* the server that answered, and when: set before run() returns 0 */
	int64_t served_ms;
};

int startup_new(struct startup **out, const struct cfg *cfg, struct ingest *in, struct gw_log *log,
                struct gw_err *err)
{
	struct startup *s = calloc(1, sizeof *s);
	if (!s)
		return gw_errf(err, "out of memory");
	s->cfg = cfg;
	s->in = in;
	s->log = log;
	pthread_mutex_init(&s->mu, NULL);
	*out = s;
	return 0;
}

void startup_free(struct startup *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void startup_stop(struct startup *s)
{
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	if (s->cur)
		admin_interrupt(s->cur);
	pthread_mutex_unlock(&s->mu);
}

int startup_stopped(struct startup *s)
{
	pthread_mutex_lock(&s->mu);
	int stop = s->stop;
	pthread_mutex_unlock(&s->mu);
	return stop;
}

void startup_served(const struct startup *s, size_t *server, int64_t *at_ms)
{
	*server = s->served;
	*at_ms = s->served_ms;
}

/* One server: open, fetch everything, close. */
static int try_server(struct startup *s, size_t i, struct group_data *got[GW_GROUP_COUNT],
                      struct gw_err *err)
{
	struct admin *a;
	err->kind = SYNC_OK;
	if (admin_open(&a, s->cfg, i, s->log, err) != 0)
		return -1;
	pthread_mutex_lock(&s->mu);
	s->cur = a;
	if (s->stop)
		admin_interrupt(a);
	pthread_mutex_unlock(&s->mu);

	size_t bytes;
	struct group_data *held[GW_GROUP_COUNT] = {NULL};
	for (size_t g = 0; g < s->cfg->n_groups; g++)
		held[s->cfg->groups[g]] = ingest_held(s->in, s->cfg->groups[g]);
	int rc = admin_fetch(a, s->cfg->groups, s->cfg->n_groups, held, got, &bytes, err);
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(held[g]);

	pthread_mutex_lock(&s->mu);
	s->cur = NULL;
	pthread_mutex_unlock(&s->mu);
	admin_close(a);
	return rc;
}

int startup_run(struct startup *s, struct gw_err *err)
{
	const struct cfg *cfg = s->cfg;
	struct gw_err last = {0};
	for (size_t i = 0; i < admin_config(cfg)->n_servers; i++) {
		if (startup_stopped(s))
			return gw_errf(err, "start-up fetch interrupted");
		struct group_data *got[GW_GROUP_COUNT];
		if (try_server(s, i, got, &last) != 0) {
			enum sync_fail why = last.kind;
			if (why == SYNC_STOPPED || startup_stopped(s))
				return gw_errf(err, "start-up fetch interrupted");
			if (i + 1 < admin_config(cfg)->n_servers)
				LOG_W(s->log, "startup", "%s [%s]; trying the next server, %s",
				      last.msg, sync_fail_name(why),
				      admin_config(cfg)->servers[i + 1]);
			else
				LOG_W(s->log, "startup", "%s [%s]", last.msg, sync_fail_name(why));
			continue;
		}
		s->served = i;
		s->served_ms = gw_wall_ms();
		int older = 0;
		size_t n = ingest_offer(s->in, admin_config(cfg)->servers[i], ingest_accept_polled,
		                        cfg->groups, cfg->n_groups, got, &older);
		LOG_I(s->log, "startup", "start-up fetch of %zu groups from %s: %zu accepted",
		      cfg->n_groups, admin_config(cfg)->servers[i], n);
		return 0;
	}
	return gw_errf(err,
	               "no admin server answered the start-up fetch (%zu tried); last "
	               "error: %s",
	               admin_config(cfg)->n_servers, last.msg);
}
