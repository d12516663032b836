/*
 * libgwsync-testing (see include/gwsync/testing.h): thin wrappers over the agent's own
 * YAML tree, option check, host table, JSON model and delta, compiled into one shared
 * library with everything but the gwt_ functions hidden.
 *
 * The host is the agent's host table (deliver/host.c) with a few members swapped for the
 * test's: the log is kept for gwt_host_log(), the clock may be fake, and the groups (the
 * synced ones, the names of groups newer than the header) are the test's to set. Versions
 * are the agent's group versions parsed by its model; a change is its delta (model/diff.c),
 * so what a plugin sees here is what the dispatcher would hand it.
 */
#include <gwsync/testing.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/ytree.h"
#include "core/clock.h"
#include "core/log.h"
#include "shared/strbuf.h"
#include "deliver/host.h"
#include "deliver/plugin_config.h"
#include "deliver/plugin_options.h"
#include "model/diff.h"
#include "model/groups.h"
#include "model/abi.h"
#include "model/model.h"
#include "kit.h"

#define MAX_SYNCED   64
#define MAX_UNKNOWN  16
#define MAX_TICKS    10000
#define NAME_UNKNOWN GW_GROUP_PROXY_SELECTOR /* a key + JSON group keyed by "id" */

static void say(char *err, size_t cap, const char *msg)
{
	if (err && cap)
		snprintf(err, cap, "%s", msg);
}

/* ---------------------------------------------------------------- config */

struct gwt_config {
	struct ynode *root;
};

struct gwt_config *gwt_config_parse(const char *yaml, char *err, size_t cap)
{
	struct gwt_config *c = calloc(1, sizeof *c);
	struct gw_err e = {0};
	if (!c) {
		say(err, cap, "out of memory");
		return NULL;
	}
	if (ytree_parse("test.yaml", yaml ? yaml : "", yaml ? strlen(yaml) : 0, &c->root, &e) < 0) {
		say(err, cap, e.msg);
		free(c);
		return NULL;
	}
	if (c->root->type != YNODE_MAP) {
		snprintf(err, cap, "test.yaml:%d:%d: expected a map, got %s", c->root->line,
		         c->root->col, ytree_type_name(c->root));
		gwt_config_free(c);
		return NULL;
	}
	return c;
}

const struct gw_config *gwt_config(const struct gwt_config *c)
{
	return plugin_config_of(c->root);
}

int gwt_config_check(const struct gwt_config *c, const struct gw_option *options, char *err,
                     size_t cap)
{
	struct gw_err e = {0};
	if (!options)
		return 0;
	if (plugin_options_check(options, c->root, c->root, "config", &e) < 0) {
		say(err, cap, e.msg);
		return -1;
	}
	return 0;
}

void gwt_config_free(struct gwt_config *c)
{
	if (!c)
		return;
	ytree_free(c->root);
	free(c);
}

/* ---------------------------------------------------------------- host */

struct gwt_host {
	struct gw_host host;
	struct host_ctx ctx;
	char *instance;
	struct strbuf log;
	int fake_clock;
	int64_t now;
	int synced[MAX_SYNCED]; /* the groups synced, in order (any number, also unknown ones) */
	size_t n_synced;
	char *unknown[MAX_UNKNOWN]; /* names of groups GW_GROUP_COUNT + i */
	size_t n_unknown;
};

static struct gwt_host *of(const struct gw_host *host)
{
	return (struct gwt_host *)((char *)host - offsetof(struct gwt_host, host));
}

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static void t_logv(const struct gw_host *host, enum gw_log_level level, const char *fmt, va_list ap)
{
	struct gwt_host *h = of(host);
	/* the whole message first, then cut as the agent's log cuts it */
	struct strbuf whole = {0};
	va_list copy;
	va_copy(copy, ap);
	int n = vsnprintf(NULL, 0, fmt, copy);
	va_end(copy);
	char line[GW_LOG_MSG_MAX + 1];
	if (n >= 0 && strbuf_reserve(&whole, (size_t)n + 1) == 0) {
		vsnprintf(whole.p, (size_t)n + 1, fmt, ap);
		gw_log_fit(line, sizeof line, whole.p);
	} else {
		snprintf(line, sizeof line, "(out of memory formatting a message)");
	}
	strbuf_reset(&whole);
	if ((unsigned)level > GW_LOG_DEBUG)
		level = GW_LOG_DEBUG;
	fprintf(stderr, "%s %s: %s\n", level_names[level], h->instance, line);
	strbuf_addf(&h->log, "%s %s\n", level_names[level], line);
}

static void t_log(const struct gw_host *host, enum gw_log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	t_logv(host, level, fmt, ap);
	va_end(ap);
}

static int64_t t_now(const struct gw_host *host)
{
	struct gwt_host *h = of(host);
	return h->fake_clock ? h->now : gw_mono_ms();
}

static const char *t_group_name(const struct gw_host *host, enum gw_group g)
{
	struct gwt_host *h = of(host);
	if ((unsigned)g < GW_GROUP_COUNT)
		return gw_group_name(g);
	size_t i = (size_t)((unsigned)g - GW_GROUP_COUNT);
	return i < h->n_unknown ? h->unknown[i] : NULL;
}

static int t_group_count(const struct gw_host *host)
{
	return GW_GROUP_COUNT + (int)of(host)->n_unknown;
}

static int t_group_configured(const struct gw_host *host, enum gw_group g)
{
	struct gwt_host *h = of(host);
	for (size_t i = 0; i < h->n_synced; i++)
		if (h->synced[i] == (int)g)
			return 1;
	return 0;
}

static size_t t_configured_groups(const struct gw_host *host, enum gw_group *out, size_t cap)
{
	struct gwt_host *h = of(host);
	for (size_t i = 0; out && i < h->n_synced && i < cap; i++)
		out[i] = (enum gw_group)h->synced[i];
	return h->n_synced;
}

struct gwt_host *gwt_host_new(const char *instance, const struct gw_option *options)
{
	struct gwt_host *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->instance = strdup(instance ? instance : "test");
	if (!h->instance) {
		free(h);
		return NULL;
	}
	h->ctx.instance = h->instance;
	h->ctx.options = options;
	host_table_init(&h->host, &h->ctx);
	h->host.log = t_log;
	h->host.logv = t_logv;
	h->host.now_ms = t_now;
	h->host.group_name = t_group_name;
	h->host.group_count = t_group_count;
	h->host.group_configured = t_group_configured;
	h->host.configured_groups = t_configured_groups;
	/* the agent's default admin.groups */
	static const enum gw_group classic[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR, GW_GROUP_RULE,
	                                        GW_GROUP_APP_AUTH, GW_GROUP_META_DATA};
	gwt_host_set_groups(h, classic, sizeof classic / sizeof classic[0]);
	return h;
}

const struct gw_host *gwt_host(struct gwt_host *h)
{
	return &h->host;
}

const char *gwt_host_error(const struct gwt_host *h)
{
	return h->ctx.error;
}

const char *gwt_host_log(const struct gwt_host *h)
{
	return h->log.len && h->log.p ? h->log.p : "";
}

void gwt_host_clear(struct gwt_host *h)
{
	h->ctx.error[0] = '\0';
	strbuf_reset(&h->log);
}

int gwt_host_set_groups(struct gwt_host *h, const enum gw_group *groups, size_t n)
{
	if (n > MAX_SYNCED)
		return -1;
	h->n_synced = 0;
	for (size_t i = 0; i < n; i++) {
		if (t_group_configured(&h->host, groups[i]))
			continue; /* as admin.groups: a group listed twice is synced once */
		h->synced[h->n_synced++] = (int)groups[i];
	}
	return 0;
}

int gwt_host_add_group(struct gwt_host *h, const char *name)
{
	if (h->n_unknown >= MAX_UNKNOWN || !name)
		return -1;
	char *copy = strdup(name);
	if (!copy)
		return -1;
	h->unknown[h->n_unknown] = copy;
	return GW_GROUP_COUNT + (int)h->n_unknown++;
}

void gwt_host_set_size(struct gwt_host *h, size_t size)
{
	h->host.size = size < sizeof h->host ? size : sizeof h->host;
}

void gwt_host_free(struct gwt_host *h)
{
	if (!h)
		return;
	host_call_done(&h->ctx);
	strbuf_reset(&h->log);
	for (size_t i = 0; i < h->n_unknown; i++)
		free(h->unknown[i]);
	free(h->instance);
	free(h);
}

/* ---------------------------------------------------------------- clock and tick */

void gwt_clock_set(struct gwt_host *h, int64_t ms)
{
	h->fake_clock = 1;
	h->now = ms;
}

int64_t gwt_clock_advance(struct gwt_host *h, int64_t ms)
{
	if (!h->fake_clock)
		gwt_clock_set(h, gw_mono_ms());
	h->now += ms;
	return h->now;
}

int64_t gwt_now(struct gwt_host *h)
{
	return t_now(&h->host);
}

/* tick() at the host's clock; a host->error() from it is a warning, as in the agent, and
 * leaves the message of the callback before it in place. */
static int64_t call_tick(struct gwt_host *h, const struct gw_subscriber *desc, void *state)
{
	if (!desc->tick)
		return -1;
	char before[sizeof h->ctx.error];
	memcpy(before, h->ctx.error, sizeof before);
	h->ctx.error[0] = '\0';
	int64_t next = desc->tick(state, &h->host, t_now(&h->host));
	if (h->ctx.error[0])
		t_log(&h->host, GW_LOG_WARN, "tick(): %s", h->ctx.error);
	memcpy(h->ctx.error, before, sizeof before);
	return next;
}

unsigned kit_desc_flags(const struct gw_subscriber *desc)
{
	return desc->size >= offsetof(struct gw_subscriber, flags) + sizeof desc->flags
	           ? desc->flags
	           : 0;
}

int gwt_apply(struct gwt_host *h, const struct gw_subscriber *desc, void *state,
              const struct gw_change *change, int64_t *next)
{
	h->ctx.error[0] = '\0';
	/* a plugin that declared GW_SUB_LISTS_ON_DEMAND gets empty lists, as from the agent;
	 * from a table made to look older than change_item (gwt_host_set_size) the lists
	 * filled, as that agent, which ignores the flag, hands them */
	int lists =
	    !(kit_desc_flags(desc) & GW_SUB_LISTS_ON_DEMAND) || !GW_HAS(&h->host, change_item);
	int rc = desc->apply(state, &h->host, host_change_begin(&h->ctx, change, !lists, NULL));
	host_call_done(&h->ctx); /* item_typed()'s copies live until apply() returns */
	int64_t n = call_tick(h, desc, state);
	if (next)
		*next = n;
	return rc;
}

int64_t gwt_tick_until(struct gwt_host *h, const struct gw_subscriber *desc, void *state,
                       int64_t next, int64_t until_ms)
{
	if (!h->fake_clock)
		gwt_clock_set(h, gw_mono_ms());
	for (int calls = 0; next >= 0 && next <= until_ms && calls < MAX_TICKS; calls++) {
		if (next > h->now)
			h->now = next;
		next = call_tick(h, desc, state);
	}
	if (until_ms > h->now)
		h->now = until_ms;
	return next;
}

/* ---------------------------------------------------------------- versions */

struct gwt_version {
	struct group_data *gd;
	int group;  /* gd->group, or a number past GW_GROUP_COUNT */
	char *name; /* the group's name */
};

/* A digest of the items' text, hex: two 64-bit FNV-1a runs with different seeds. An md5 is
 * only a version's tag to a plugin, so any digest that differs with the text will do. */
static void digest_of(const char *text, char out[33])
{
	uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		a = (a ^ *p) * 0x100000001b3ULL;
		b = (b ^ *p) * 0x100000001b3ULL;
		b ^= b >> 29;
	}
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static struct gwt_version *version_new(enum gw_group parse_as, int group, const char *name,
                                       const char *md5, int64_t lmt, const char *items, char *err,
                                       size_t cap)
{
	if (!items)
		items = "[]";
	char digest[33];
	if (!md5) {
		digest_of(items, digest);
		md5 = digest;
	}
	/* the agent's rule, checked before the text is built around it */
	size_t n = strspn(md5, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
	if (n == 0 || n > 64 || md5[n]) {
		say(err, cap, "md5: 1 to 64 letters and digits (NULL for a digest of the items)");
		return NULL;
	}
	struct gwt_version *v = calloc(1, sizeof *v);
	struct strbuf doc = {0};
	strbuf_addf(&doc, "{\"md5\":\"%s\",\"lastModifyTime\":%lld,\"data\":%s}", md5,
	            (long long)lmt, items);
	struct gw_err e = {0};
	if (!v || doc.oom || !doc.p || !(v->name = strdup(name))) {
		say(err, cap, "out of memory");
		goto fail;
	}
	if (model_parse_group(parse_as, doc.p, doc.len, "test", &v->gd, &e) < 0) {
		say(err, cap, e.msg);
		goto fail;
	}
	v->group = group;
	strbuf_reset(&doc);
	return v;
fail:
	strbuf_reset(&doc);
	gwt_version_free(v);
	return NULL;
}

struct gwt_version *gwt_version_new(enum gw_group group, const char *md5, int64_t last_modify_time,
                                    const char *items_json, char *err, size_t cap)
{
	if ((unsigned)group >= GW_GROUP_COUNT) {
		say(err, cap, "an unknown group: use gwt_version_new_unknown()");
		return NULL;
	}
	return version_new(group, (int)group, gw_group_name(group), md5, last_modify_time,
	                   items_json, err, cap);
}

struct gwt_version *gwt_version_new_unknown(int group, const char *name, const char *md5,
                                            int64_t last_modify_time, const char *items_json,
                                            char *err, size_t cap)
{
	if (group < GW_GROUP_COUNT || !name || !*name) {
		say(err, cap, "an unknown group is numbered from GW_GROUP_COUNT and has a name");
		return NULL;
	}
	return version_new(NAME_UNKNOWN, group, name, md5, last_modify_time, items_json, err, cap);
}

void gwt_version_set_stale(struct gwt_version *v, int stale)
{
	v->gd->provisional = stale != 0;
}

const char *gwt_version_md5(const struct gwt_version *v)
{
	return v->gd->md5;
}

int gwt_version_group(const struct gwt_version *v)
{
	return v->group;
}

void gwt_version_free(struct gwt_version *v)
{
	if (!v)
		return;
	group_data_unref(v->gd);
	free(v->name);
	free(v);
}

/* ---------------------------------------------------------------- changes */

struct gwt_change {
	struct group_data *from, *to;
	char *name;
	struct diff diff;
	struct abi_change abi; /* every list made, as the agent makes them (model/abi.h) */
};

/* A group newer than the header: the change and its items carry its number and name. A
 * version of such a group is the kit's own (parsed as a key + JSON group, never shared with
 * the agent's code) and always carries the one number, so its items may be retagged, again
 * and again to the same value, whichever change shows them. */
static void retag(struct gw_change *c, int group, const char *name)
{
	c->group = (enum gw_group)group;
	c->group_name = name;
	for (size_t i = 0; i < c->n_items; i++)
		((struct gw_item *)c->items[i])->group = (enum gw_group)group;
	for (size_t i = 0; i < c->n_removed; i++)
		((struct gw_item *)c->removed[i])->group = (enum gw_group)group;
	for (size_t i = 0; i < c->n_updated; i++)
		((struct gw_item *)c->updated[i].old_item)->group = (enum gw_group)group;
}

struct gwt_change *kit_change_build(const struct gwt_version *from, const struct gwt_version *to,
                                    int typed, char *err, size_t cap)
{
	if (!to || (from && from->group != to->group)) {
		say(err, cap, to ? "the two versions are of different groups" : "no version to");
		return NULL;
	}
	struct gwt_change *c = calloc(1, sizeof *c);
	if (!c || !(c->name = strdup(to->name))) {
		free(c);
		say(err, cap, "out of memory");
		return NULL;
	}
	c->from = from ? group_data_ref(from->gd) : NULL;
	c->to = group_data_ref(to->gd);
	struct gw_err e = {0};
	/* every item with its typed view when the plugin under test may read them all; none
	 * made (only PLUGIN's, which the agent always gives) for one that asks for them */
	if (diff_build(&c->diff, to->gd->group, c->from, c->to, &e) < 0 ||
	    abi_change_make(&c->abi, &c->diff, c->from, c->to, 1, typed, &e) != 0) {
		say(err, cap, e.msg);
		gwt_change_free(c);
		return NULL;
	}
	if (to->group >= GW_GROUP_COUNT)
		retag(&c->abi.change, to->group, c->name);
	return c;
}

struct gwt_change *gwt_change_between(const struct gwt_version *from, const struct gwt_version *to,
                                      char *err, size_t cap)
{
	return kit_change_build(from, to, 1, err, cap);
}

struct gwt_change *gwt_change_new(enum gw_group group, const char *from_json, const char *to_json,
                                  char *err, size_t cap)
{
	struct gwt_version *from = NULL, *to = NULL;
	struct gwt_change *c = NULL;
	if (from_json && !(from = gwt_version_new(group, "gwt1", 1, from_json, err, cap)))
		return NULL;
	if ((to = gwt_version_new(group, "gwt2", 2, to_json, err, cap)))
		c = gwt_change_between(from, to, err, cap);
	gwt_version_free(from);
	gwt_version_free(to);
	return c;
}

const struct gw_change *gwt_change(const struct gwt_change *c)
{
	return &c->abi.change;
}

void gwt_change_free(struct gwt_change *c)
{
	if (!c)
		return;
	abi_change_free(&c->abi);
	diff_free(&c->diff);
	group_data_unref(c->from);
	group_data_unref(c->to);
	free(c->name);
	free(c);
}
