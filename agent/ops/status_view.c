/*
 * Taking and judging a status view (see status_view.h). Taking one copies fixed-size
 * records and takes store references; judging is pure, so health and readiness rules are
 * unit-tested on hand-made views.
 */
#include "ops/status_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "model/groups.h"

#ifndef GWSYNC_VERSION
#define GWSYNC_VERSION "0.0.0"
#endif

int status_view_take(struct status_sources *src, struct status_view *v, struct gw_err *err)
{
	memset(v, 0, sizeof *v);
	const struct cfg *cfg = src->cfg;
	v->wall_ms = gw_wall_ms();
	v->mono_us = gw_mono_us();
	v->started_wall_ms = src->started_wall_ms;
	v->version = GWSYNC_VERSION;
	v->n_groups = cfg->n_groups;
	memcpy(v->groups, cfg->groups, sizeof v->groups);
	for (size_t k = 0; k < cfg->n_groups; k++)
		v->data[cfg->groups[k]] = store_get(src->store, cfg->groups[k]);

	/* the source's connections as it names them (a path store: one, its label); without a
	 * source, none */
	const struct source_ops *ops = src->source_ops;
	size_t n = ops ? ops->conns(cfg) : 0;
	v->servers = calloc(n ? n : 1, sizeof *v->servers);
	if (!v->servers) {
		status_view_free(v);
		return gw_errf(err, "status: out of memory");
	}
	v->n_servers = n;
	v->source_type = ops ? ops->type : "none";
	v->source_section = ops ? ops->section : "none";
	for (size_t i = 0; i < n; i++) {
		v->servers[i].url = ops->conn_name(cfg, i);
		if (src->source_ops && src->source)
			v->servers[i].running =
			    src->source_ops->status(src->source, i, &v->servers[i].st);
	}

	if (src->dispatcher) {
		if (dispatcher_status(src->dispatcher, &v->dispatch, err) != 0) {
			status_view_free(v);
			return -1;
		}
		v->have_dispatch = 1;
	}
	v->paused = src->pause ? pause_get(src->pause) : 0;
	return 0;
}

void status_view_free(struct status_view *v)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		group_data_unref(v->data[g]);
		v->data[g] = NULL;
	}
	free(v->servers);
	v->servers = NULL;
	v->n_servers = 0;
	if (v->have_dispatch)
		dispatch_status_free(&v->dispatch);
	v->have_dispatch = 0;
}

/* Append "A, B, C" of the configured groups for which `pick` holds. */
static size_t list_groups(const struct status_view *v,
                          int (*pick)(const struct status_view *, enum gw_group, void *), void *arg,
                          char *buf, size_t cap)
{
	size_t n = 0, pos = 0;
	buf[0] = '\0';
	for (size_t k = 0; k < v->n_groups; k++) {
		if (!pick(v, v->groups[k], arg))
			continue;
		int w = snprintf(buf + pos, cap - pos, "%s%s", n ? ", " : "",
		                 gw_group_name(v->groups[k]));
		if (w > 0)
			pos = (size_t)w < cap - pos ? pos + (size_t)w : cap - 1;
		n++;
	}
	return n;
}

static int group_missing(const struct status_view *v, enum gw_group g, void *arg)
{
	(void)arg;
	return v->data[g] == NULL;
}

static int group_undelivered(const struct status_view *v, enum gw_group g, void *arg)
{
	const struct dispatch_subscriber_status *s = arg;
	const struct dispatch_group_status *pg = &s->groups[g];
	return v->data[g] && dispatch_takes(s, g) && !pg->delivered && pg->failures == 0;
}

int status_subscriber_in_step(const struct status_view *v, size_t i, enum gw_group g)
{
	if (!v->have_dispatch || i >= v->dispatch.n_subscribers || !v->data[g] ||
	    !dispatch_takes(&v->dispatch.subscribers[i], g))
		return 1; /* nothing to deliver, or not one of its groups: nothing owed */
	const struct dispatch_group_status *pg = &v->dispatch.subscribers[i].groups[g];
	return pg->delivered && strcmp(pg->md5, v->data[g]->md5) == 0;
}

int status_healthy(const struct status_view *v, struct gw_err *why)
{
	char list[256];
	if (list_groups(v, group_missing, NULL, list, sizeof list) > 0) {
		gw_errf(why,
		        "no data yet for %s: no admin has answered and no snapshot "
		        "held it",
		        list);
		return 0;
	}
	if (!v->have_dispatch || !v->dispatch.alive) {
		gw_errf(why, "the dispatcher is not running");
		return 0;
	}
	gw_errf(why, "ok");
	return 1;
}

int status_ready(const struct status_view *v, struct gw_err *why)
{
	char list[256];
	if (list_groups(v, group_missing, NULL, list, sizeof list) > 0) {
		gw_errf(why, "waiting for data: %s", list);
		return 0;
	}
	if (!v->have_dispatch || !v->dispatch.alive) {
		gw_errf(why, "the dispatcher is not running");
		return 0;
	}
	if (!v->paused) {
		for (size_t i = 0; i < v->dispatch.n_subscribers; i++) {
			struct dispatch_subscriber_status *s = &v->dispatch.subscribers[i];
			if (list_groups(v, group_undelivered, s, list, sizeof list) > 0) {
				gw_errf(why, "delivering %s to subscriber '%s'", list, s->name);
				return 0;
			}
		}
	}
	gw_errf(why, "ready");
	return 1;
}

/* "admin servers polling" (long-polling, WebSocket), "zookeeper connections up"... */
static const char *working_noun(const struct status_view *v, char *buf, size_t cap)
{
	if (!v->source_section || strcmp(v->source_section, "admin") == 0 ||
	    strcmp(v->source_section, "none") == 0)
		return "admin servers polling";
	snprintf(buf, cap, "%s connections up", v->source_section);
	return buf;
}

void status_summary(const struct status_view *v, char *buf, size_t cap)
{
	char list[256], noun_buf[64];
	const char *noun = working_noun(v, noun_buf, sizeof noun_buf);
	size_t polling = 0, failing = 0;
	for (size_t i = 0; i < v->n_servers; i++) {
		const struct status_server_view *s = &v->servers[i];
		if (s->running &&
		    (s->st.state == SOURCE_CONN_POLLING || s->st.state == SOURCE_CONN_CONNECTED) &&
		    s->st.consecutive_failures == 0)
			polling++;
		else if (s->running && s->st.consecutive_failures > 0)
			failing++;
	}
	if (list_groups(v, group_missing, NULL, list, sizeof list) > 0) {
		snprintf(buf, cap, "waiting for data: %s (%zu of %zu %s failing)", list, failing,
		         v->n_servers, noun == noun_buf ? v->source_section : "admin servers");
		return;
	}
	size_t stale = 0;
	for (size_t k = 0; k < v->n_groups; k++)
		stale += v->data[v->groups[k]]->provisional ? 1 : 0;
	char held[96];
	if (stale)
		snprintf(held, sizeof held, "%zu groups held (%zu from the snapshot)", v->n_groups,
		         stale);
	else
		snprintf(held, sizeof held, "%zu groups held", v->n_groups);
	if (v->paused) {
		snprintf(buf, cap, "paused: %s, %zu of %zu %s, nothing delivered", held, polling,
		         v->n_servers, noun);
		return;
	}
	size_t n_subs = v->have_dispatch ? v->dispatch.n_subscribers : 0, in_step = 0;
	for (size_t i = 0; i < n_subs; i++) {
		int ok = 1;
		for (size_t k = 0; k < v->n_groups; k++)
			ok &= status_subscriber_in_step(v, i, v->groups[k]);
		in_step += ok ? 1 : 0;
	}
	snprintf(buf, cap, "%s, %zu of %zu %s, %zu of %zu subscribers in step", held, polling,
	         v->n_servers, noun, in_step, n_subs);
}
