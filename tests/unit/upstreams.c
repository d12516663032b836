/*
 * A test subscriber for the groups the agent syncs (host->group_configured, issue 21 item
 * 8): it writes the upstreams of every divide selector to one file, "SELECTOR_ID URL" per
 * line, taken from DISCOVER_UPSTREAM when the agent syncs that group (ShenYu 2.6+) and
 * from the selector's `handle` otherwise (older admins), as a gateway would.
 *
 * Its output depends on SELECTOR and, when it is synced, on DISCOVER_UPSTREAM, so it writes
 * only once it holds both: at start, once. Without host->group_configured (an older agent)
 * it cannot know whether DISCOVER_UPSTREAM will ever come, writes from the handles after
 * SELECTOR and again when DISCOVER_UPSTREAM arrives: twice. Every write appends a line
 * "write N SOURCE" to the `writes` file, so a test can count them.
 *
 * Options: out: PATH (required), writes: PATH (required). Built only for `make check`.
 */
#include <gwsync/subscriber.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ups {
	char *out, *writes;
	int use_discovery;      /* 1 synced, 0 not, -1 cannot tell (an older agent) */
	json_t *from_handle;    /* selector id -> [url] from the divide selectors' handles */
	json_t *from_discovery; /* selector id -> [url] of the upstreams that are up */
	int have_selectors, have_discovery;
	int n_writes;
};

static const struct gw_option options[] = {
    {"out", GW_OPT_PATH, NULL, 1, "the upstream list"},
    {"writes", GW_OPT_PATH, NULL, 1, "one line per write of the list"},
    {NULL, 0, NULL, 0, NULL},
};

static void ups_fini(void *state, const struct gw_host *host)
{
	struct ups *u = state;
	if (!u)
		return;
	json_decref(u->from_handle);
	json_decref(u->from_discovery);
	free(u->out);
	free(u->writes);
	free(u);
}

static int ups_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct ups *u = calloc(1, sizeof *u);
	const char *out = NULL, *writes = NULL;
	if (!u || host->config_string(host, config, "out", &out) != GW_CONFIG_OK ||
	    host->config_string(host, config, "writes", &writes) != GW_CONFIG_OK) {
		host->error(host, "out and writes are required");
		ups_fini(u, host);
		return -1;
	}
	u->out = strdup(out);
	u->writes = strdup(writes);
	u->from_handle = json_object();
	u->from_discovery = json_object();
	u->use_discovery = GW_HAS(host, group_configured)
	                       ? host->group_configured(host, GW_GROUP_DISCOVER_UPSTREAM)
	                       : -1;
	*state = u;
	return 0;
}

/* [url...] of a divide selector's handle: a JSON text of [{"upstreamUrl": ...}, ...]. */
static json_t *handle_urls(const char *handle)
{
	json_t *urls = json_array();
	json_t *list = handle ? json_loads(handle, 0, NULL) : NULL;
	size_t i;
	json_t *up;
	json_array_foreach(list, i, up)
	{
		const char *url = json_string_value(json_object_get(up, "upstreamUrl"));
		if (url)
			json_array_append_new(urls, json_string(url));
	}
	json_decref(list);
	return urls;
}

/* [url...] of a DISCOVER_UPSTREAM item's upstreamDataList whose status is 0 (up). */
static json_t *discovery_urls(json_t *item)
{
	json_t *urls = json_array();
	size_t i;
	json_t *up;
	json_array_foreach(json_object_get(item, "upstreamDataList"), i, up)
	{
		const char *url = json_string_value(json_object_get(up, "url"));
		if (url && json_integer_value(json_object_get(up, "status")) == 0)
			json_array_append_new(urls, json_string(url));
	}
	return urls;
}

static int write_out(struct ups *u, const struct gw_host *host)
{
	json_t *source = u->use_discovery == 1 ? u->from_discovery : u->from_handle;
	FILE *f = fopen(u->out, "w");
	if (!f) {
		host->error(host, "cannot write %s", u->out);
		return -1;
	}
	const char *id;
	json_t *sel;
	/* json objects keep insertion order: the selectors in the admin's order */
	json_object_foreach(u->from_handle, id, sel)
	{
		json_t *urls = json_object_get(source, id);
		size_t i;
		json_t *url;
		json_array_foreach(urls, i, url) fprintf(f, "%s %s\n", id, json_string_value(url));
	}
	fclose(f);
	FILE *w = fopen(u->writes, "a");
	if (w) {
		fprintf(w, "write %d %s\n", ++u->n_writes,
		        u->use_discovery == 1 ? "discovery" : "handle");
		fclose(w);
	}
	return 0;
}

static int ups_apply(void *state, const struct gw_host *host, const struct gw_change *c)
{
	struct ups *u = state;
	if (c->group == GW_GROUP_SELECTOR) {
		json_object_clear(u->from_handle);
		for (size_t i = 0; i < c->n_items; i++) {
			const struct gw_selector_data *s = c->items[i]->selector;
			if (s && s->plugin_name && strcmp(s->plugin_name, "divide") == 0)
				json_object_set_new(u->from_handle, s->id, handle_urls(s->handle));
		}
		u->have_selectors = 1;
	} else if (c->group == GW_GROUP_DISCOVER_UPSTREAM) {
		json_object_clear(u->from_discovery);
		for (size_t i = 0; i < c->n_items; i++) {
			json_t *item = json_loads(c->items[i]->json, 0, NULL);
			json_object_set_new(u->from_discovery, c->items[i]->key,
			                    discovery_urls(item));
			json_decref(item);
		}
		u->have_discovery = 1;
		if (u->use_discovery == -1)
			u->use_discovery = 1; /* it came after all */
	} else {
		return 0; /* not mine: nothing written depends on it */
	}
	/* everything the output depends on is held */
	if (!u->have_selectors || (u->use_discovery == 1 && !u->have_discovery))
		return 0;
	return write_out(u, host);
}

static const struct gw_subscriber desc = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "upstreams",
    .description = "the divide selectors' upstreams, from DISCOVER_UPSTREAM when synced",
    .options = options,
    .init = ups_init,
    .apply = ups_apply,
    .fini = ups_fini,
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &desc;
}
