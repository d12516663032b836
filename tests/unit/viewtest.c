/* Hand-made status views (see viewtest.h). */
#include "viewtest.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "subtest.h"
#include "model/groups.h"

static const char *const urls[] = {"http://a:9095", "http://b:9095", "http://c:9095",
                                   "http://d:9095"};

void vt_init(struct status_view *v, size_t n_servers, size_t n_subs)
{
	memset(v, 0, sizeof *v);
	v->wall_ms = VT_WALL_MS;
	v->mono_us = gw_mono_us();
	v->started_wall_ms = VT_STARTED_MS;
	v->version = "9.9.9";
	enum gw_group classic[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE,
	                           GW_GROUP_APP_AUTH, GW_GROUP_META_DATA};
	memcpy(v->groups, classic, sizeof classic);
	v->n_groups = 5;
	ck_assert_uint_le(n_servers, 4);
	v->servers = calloc(n_servers ? n_servers : 1, sizeof *v->servers);
	v->n_servers = n_servers;
	v->source_type = "http";
	v->source_section = "admin";
	for (size_t i = 0; i < n_servers; i++) {
		v->servers[i].url = urls[i];
		v->servers[i].running = 1;
		v->servers[i].st.state = SOURCE_CONN_POLLING;
		snprintf(v->servers[i].st.server, sizeof v->servers[i].st.server, "%s", urls[i]);
	}
	v->have_dispatch = 1;
	v->dispatch.alive = 1;
	v->dispatch.subscribers = calloc(n_subs ? n_subs : 1, sizeof *v->dispatch.subscribers);
	v->dispatch.n_subscribers = n_subs;
	for (size_t i = 0; i < n_subs; i++) {
		snprintf(v->dispatch.subscribers[i].name, sizeof v->dispatch.subscribers[i].name,
		         "sub%zu", i);
		snprintf(v->dispatch.subscribers[i].plugin,
		         sizeof v->dispatch.subscribers[i].plugin, "recorder");
	}
}

void vt_hold(struct status_view *v, enum gw_group g, const char *md5, int64_t lmt, size_t n_items,
             int provisional, int64_t age_ms)
{
	char keys[8][16], json[8][64];
	const char *kv[2 * 8 + 1];
	ck_assert_uint_le(n_items, 8);
	for (size_t i = 0; i < n_items; i++) {
		snprintf(keys[i], sizeof keys[i], "k%zu", i);
		snprintf(json[i], sizeof json[i], "{\"id\":\"k%zu\"}", i);
		kv[2 * i] = keys[i];
		kv[2 * i + 1] = json[i];
	}
	kv[2 * n_items] = NULL;
	struct group_data *gd = gd_make(g, md5, lmt, kv);
	gd->provisional = provisional;
	snprintf(gd->server, sizeof gd->server, "%s", provisional ? "snapshot" : "http://a:9095");
	gd->received_us = v->mono_us - age_ms * 1000;
	group_data_unref(v->data[g]);
	v->data[g] = gd;
}

void vt_hold_all(struct status_view *v)
{
	for (size_t k = 0; k < v->n_groups; k++) {
		char md5[64];
		snprintf(md5, sizeof md5, "m-%s", gw_group_name(v->groups[k]));
		vt_hold(v, v->groups[k], md5, 1000, 2, 0, 0);
	}
}

void vt_delivered(struct status_view *v, size_t i, enum gw_group g, const char *md5, int64_t lmt,
                  size_t n_items, int64_t wall_ms)
{
	struct dispatch_subscriber_status *s = &v->dispatch.subscribers[i];
	struct dispatch_group_status *pg = &s->groups[g];
	pg->delivered = 1;
	snprintf(pg->md5, sizeof pg->md5, "%s", md5);
	pg->last_modify_time = lmt;
	pg->n_items = n_items;
	pg->delivered_wall_ms = wall_ms;
	pg->applies++;
	pg->consecutive_failures = 0;
	s->applies++;
	v->dispatch.changes++;
}

void vt_all_delivered(struct status_view *v, size_t i)
{
	for (size_t k = 0; k < v->n_groups; k++) {
		const struct group_data *gd = v->data[v->groups[k]];
		if (gd)
			vt_delivered(v, i, gd->group, gd->md5, gd->last_modify_time, gd->n_items,
			             v->wall_ms - 10);
	}
}

void vt_failed(struct status_view *v, size_t i, enum gw_group g, unsigned n, const char *why)
{
	struct dispatch_subscriber_status *s = &v->dispatch.subscribers[i];
	struct dispatch_group_status *pg = &s->groups[g];
	pg->failures += n;
	pg->consecutive_failures = n;
	snprintf(pg->last_error, sizeof pg->last_error, "%s", why);
	pg->last_error_wall_ms = v->wall_ms - 5;
	s->failures += n;
	snprintf(s->last_error, sizeof s->last_error, "%s: %s", gw_group_name(g), why);
	s->last_error_wall_ms = v->wall_ms - 5;
	v->dispatch.failures += n;
}
