/*
 * The `log` subscriber: writes every change it receives to the agent's log, one line per
 * added, updated and removed item and one summary line per change. It is the simplest
 * complete plugin (and the one to copy from): a static description, a private state
 * built from its `config:` map in init(), no globals, no threads.
 *
 * Options (declared below, so the agent checks them and --plugin-help prints them):
 *   items: true|false   one line per item (default true); false keeps only the summaries
 *   level: info|debug   the level of the lines (default info)
 */
#include <gwsync/subscriber.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct log_state {
	int items;
	enum gw_log_level level;
};

static int log_init(const struct gw_host *host, const struct gw_config *config, void **state)
{
	struct log_state *st = calloc(1, sizeof *st);
	if (!st) {
		host->error(host, "out of memory");
		return -1;
	}
	st->level = GW_LOG_INFO;

	const char *level = NULL;
	if (host->config_bool(host, config, "items", &st->items) == GW_CONFIG_INVALID ||
	    host->config_string(host, config, "level", &level) == GW_CONFIG_INVALID)
		goto fail;
	if (level && strcmp(level, "debug") == 0) {
		st->level = GW_LOG_DEBUG;
	} else if (level && strcmp(level, "info") != 0) {
		host->error(host, "level: expected info or debug, got \"%s\"", level);
		goto fail;
	}
	*state = st;
	return 0;
fail:
	free(st);
	return -1;
}

static const char *or_dash(const char *s)
{
	return s ? s : "-";
}

/* An AI proxy API key's key is selectorId::proxyApiKey, and the proxy key is a credential
 * the gateway's clients present: shown as its first 4 characters, like the agent does. */
static const char *shown_key(const struct gw_item *it, char *buf, size_t cap)
{
	const char *sep = it->group == GW_GROUP_AI_PROXY_API_KEY ? strstr(it->key, "::") : NULL;
	if (!sep)
		return it->key;
	snprintf(buf, cap, "%.*s%.4s...", (int)(sep - it->key + 2), it->key, sep + 2);
	return buf;
}

/* Keys and names are the admin's text: a control character in one (a "\n" followed by a
 * forged "... info store: accepted ...") must not start a line of its own in whatever log
 * the host writes. The agent's log escapes every line again; a plugin cannot know its host
 * does, so it escapes its own fields: \n \r \t, and \xHH for the other C0 controls and
 * DEL. Text without them is used as it is (no copy). */
static const char *one_line(const char *s, char *buf, size_t cap)
{
	const char *p = s;
	while (*p && (unsigned char)*p >= 0x20 && *p != 0x7f)
		p++;
	if (!*p)
		return s;
	size_t n = 0;
	for (p = s; *p && n + 5 < cap; p++) {
		unsigned char c = (unsigned char)*p;
		if (c >= 0x20 && c != 0x7f)
			buf[n++] = (char)c;
		else if (c == '\n' || c == '\r' || c == '\t')
			buf[n++] = '\\', buf[n++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
		else
			n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c);
	}
	buf[n] = '\0';
	return buf;
}

static void log_item(const struct log_state *st, const struct gw_host *h, const char *group,
                     const char *what, const struct gw_item *it)
{
	char shown[300], key[600], name[600];
	if (!it) { /* the agent could not make it (out of memory): say so, go on */
		h->log(h, GW_LOG_WARN, "%s %s: an item could not be read (out of memory)", group,
		       what);
		return;
	}
	h->log(h, st->level, "%s %s key=%s name=%s", group, what,
	       one_line(shown_key(it, shown, sizeof shown), key, sizeof key),
	       one_line(or_dash(it->name), name, sizeof name));
}

static int log_apply(void *state, const struct gw_host *h, const struct gw_change *ch)
{
	struct log_state *st = state;
	const char *g = ch->group_name;

	if (st->items) {
		for (size_t i = 0; i < ch->n_added; i++)
			log_item(st, h, g, "added", gw_change_entry(h, ch, GW_LIST_ADDED, i));
		for (size_t i = 0; i < ch->n_updated; i++)
			log_item(st, h, g, "updated",
			         gw_change_entry(h, ch, GW_LIST_UPDATED_NEW, i));
		for (size_t i = 0; i < ch->n_removed; i++)
			log_item(st, h, g, "removed", gw_change_entry(h, ch, GW_LIST_REMOVED, i));
	}
	char md5[200], prev[200];
	h->log(h, st->level,
	       "%s version %s lastModifyTime %lld (was %s): %zu items, +%zu ~%zu -%zu%s", g,
	       one_line(or_dash(ch->version.md5), md5, sizeof md5),
	       (long long)ch->version.last_modify_time,
	       ch->previous.md5 ? one_line(ch->previous.md5, prev, sizeof prev) : "nothing",
	       ch->n_items, ch->n_added, ch->n_updated, ch->n_removed,
	       ch->confirmed_only ? " (the snapshot's data, now confirmed by an admin)"
	       : ch->stale        ? " (from the local snapshot)"
	                          : "");
	return 0;
}

static void log_fini(void *state, const struct gw_host *host)
{
	free(state);
}

static const struct gw_option log_options[] = {
    {"items", GW_OPT_BOOL, "true", 0,
     "one line per added, updated and removed item; false: "
     "only the summary line of each change"},
    {"level", GW_OPT_STRING, "info", 0, "the level of the lines: info or debug"},
    {NULL, 0, NULL, 0, NULL},
};

static const struct gw_subscriber log_subscriber = {
    GWSYNC_SUBSCRIBER_INIT,
    .name = "log",
    .description = "writes every change to the agent's log, one line per item",
    .options = log_options,
    .init = log_init,
    .apply = log_apply,
    .fini = log_fini,
    /* keys and names only, of the items it asks for */
    .flags = GW_SUB_TYPED_ON_DEMAND | GW_SUB_LISTS_ON_DEMAND,
};

const struct gw_subscriber *gwsync_subscriber(void)
{
	return &log_subscriber;
}
