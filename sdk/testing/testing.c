/*
 * libgwsync-testing (see include/gwsync/testing.h): thin wrappers over the agent's own
 * YAML tree, option check, host table, JSON model and delta, compiled into one shared
 * library with everything but the gwt_ functions hidden.
 */
#include <gwsync/testing.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/ytree.h"
#include "core/strbuf.h"
#include "deliver/host.h"
#include "deliver/plugin_config.h"
#include "deliver/plugin_options.h"
#include "model/diff.h"
#include "model/typed.h"
#include "model/model.h"

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
	struct gw_err e = {{0}};
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
	struct gw_err e = {{0}};
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
};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static void t_logv(const struct gw_host *host, enum gw_log_level level, const char *fmt, va_list ap)
{
	struct gwt_host *h = (struct gwt_host *)((char *)host - offsetof(struct gwt_host, host));
	char line[2048];
	vsnprintf(line, sizeof line, fmt, ap);
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
	memset(&h->log, 0, sizeof h->log);
	h->ctx.instance = h->instance;
	h->ctx.options = options;
	host_table_init(&h->host, &h->ctx);
	h->host.log = t_log;
	h->host.logv = t_logv;
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

void gwt_host_free(struct gwt_host *h)
{
	if (!h)
		return;
	host_call_done(&h->ctx);
	strbuf_reset(&h->log);
	free(h->instance);
	free(h);
}

/* ---------------------------------------------------------------- change */

struct gwt_change {
	struct group_data *from, *to;
	struct diff diff;
};

static struct group_data *version(enum gw_group g, const char *items, int n, char *err, size_t cap)
{
	if (!items)
		return NULL;
	struct strbuf doc = {0};
	strbuf_addf(&doc, "{\"md5\":\"gwt%d\",\"lastModifyTime\":%d,\"data\":%s}", n, n, items);
	struct group_data *gd = NULL;
	struct gw_err e = {{0}};
	if (doc.oom || !doc.p || model_parse_group(g, doc.p, doc.len, "test", &gd, &e) < 0) {
		say(err, cap, doc.oom || !doc.p ? "out of memory" : e.msg);
		gd = NULL;
	}
	strbuf_reset(&doc);
	return gd;
}

struct gwt_change *gwt_change_new(enum gw_group group, const char *from_json, const char *to_json,
                                  char *err, size_t cap)
{
	struct gwt_change *c = calloc(1, sizeof *c);
	if (!c) {
		say(err, cap, "out of memory");
		return NULL;
	}
	c->from = version(group, from_json, 1, err, cap);
	if (from_json && !c->from)
		goto fail;
	c->to = version(group, to_json ? to_json : "[]", 2, err, cap);
	if (!c->to)
		goto fail;
	struct gw_err e = {{0}};
	/* every item with its typed view: the plugin under test may read them all */
	if (model_typed_fill(c->to, c->from, &e) != 0 ||
	    diff_build(&c->diff, group, c->from, c->to, &e) < 0) {
		say(err, cap, e.msg);
		goto fail;
	}
	return c;
fail:
	gwt_change_free(c);
	return NULL;
}

const struct gw_change *gwt_change(const struct gwt_change *c)
{
	return &c->diff.change;
}

void gwt_change_free(struct gwt_change *c)
{
	if (!c)
		return;
	diff_free(&c->diff);
	group_data_unref(c->from);
	group_data_unref(c->to);
	free(c);
}
