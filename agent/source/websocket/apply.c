/*
 * The effect of one message on the held groups, and the end of a full sync (see apply.h).
 */
#include "source/websocket/apply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "model/diff.h"
#include "model/patch.h"
#include "model/groups.h"
#include "model/typed.h"

static int configured(const struct cfg *cfg, int g)
{
	for (size_t i = 0; i < cfg->n_groups; i++)
		if ((int)cfg->groups[i] == g)
			return 1;
	return 0;
}

/* A selector's or rule's plugin, from its JSON (model/item.h); into buf. */
static const char *plugin_of(enum gw_group g, const struct gd_item *it, char *buf, size_t cap)
{
	if (g != GW_GROUP_SELECTOR && g != GW_GROUP_RULE)
		return NULL;
	return gd_item_text(it, "pluginName", buf, cap);
}

static int in_list(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

/*
 * How each event type changes a group (docs/operations.md has the same table):
 *   MYSELF                        the group is replaced by the list
 *   REFRESH, SELECTOR and RULE    the items of the plugins the list names are replaced
 *                                 (a per-plugin sync sends one plugin's items)
 *   REFRESH, DISCOVER_UPSTREAM    upsert (a client registering sends one selector's item)
 *   REFRESH, every other group    the group is replaced (PLUGIN: "sync all" and a
 *                                 configuration import send the namespace's whole list)
 *   CREATE, UPDATE                upsert by key (a plugin under a new name replaces the one
 *                                 with its id: a rename)
 *   DELETE                        remove by key
 */
static int refresh_replaces(enum gw_group g)
{
	return g != GW_GROUP_DISCOVER_UPSTREAM && g != GW_GROUP_SELECTOR && g != GW_GROUP_RULE;
}

/* The held items of the plugins batch names (a per-plugin REFRESH): their keys into dels
 * (room for prev's count; the keys in `keys`), *n set. The plugins named are few (one,
 * from the admin's per-plugin sync), so they are collected first and the held list is
 * read once. -1 on out of memory. */
static int plugin_items(const struct group_data *prev, const struct group_data *batch,
                        const char **dels, size_t *n, struct arena *keys)
{
	char **plugins = calloc(batch->n_items + 1, sizeof *plugins);
	size_t np = 0;
	char buf[512];
	int rc = plugins ? 0 : -1;
	for (size_t i = 0; rc == 0 && i < batch->n_items; i++) {
		const char *name = plugin_of(batch->group, &batch->items[i], buf, sizeof buf);
		if (name && !in_list(name, (const char *const *)plugins, np) &&
		    !(plugins[np++] = strdup(name)))
			rc = -1;
	}
	for (size_t i = 0; rc == 0 && i < prev->n_items; i++)
		if (in_list(plugin_of(prev->group, &prev->items[i], buf, sizeof buf),
		            (const char *const *)plugins, np) &&
		    !(dels[(*n)++] = gd_key_dup(&prev->items[i], keys)))
			rc = -1;
	for (size_t i = 0; plugins && i < np; i++)
		free(plugins[i]);
	free(plugins);
	return rc;
}

/*
 * patch(prev, batch) for `event`. The keys to delete are copied for the call (an item's
 * key is a span of its JSON, model/item.h). 0 with *out (NULL: no change) or -1.
 */
static int build(enum gw_group g, enum ws_event event, const struct group_data *prev,
                 const struct group_data *batch, const char *server, int force,
                 struct group_data **out, struct gw_err *err)
{
	struct patch p = {g, prev, batch, NULL, 0, 0, force, server, gw_wall_ms()};
	const char **dels = NULL;
	struct arena keys;
	arena_init(&keys);
	switch (event) {
	case WS_EV_MYSELF:
		p.replace = 1;
		break;
	case WS_EV_REFRESH:
		if (refresh_replaces(g)) {
			p.replace = 1;
		} else if ((g == GW_GROUP_SELECTOR || g == GW_GROUP_RULE) && prev) {
			/* a per-plugin sync: the named plugins' items are replaced */
			dels = calloc(prev->n_items + 1, sizeof *dels);
			if (!dels || plugin_items(prev, batch, dels, &p.n_deletes, &keys) != 0) {
				free(dels);
				arena_free(&keys);
				return gw_errf(err, "group %s: out of memory", gw_group_name(g));
			}
		}
		break;
	case WS_EV_CREATE:
	case WS_EV_UPDATE:
		break;
	case WS_EV_DELETE:
		dels = calloc(batch->n_items + 1, sizeof *dels);
		if (!dels)
			return gw_errf(err, "group %s: out of memory", gw_group_name(g));
		for (size_t i = 0; i < batch->n_items; i++)
			if (!(dels[p.n_deletes++] = gd_key_dup(&batch->items[i], &keys))) {
				free(dels);
				arena_free(&keys);
				return gw_errf(err, "group %s: out of memory", gw_group_name(g));
			}
		p.upserts = NULL;
		break;
	}
	p.deletes = dels;
	int rc = model_patch(&p, out, err);
	free(dels);
	arena_free(&keys);
	return rc;
}

/* "a, b, c (+N more)" of a delta list of n items, for a repair line (v[8] and after are
 * never read). */
static void key_list(char *buf, size_t cap, const struct gd_item *const *v, size_t n)
{
	size_t pos = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && pos + 1 < cap; i++) {
		if (i == 8) {
			snprintf(buf + pos, cap - pos, " (+%zu more)", n - i);
			return;
		}
		size_t klen;
		const char *k = gd_key(v[i], &klen);
		pos +=
		    (size_t)snprintf(buf + pos, cap - pos, "%s%.*s", i ? ", " : "", (int)klen, k);
	}
}

static void log_repair(struct ws_apply *a, const struct group_data *held,
                       const struct group_data *gd)
{
	struct diff d;
	struct gw_err err = {0};
	if (diff_build(&d, gd->group, held, gd, &err) != 0)
		return;
	char added[600], removed[600], updated[600] = "";
	key_list(added, sizeof added, d.added, d.n_added);
	key_list(removed, sizeof removed, d.removed, d.n_removed);
	const struct gd_item *upd[8]; /* key_list shows 8, then counts the rest */
	for (size_t i = 0; i < d.n_updated && i < 8; i++)
		upd[i] = d.updated[i].new_item;
	key_list(updated, sizeof updated, upd, d.n_updated);
	LOG_W(a->sh->log, "websocket",
	      "server %s: repair: group %s differed from the admin's full list: %zu added [%s], "
	      "%zu updated [%s], %zu removed [%s]",
	      a->server, gw_group_name(gd->group), d.n_added, added, d.n_updated, updated,
	      d.n_removed, removed);
	diff_free(&d);
}

/* Offer gd (consumed) for its group; under apply_mu. 1 if accepted. */
static int offer(struct ws_apply *a, struct group_data *held, struct group_data *gd)
{
	if (a->window && a->repair && held && !held->provisional)
		log_repair(a, held, gd);
	struct group_data *v[GW_GROUP_COUNT] = {NULL};
	enum gw_group g = gd->group;
	v[g] = gd;
	int older = 0;
	size_t n = ingest_offer(a->sh->in, a->server, ingest_accept_patched, &g, 1, v, &older);
	a->accepted += n;
	if (n && a->window && a->repair && held && !held->provisional)
		a->repairs++;
	return (int)n;
}

void ws_gate(struct ws_shared *sh, int closed)
{
	pthread_mutex_lock(&sh->apply_mu);
	sh->gate_closed = closed;
	pthread_cond_broadcast(&sh->gate_cv);
	pthread_mutex_unlock(&sh->apply_mu);
}

void ws_shared_stop(struct ws_shared *sh)
{
	pthread_mutex_lock(&sh->apply_mu);
	sh->stopping = 1;
	pthread_cond_broadcast(&sh->gate_cv);
	pthread_mutex_unlock(&sh->apply_mu);
}

/* Take apply_mu once the gate is open. -1 (not locked) when stopping. */
static int enter(struct ws_shared *sh)
{
	pthread_mutex_lock(&sh->apply_mu);
	while (sh->gate_closed && !sh->stopping)
		pthread_cond_wait(&sh->gate_cv, &sh->apply_mu);
	if (sh->stopping) {
		pthread_mutex_unlock(&sh->apply_mu);
		return -1;
	}
	return 0;
}

int ws_apply_message(struct ws_apply *a, const struct ws_msg *m, struct gw_err *err)
{
	const struct cfg *cfg = a->sh->cfg;
	enum gw_group g = (enum gw_group)m->group;
	if (m->kind != WS_MSG_DATA || !configured(cfg, m->group))
		return 0;
	if (enter(a->sh) != 0)
		return 0;
	struct group_data *held = ingest_held(a->sh->in, g), *batch = NULL, *gd = NULL;
	int rc = model_parse_items(g, m->data, m->data_len, a->server, held, &batch, err);
	if (rc == 0)
		rc =
		    build(g, m->event, held, batch, a->server, held && held->provisional, &gd, err);
	if (rc == 0 && gd)
		offer(a, held, gd);
	if (rc == 0 && a->window) {
		/* the shadow: the same message applied to what this full sync has shown */
		struct group_data *next = NULL;
		a->seen |= 1u << g;
		int whole =
		    m->event == WS_EV_MYSELF || (m->event == WS_EV_REFRESH && refresh_replaces(g));
		if (whole) {
			/* the list itself: the shadow is only asked which keys came, so it needs
			 * no version of its own (no identity to compute for 100,000 items) */
			group_data_unref(a->shadow[g]);
			a->shadow[g] = group_data_ref(batch);
		} else if (build(g, m->event, a->shadow[g], batch, a->server, 0, &next, err) == 0 &&
		           next) {
			group_data_unref(a->shadow[g]);
			a->shadow[g] = next;
		} else if (!a->shadow[g] && m->event != WS_EV_DELETE) {
			a->shadow[g] = group_data_ref(batch); /* an empty first list */
		}
	}
	group_data_unref(batch);
	group_data_unref(held);
	pthread_mutex_unlock(&a->sh->apply_mu);
	return rc;
}

static void drop_shadows(struct ws_apply *a)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		group_data_unref(a->shadow[g]);
		a->shadow[g] = NULL;
	}
	a->window = 0;
	a->repair = 0;
	a->seen = 0;
}

void ws_apply_window_open(struct ws_apply *a, int repair)
{
	drop_shadows(a);
	a->window = 1;
	a->repair = repair;
}

void ws_apply_window_abort(struct ws_apply *a)
{
	drop_shadows(a);
}

size_t ws_apply_window_close(struct ws_apply *a, enum ws_end how)
{
	const struct cfg *cfg = a->sh->cfg;
	size_t done = 0;
	if (!a->window)
		return 0;
	if (enter(a->sh) != 0) {
		drop_shadows(a);
		return 0;
	}
	a->empty_answer = a->seen == 0;
	if (a->empty_answer) {
		/* a real admin always has plugins: nothing at all is a namespace it does not
		 * know (it answers that with silence), never a reason to empty the gateway */
		LOG_W(a->sh->log, "websocket",
		      "server %s: its full sync brought no data at all (is admin.namespace '%s' "
		      "one this admin has?); nothing held is removed",
		      a->server, cfg->namespace_id ? cfg->namespace_id : "");
		pthread_mutex_unlock(&a->sh->apply_mu);
		drop_shadows(a);
		return 0;
	}
	for (size_t i = 0; i < cfg->n_groups; i++) {
		enum gw_group g = cfg->groups[i];
		const char *name = gw_group_name(g);
		struct group_data *held = ingest_held(a->sh->in, g), *gd = NULL;
		struct gw_err err = {0};
		/* after a silence the answer may have been cut short by a slow admin: only
		 * the groups that came are swept */
		int sweep =
		    how == WS_END_MARKER || (how == WS_END_SILENCE && (a->seen & (1u << g)));
		if (held && sweep) {
			/* held but not in the admin's answer: deleted while we did not hear */
			const struct group_data *sh = a->shadow[g];
			const char **dels = calloc(held->n_items + 1, sizeof *dels);
			size_t n = 0;
			struct arena keys;
			arena_init(&keys);
			for (size_t k = 0; dels && k < held->n_items; k++) {
				int found = 0;
				if (sh)
					group_data_rank_item(sh, &held->items[k], &found);
				if (!found && !(dels[n++] = gd_key_dup(&held->items[k], &keys))) {
					free(dels);
					dels = NULL;
				}
			}
			struct patch p = {
			    g,         held,        NULL, dels, n, 0, held->provisional && !sh,
			    a->server, gw_wall_ms()};
			if (dels && (n || p.force) && model_patch(&p, &gd, &err) != 0)
				LOG_E(a->sh->log, "websocket", "server %s: group %s: %s", a->server,
				      name, err.msg);
			if (gd && !a->repair)
				LOG_I(a->sh->log, "websocket",
				      "server %s: group %s: %zu item(s) the admin no longer has "
				      "(deleted while disconnected) removed",
				      a->server, name, n);
			free(dels);
			arena_free(&keys);
		} else if (!held) {
			struct patch p = {g, NULL, NULL, NULL, 0, 1, 1, a->server, gw_wall_ms()};
			if (model_patch(&p, &gd, &err) != 0)
				LOG_E(a->sh->log, "websocket", "server %s: group %s: %s", a->server,
				      name, err.msg);
			if (how == WS_END_MARKER)
				LOG_D(a->sh->log, "websocket",
				      "server %s: group %s: not in the full sync: the admin has "
				      "none",
				      a->server, name);
			else
				LOG_W(a->sh->log, "websocket",
				      "server %s: group %s never arrived (an admin older than the "
				      "group does not send it); serving it empty",
				      a->server, name);
		}
		if (gd)
			done += (size_t)offer(a, held, gd);
		group_data_unref(held);
	}
	pthread_mutex_unlock(&a->sh->apply_mu);
	drop_shadows(a);
	return done;
}
