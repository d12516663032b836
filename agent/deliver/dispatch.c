/*
 * The dispatcher thread (see dispatch.h for the delivery model). Everything the thread
 * decides with lives in its own arrays, touched by no other thread; the only shared
 * parts are the stop/pause flags (atomics) and the status copy (a mutex held for a
 * memcpy, never while a plugin runs), so a plugin stuck in apply() does not block
 * /status. Stopping waits for the apply() in progress (a plugin is never unloaded or
 * finished while it runs) and says in the log which plugin it is waiting for.
 */
#include "deliver/dispatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/thread.h"
#include "model/diff.h"
#include "model/groups.h"
#include "store/history.h"

/* One subscriber's view of one group. */
struct sub_group {
	struct group_data *accepted; /* the version it last accepted (a reference) or NULL */
	struct group_data *failed;   /* the version it last rejected (a reference) or NULL */
	int64_t retry_at_ms;         /* when `failed` may be tried again */
	unsigned consecutive;
	int64_t warned_ms; /* when a rejection of this group was last logged as a warning */
	unsigned unwarned; /* rejections since then logged at debug only */
};

struct sub_state {
	struct subscriber *s;
	struct sub_group g[GW_GROUP_COUNT];
	int64_t tick_at_ms; /* -1: no deadline */
};

struct dispatcher {
	struct dispatch_clock clock; /* the retry schedule's */
	struct subscribers *subs;
	struct store *st;
	const struct cfg *cfg;
	struct gw_log *log;
	struct sub_state *ss;                /* subs->n */
	enum gw_group order[GW_GROUP_COUNT]; /* delivery order (dispatch_order) */
	size_t n_order;
	struct group_data *measured[GW_GROUP_COUNT]; /* latency already recorded for it */

	pthread_t thread;
	atomic_int stop;
	atomic_int paused;
	_Atomic(struct history *) history; /* NULL: none kept */

	pthread_mutex_t mu; /* guards status */
	struct dispatch_status status;
	int64_t busy_since_ms;
};

/* The result of one apply() call. */
struct outcome {
	size_t na, nu, nr;
	int64_t ms;
	struct gw_err why; /* on rejection: the plugin's reason, or the delta's failure */
};

/* strncpy that always terminates (and that -Wformat-truncation does not second-guess). */
static void copy(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Build the delta from..to, hand it to the plugin, tick it. 0 accepted, -1 rejected. */
static int deliver(struct subscriber *s, enum gw_group g, struct group_data *from,
                   struct group_data *to, struct gw_log *log, struct outcome *o, int64_t *tick_at)
{
	struct sub_change c;
	memset(o, 0, sizeof *o);
	/* a subscriber that reads its lists on demand gets the delta counted, and the items
	 * it asks for made then (deliver/host.c); one that reads the lists gets them as the
	 * ABI's gw_items, with their typed views if it reads those: made on this thread, the
	 * one thing delivery adds to a version, in the fields groupdata.h gives the delivering
	 * thread (model/abi.h); hence from and to are not const here */
	if (subscriber_change(s, g, from, to, &c, &o->why) != 0)
		return -1;
	o->na = c.d.n_added;
	o->nu = c.d.n_updated;
	o->nr = c.d.n_removed;
	int64_t t0 = gw_mono_ms();
	int rc = subscriber_apply_change(s, &c, &o->why);
	o->ms = gw_mono_ms() - t0;
	subscriber_change_free(&c);
	int64_t next = subscriber_tick(s, gw_mono_ms());
	if (tick_at)
		*tick_at = next;
	if (rc == 0)
		LOG_I(log, "dispatch", "delivered %s version %s to %s (+%zu ~%zu -%zu) in %lld ms",
		      gw_group_name(g), to->md5, s->name, o->na, o->nu, o->nr, (long long)o->ms);
	return rc;
}

size_t dispatch_order(const struct cfg *cfg, enum gw_group out[GW_GROUP_COUNT])
{
	static const enum gw_group first[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE};
	size_t n = 0;
	for (size_t f = 0; f < sizeof first / sizeof first[0]; f++)
		for (size_t k = 0; k < cfg->n_groups; k++)
			if (cfg->groups[k] == first[f])
				out[n++] = first[f];
	for (size_t k = 0; k < cfg->n_groups; k++)
		if (cfg->groups[k] != GW_GROUP_PLUGIN && cfg->groups[k] != GW_GROUP_SELECTOR &&
		    cfg->groups[k] != GW_GROUP_RULE && n < GW_GROUP_COUNT)
			out[n++] = cfg->groups[k];
	return n;
}

int dispatch_once(struct subscribers *subs, struct store *st, const struct cfg *cfg,
                  struct gw_log *log)
{
	int failed = 0;
	enum gw_group order[GW_GROUP_COUNT];
	size_t n_order = dispatch_order(cfg, order);
	for (size_t k = 0; k < n_order; k++) {
		enum gw_group g = order[k];
		struct group_data *cur = store_get(st, g);
		if (!cur)
			continue;
		for (size_t i = 0; i < subs->n; i++) {
			struct subscriber *s = &subs->v[i];
			struct outcome o;
			if (!(s->groups & (1u << g)))
				continue; /* not one of its groups */
			if (deliver(s, g, NULL, cur, log, &o, NULL) < 0) {
				failed++;
				LOG_E(log, "dispatch", "subscriber '%s' rejected %s version %s: %s",
				      s->name, gw_group_name(g), cur->md5, o.why.msg);
			}
		}
		group_data_unref(cur);
	}
	return failed;
}

/* ---------------------------------------------------------------- the thread */

int dispatch_warn_due(unsigned consecutive, int64_t since_warned_ms)
{
	/* the first rejection, and then once per round: a round lasts the backoff the
	 * previous rejection set (1 s, 2 s, ... 60 s) */
	return consecutive <= 1 || since_warned_ms >= dispatch_backoff_ms(consecutive - 1);
}

int64_t dispatch_backoff_ms(unsigned consecutive)
{
	int64_t ms = DISPATCH_BACKOFF_MIN_MS;
	for (unsigned i = 1; i < consecutive && ms < DISPATCH_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < DISPATCH_BACKOFF_MAX_MS ? ms : DISPATCH_BACKOFF_MAX_MS;
}

static void set_busy(struct dispatcher *d, const struct subscriber *s)
{
	pthread_mutex_lock(&d->mu);
	copy(d->status.busy_in, sizeof d->status.busy_in, s ? s->name : "");
	d->busy_since_ms = gw_mono_ms();
	pthread_mutex_unlock(&d->mu);
}

static void replace(struct group_data **slot, struct group_data *gd)
{
	struct group_data *old = *slot;
	*slot = group_data_ref(gd);
	group_data_unref(old);
}

static void attempt(struct dispatcher *d, size_t i, enum gw_group g, struct group_data *cur)
{
	struct sub_state *ss = &d->ss[i];
	struct sub_group *sg = &ss->g[g];
	struct outcome o;

	set_busy(d, ss->s);
	int rc = deliver(ss->s, g, sg->accepted, cur, d->log, &o, &ss->tick_at_ms);
	set_busy(d, NULL);

	int64_t wall = gw_wall_ms();
	if (rc == 0) {
		if (sg->consecutive > 0)
			LOG_I(
			    d->log, "dispatch",
			    "subscriber '%s' accepted %s again (version %s), after %u rejection(s) "
			    "in a row",
			    ss->s->name, gw_group_name(g), cur->md5, sg->consecutive);
		replace(&sg->accepted, cur);
		replace(&sg->failed, NULL);
		sg->consecutive = 0;
		sg->unwarned = 0;
	} else {
		sg->consecutive++;
		int64_t wait = dispatch_backoff_ms(sg->consecutive);
		replace(&sg->failed, cur);
		int64_t now = d->clock.now_ms(d->clock.arg);
		sg->retry_at_ms = now + wait;
		if (dispatch_warn_due(sg->consecutive, now - sg->warned_ms)) {
			char more[96] = "";
			if (sg->unwarned)
				snprintf(more, sizeof more, " (%u more since the last warning)",
				         sg->unwarned);
			LOG_W(d->log, "dispatch",
			      "subscriber '%s' rejected %s version %s (+%zu ~%zu -%zu): %s; "
			      "failure %u in a row%s, retrying in %lld s",
			      ss->s->name, gw_group_name(g), cur->md5, o.na, o.nu, o.nr, o.why.msg,
			      sg->consecutive, more, (long long)(wait / 1000));
			sg->warned_ms = now;
			sg->unwarned = 0;
		} else {
			/* a newer version tried at once and refused again, within the same round:
			 * counted, and told in the next round's warning */
			sg->unwarned++;
			LOG_D(d->log, "dispatch",
			      "subscriber '%s' rejected %s version %s: %s; failure %u in a row",
			      ss->s->name, gw_group_name(g), cur->md5, o.why.msg, sg->consecutive);
		}
	}

	pthread_mutex_lock(&d->mu);
	struct dispatch_subscriber_status *ps = &d->status.subscribers[i];
	struct dispatch_group_status *pg = &ps->groups[g];
	if (rc == 0) {
		pg->delivered = 1;
		snprintf(pg->md5, sizeof pg->md5, "%s", cur->md5);
		pg->last_modify_time = cur->last_modify_time;
		pg->n_items = cur->n_items;
		pg->delivered_wall_ms = wall;
		pg->applies++;
		pg->consecutive_failures = 0;
		ps->applies++;
		d->status.changes++;
	} else {
		pg->failures++;
		pg->consecutive_failures = sg->consecutive;
		copy(pg->last_error, sizeof pg->last_error, o.why.msg);
		pg->last_error_wall_ms = wall;
		ps->failures++;
		snprintf(ps->last_error, sizeof ps->last_error, "%s: %.500s", gw_group_name(g),
		         o.why.msg);
		ps->last_error_wall_ms = wall;
		d->status.failures++;
	}
	pthread_mutex_unlock(&d->mu);
	history_outcome(atomic_load(&d->history), i, g, cur->md5, rc == 0, o.why.msg, wall);
}

/* Once every subscriber holds `cur`, record how long it took since the admin answered. */
static void measure(struct dispatcher *d, enum gw_group g, struct group_data *cur)
{
	if (d->measured[g] == cur || d->subs->n == 0)
		return;
	for (size_t i = 0; i < d->subs->n; i++)
		if ((d->ss[i].s->groups & (1u << g)) && d->ss[i].g[g].accepted != cur)
			return;
	replace(&d->measured[g], cur);
	if (cur->provisional || cur->received_us <= 0)
		return; /* from the snapshot: no admin answer to measure from */
	int64_t us = gw_mono_us() - cur->received_us;
	pthread_mutex_lock(&d->mu);
	latency_observe(&d->status.latency, us);
	pthread_mutex_unlock(&d->mu);
}

static void earliest(int64_t *wake, int64_t t)
{
	if (t >= 0 && (*wake < 0 || t < *wake))
		*wake = t;
}

/* One pass over every configured group and subscriber; lowers *wake to the next retry (on
 * the dispatcher's clock). */
static void deliver_round(struct dispatcher *d, int64_t *wake)
{
	for (size_t k = 0; k < d->n_order && !atomic_load(&d->stop); k++) {
		enum gw_group g = d->order[k];
		struct group_data *cur = store_get(d->st, g);
		if (!cur)
			continue;
		for (size_t i = 0; i < d->subs->n; i++) {
			if (atomic_load(&d->stop) || atomic_load(&d->paused))
				break;
			struct sub_group *sg = &d->ss[i].g[g];
			if (sg->accepted == cur || !(d->ss[i].s->groups & (1u << g)))
				continue; /* in step, or not one of its groups */
			if (sg->failed == cur && d->clock.now_ms(d->clock.arg) < sg->retry_at_ms) {
				earliest(wake, sg->retry_at_ms);
				continue;
			}
			attempt(d, i, g, cur);
			if (sg->failed == cur)
				earliest(wake, sg->retry_at_ms);
		}
		measure(d, g, cur);
		group_data_unref(cur);
	}
}

/* Run every tick() whose deadline has passed; lowers *wake to the next deadline (on the
 * monotonic clock, the plugins' host->now_ms()). */
static void tick_round(struct dispatcher *d, int64_t *wake)
{
	for (size_t i = 0; i < d->subs->n && !atomic_load(&d->stop); i++) {
		struct sub_state *ss = &d->ss[i];
		if (ss->tick_at_ms >= 0 && gw_mono_ms() >= ss->tick_at_ms) {
			set_busy(d, ss->s);
			ss->tick_at_ms = subscriber_tick(ss->s, gw_mono_ms());
			set_busy(d, NULL);
		}
		earliest(wake, ss->tick_at_ms);
	}
}

/* A wait until a deadline: never 0, so the thread never spins on one already due. */
static int64_t at_least_1(int64_t ms)
{
	return ms < 1 ? 1 : ms;
}

static void *run(void *arg)
{
	struct dispatcher *d = arg;
	while (!atomic_load(&d->stop)) {
		/* Read the generation before looking at the store: a version offered while
		 * we deliver bumps it, and the wait below then returns at once. */
		uint64_t seen = store_generation(d->st);
		int64_t retry = -1, tick = -1;
		if (!atomic_load(&d->paused))
			deliver_round(d, &retry);
		tick_round(d, &tick);
		if (atomic_load(&d->stop))
			break;
		int64_t timeout = -1; /* none: until the store changes */
		if (retry >= 0)
			timeout = at_least_1(retry - d->clock.now_ms(d->clock.arg));
		if (tick >= 0) {
			int64_t t = at_least_1(tick - gw_mono_ms());
			if (timeout < 0 || t < timeout)
				timeout = t;
		}
		if (timeout < 0) /* until the next change: maybe for hours (issue 30 item 9) */
			gw_thread_shed_stack();
		store_wait(d->st, seen, timeout);
	}
	pthread_mutex_lock(&d->mu);
	d->status.alive = 0;
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

static void free_state(struct dispatcher *d)
{
	if (d->ss)
		for (size_t i = 0; i < d->subs->n; i++)
			for (int g = 0; g < GW_GROUP_COUNT; g++) {
				group_data_unref(d->ss[i].g[g].accepted);
				group_data_unref(d->ss[i].g[g].failed);
			}
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(d->measured[g]);
	free(d->ss);
	free(d->status.subscribers);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static int64_t mono_ms(void *arg)
{
	(void)arg;
	return gw_mono_ms();
}

int dispatcher_start(struct dispatcher **out, struct subscribers *subs, struct store *st,
                     const struct cfg *cfg, struct gw_log *log, struct gw_err *err)
{
	return dispatcher_start_clocked(out, subs, st, cfg, log, NULL, err);
}

int dispatcher_start_clocked(struct dispatcher **out, struct subscribers *subs, struct store *st,
                             const struct cfg *cfg, struct gw_log *log,
                             const struct dispatch_clock *clock, struct gw_err *err)
{
	struct dispatcher *d = calloc(1, sizeof *d);
	if (!d)
		return gw_errf(err, "dispatcher: out of memory");
	d->clock = clock ? *clock : (struct dispatch_clock){mono_ms, NULL};
	d->subs = subs;
	d->st = st;
	d->cfg = cfg;
	d->log = log;
	d->n_order = dispatch_order(cfg, d->order);
	atomic_init(&d->stop, 0);
	atomic_init(&d->paused, 0);
	atomic_init(&d->history, NULL);
	pthread_mutex_init(&d->mu, NULL);
	size_t n = subs->n ? subs->n : 1;
	d->ss = calloc(n, sizeof *d->ss);
	d->status.subscribers = calloc(n, sizeof *d->status.subscribers);
	if (!d->ss || !d->status.subscribers) {
		free_state(d);
		return gw_errf(err, "dispatcher: out of memory");
	}
	d->status.n_subscribers = subs->n;
	for (size_t i = 0; i < subs->n; i++) {
		d->ss[i].s = &subs->v[i];
		/* A first tick() right away, so a plugin can ask for periodic work before any
		 * change arrives; after that it runs only when asked (or after apply()). */
		d->ss[i].tick_at_ms = subs->v[i].desc && subs->v[i].desc->tick ? 0 : -1;
		struct dispatch_subscriber_status *ps = &d->status.subscribers[i];
		copy(ps->name, sizeof ps->name, subs->v[i].name);
		ps->takes = subs->v[i].groups;
		copy(ps->plugin, sizeof ps->plugin,
		     subs->v[i].desc && subs->v[i].desc->name ? subs->v[i].desc->name : "");
	}
	d->status.alive = 1;
	int rc = gw_thread_start(&d->thread, "dispatch", run, d);
	if (rc != 0) {
		free_state(d);
		return gw_errf(err, "dispatcher: cannot start thread: %s", strerror(rc));
	}
	*out = d;
	return 0;
}

void dispatcher_stop(struct dispatcher *d)
{
	if (!d)
		return;
	atomic_store(&d->stop, 1);
	store_kick(d->st);
}

void dispatcher_free(struct dispatcher *d)
{
	if (!d)
		return;
	dispatcher_stop(d);
	for (int waited = 1;; waited++) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until); /* pthread_timedjoin_np's clock */
		until.tv_sec += 1;
		if (pthread_timedjoin_np(d->thread, NULL, &until) == 0)
			break;
		char busy[sizeof d->status.busy_in];
		pthread_mutex_lock(&d->mu);
		copy(busy, sizeof busy, d->status.busy_in);
		pthread_mutex_unlock(&d->mu);
		if (waited == 1 || waited % 10 == 0)
			LOG_W(d->log, "dispatch",
			      "stopping: waiting %d s for subscriber '%s' to return", waited,
			      busy[0] ? busy : "?");
	}
	free_state(d);
}

void dispatcher_set_history(struct dispatcher *d, struct history *h)
{
	atomic_store(&d->history, h);
}

void dispatcher_set_paused(struct dispatcher *d, int paused)
{
	atomic_store(&d->paused, paused ? 1 : 0);
	pthread_mutex_lock(&d->mu);
	d->status.paused = paused ? 1 : 0;
	pthread_mutex_unlock(&d->mu);
	store_kick(d->st);
	LOG_I(d->log, "dispatch", "delivery %s", paused ? "paused" : "resumed");
}

int dispatcher_status(struct dispatcher *d, struct dispatch_status *out, struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	size_t n = d->status.n_subscribers; /* fixed at start */
	struct dispatch_subscriber_status *v = calloc(n ? n : 1, sizeof *v);
	if (!v)
		return gw_errf(err, "dispatcher status: out of memory");
	pthread_mutex_lock(&d->mu);
	*out = d->status;
	memcpy(v, d->status.subscribers, n * sizeof *v);
	out->busy_ms = out->busy_in[0] ? gw_mono_ms() - d->busy_since_ms : 0;
	pthread_mutex_unlock(&d->mu);
	out->subscribers = v;
	return 0;
}

void dispatch_status_free(struct dispatch_status *s)
{
	free(s->subscribers);
	s->subscribers = NULL;
	s->n_subscribers = 0;
}
