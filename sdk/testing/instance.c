/*
 * A plugin run as the agent runs it (see include/gwsync/testing.h, "instances"): its .so
 * opened as the loader opens it, and one instance started, delivered to and stopped as
 * start-up, the dispatcher and shutdown do. Built on the kit's own public functions (and
 * kit.h's change without typed views), so it is what a plugin author's test would write by
 * hand, written once: the versions a subscriber last accepted are the ones the next change
 * is built from, and a refused version is forgotten, so the retry's delta is from the last
 * accepted one. What the header calls optional (init(), tick(), fini()) may be NULL, and a
 * plugin that declared GW_SUB_TYPED_ON_DEMAND gets no typed view it did not ask for.
 */
#include <gwsync/testing.h>

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit.h"

#define MAX_GROUPS (GW_GROUP_COUNT + 16) /* the header's groups and gwt_host_add_group()'s */

static void say(char *err, size_t cap, const char *msg)
{
	if (err && cap)
		snprintf(err, cap, "%s", msg);
}

/* ---------------------------------------------------------------- the .so */

struct gwt_plugin {
	void *dl;
	const struct gw_subscriber *desc;
};

struct gwt_plugin *gwt_plugin_open(const char *path, char *err, size_t cap)
{
	struct gwt_plugin *p = calloc(1, sizeof *p);
	if (!p) {
		say(err, cap, "out of memory");
		return NULL;
	}
	if (!(p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		say(err, cap, dlerror());
		free(p);
		return NULL;
	}
	void *sym = dlsym(p->dl, GWSYNC_SUBSCRIBER_SYMBOL);
	const struct gw_subscriber *(*entry)(void);
	memcpy(&entry, &sym, sizeof entry); /* ISO C has no object -> function pointer cast */
	if (!sym || !(p->desc = entry())) {
		if (err && cap)
			snprintf(err, cap, "%s: %s", path,
			         sym ? GWSYNC_SUBSCRIBER_SYMBOL "() returned NULL"
			             : "no " GWSYNC_SUBSCRIBER_SYMBOL "() in it");
		dlclose(p->dl);
		free(p);
		return NULL;
	}
	return p;
}

const struct gw_subscriber *gwt_plugin_desc(const struct gwt_plugin *p)
{
	return p->desc;
}

void gwt_plugin_close(struct gwt_plugin *p)
{
	if (!p)
		return;
	dlclose(p->dl);
	free(p);
}

/* ---------------------------------------------------------------- an instance */

struct gwt_instance {
	const struct gw_subscriber *desc;
	struct gwt_config *cfg;
	struct gwt_host *h;
	void *state;
	int inited;
	int typed; /* 0: the plugin declared GW_SUB_TYPED_ON_DEMAND */
	struct gwt_version *accepted[MAX_GROUPS];
};

struct gwt_instance *gwt_instance_start_groups(const struct gw_subscriber *desc, const char *name,
                                               const char *yaml, const enum gw_group *groups,
                                               size_t n_groups, char *err, size_t cap)
{
	struct gwt_instance *in = calloc(1, sizeof *in);
	if (!in) {
		say(err, cap, "out of memory");
		return NULL;
	}
	in->desc = desc;
	in->typed = !(kit_desc_flags(desc) & GW_SUB_TYPED_ON_DEMAND);
	if (!(in->cfg = gwt_config_parse(yaml, err, cap)) ||
	    gwt_config_check(in->cfg, desc->options, err, cap) != 0)
		goto fail;
	if (!(in->h = gwt_host_new(name, desc->options))) {
		say(err, cap, "out of memory");
		goto fail;
	}
	/* the groups are fixed from init() on (subscriber.h), so they are set before it */
	if (groups && gwt_host_set_groups(in->h, groups, n_groups) != 0) {
		say(err, cap, "more than 64 synced groups");
		goto fail;
	}
	/* init() is optional: without it the state is NULL, as in the agent */
	if (desc->init && desc->init(gwt_host(in->h), gwt_config(in->cfg), &in->state) != 0) {
		if (err && cap)
			snprintf(err, cap, "init() failed: %s", gwt_host_error(in->h));
		goto fail;
	}
	in->inited = 1;
	return in;
fail:
	gwt_instance_stop(in);
	return NULL;
}

struct gwt_instance *gwt_instance_start(const struct gw_subscriber *desc, const char *name,
                                        const char *yaml, char *err, size_t cap)
{
	return gwt_instance_start_groups(desc, name, yaml, NULL, 0, err, cap);
}

struct gwt_host *gwt_instance_host(const struct gwt_instance *in)
{
	return in->h;
}

void *gwt_instance_state(const struct gwt_instance *in)
{
	return in->state;
}

int gwt_instance_deliver(struct gwt_instance *in, struct gwt_version *v, int64_t *next, char *err,
                         size_t cap)
{
	int g = v ? gwt_version_group(v) : -1;
	if (g < 0 || g >= MAX_GROUPS) {
		say(err, cap, v ? "a group past the ones the kit knows" : "no version");
		gwt_version_free(v);
		return -1;
	}
	struct gwt_change *c = kit_change_build(in->accepted[g], v, in->typed, err, cap);
	if (!c) {
		gwt_version_free(v);
		return -1;
	}
	int rc = gwt_apply(in->h, in->desc, in->state, gwt_change(c), next);
	gwt_change_free(c);
	if (rc == 0) {
		gwt_version_free(in->accepted[g]);
		in->accepted[g] = v;
	} else {
		say(err, cap, gwt_host_error(in->h));
		gwt_version_free(v);
	}
	return rc;
}

const struct gwt_version *gwt_instance_accepted(const struct gwt_instance *in, int group)
{
	return group >= 0 && group < MAX_GROUPS ? in->accepted[group] : NULL;
}

void gwt_instance_stop(struct gwt_instance *in)
{
	if (!in)
		return;
	if (in->inited && in->desc->fini)
		in->desc->fini(in->state, gwt_host(in->h));
	for (int g = 0; g < MAX_GROUPS; g++)
		gwt_version_free(in->accepted[g]);
	gwt_host_free(in->h);
	gwt_config_free(in->cfg);
	free(in);
}
