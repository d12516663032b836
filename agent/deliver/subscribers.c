/*
 * Subscriber loader (see subscribers.h). Each check runs before the plugin's own code is
 * trusted with anything: the ABI version is compared before any other field of the
 * description is read, because a plugin built against another header may lay the struct
 * out differently. Errors name the instance and the file so an operator knows which
 * YAML entry and which .so to look at.
 */
#include "deliver/subscribers.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deliver/abi1.h"
#include "deliver/plugin_config.h"
#include "deliver/plugin_options.h"
#include "config/suggest.h"
#include "config/ytree.h"
#include "core/memory.h"
#include "core/readfile.h"
#include "shared/strbuf.h"

#ifdef HAVE_CONFIG_H
#include <config.h> /* the build's PACKAGE_VERSION (angle brackets: not agent/config.h) */
#endif
#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif
#ifndef PKGLIBDIR
#define PKGLIBDIR "/usr/local/lib/gwsync"
#endif

typedef const struct gw_subscriber *(*entry_fn)(void);

static int is_file(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Where a bare name was looked for, and the plugin names found there (for "did you mean"),
 * so a miss lists every directory searched, in order, and the closest name. */
struct search {
	struct strbuf dirs;
	char *names[128];
	size_t n_names;
};

/* Note directory dir[0..dlen) as searched (shown as `shown`, or as itself) and collect
 * the plugin names in it: NAME.so, or with `suffix` NAME/SUFFIX/NAME.so (a build tree). */
static void search_note(struct search *se, const char *shown, const char *dir, size_t dlen,
                        const char *suffix)
{
	if (shown)
		strbuf_addf(&se->dirs, "%s%s", se->dirs.len ? ", " : "", shown);
	else
		strbuf_addf(&se->dirs, "%s%.*s", se->dirs.len ? ", " : "", (int)dlen, dir);
	char d[PATH_MAX];
	if (dlen >= sizeof d)
		return;
	memcpy(d, dir, dlen);
	d[dlen] = '\0';
	DIR *dh = opendir(d);
	if (!dh)
		return;
	for (struct dirent *e; (e = readdir(dh)) && se->n_names < 128;) {
		size_t l = strlen(e->d_name);
		if (e->d_name[0] == '.')
			continue;
		if (suffix) { /* the build tree: plugins/NAME/.libs/NAME.so */
			char so[PATH_MAX];
			if (snprintf(so, sizeof so, "%s/%s/%s/%s.so", d, e->d_name, suffix,
			             e->d_name) >= (int)sizeof so ||
			    !is_file(so))
				continue;
		} else if (l <= 3 || strcmp(e->d_name + l - 3, ".so") != 0) {
			continue;
		} else {
			l -= 3;
		}
		se->names[se->n_names] = strndup(e->d_name, l);
		if (se->names[se->n_names])
			se->n_names++;
	}
	closedir(dh);
}

static void search_free(struct search *se)
{
	strbuf_reset(&se->dirs);
	for (size_t i = 0; i < se->n_names; i++)
		free(se->names[i]);
}

int subscribers_resolve(const char *library, char *path, size_t cap, struct gw_err *err)
{
	if (!library || !*library)
		return gw_errf(err, "empty library name");
	if (strchr(library, '/')) {
		if (snprintf(path, cap, "%s", library) >= (int)cap)
			return gw_errf(err, "library path %s is too long", library);
		if (!is_file(path))
			return gw_errf(err, "library %s: %s", library, strerror(errno));
		return 0;
	}

	size_t ln = strlen(library);
	const char *ext = ln > 3 && strcmp(library + ln - 3, ".so") == 0 ? "" : ".so";
	int base = (int)(ln - (ext[0] ? 0 : 3));
	struct search se;
	memset(&se, 0, sizeof se);
	const char *env = getenv(GW_PLUGIN_PATH_ENV);
	const char *p = env ? env : "";
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
		if (dlen > 0) {
			int n = snprintf(path, cap, "%.*s/%s%s", (int)dlen, p, library, ext);
			if (n > 0 && (size_t)n < cap && is_file(path))
				goto found;
			search_note(&se, NULL, p, dlen, NULL);
		}
		p += dlen + (colon ? 1 : 0);
	}
	int n = snprintf(path, cap, "%s/%s%s", PKGLIBDIR, library, ext);
	if (n > 0 && (size_t)n < cap && is_file(path))
		goto found;
	search_note(&se, NULL, PKGLIBDIR, strlen(PKGLIBDIR), NULL);
	/* An uninstalled gwsyncd in its build tree finds the bundled plugins beside it
	 * (BUILD/plugins/NAME/.libs/NAME.so), so `build/gwsyncd --check -c etc/gwsync.yaml`
	 * works before `make install`. Named in a miss only where that tree exists. */
	char exe[4096];
	int in_build_tree = 0;
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	char *slash = el > 0 ? (exe[el] = '\0', strrchr(exe, '/')) : NULL;
	if (slash) {
		*slash = '\0';
		n = snprintf(path, cap, "%s/plugins/%.*s/.libs/%.*s.so", exe, base, library, base,
		             library);
		if (n > 0 && (size_t)n < cap && is_file(path))
			goto found;
		char tree[4200], shown[4300];
		struct stat sb;
		snprintf(tree, sizeof tree, "%s/plugins", exe);
		if (stat(tree, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			in_build_tree = 1;
			snprintf(shown, sizeof shown, "%s/*/.libs", tree);
			search_note(&se, shown, tree, strlen(tree), ".libs");
		}
	}
	char want[256];
	snprintf(want, sizeof want, "%.*s", base, library);
	const char *best = suggest_closest(want, (const char *const *)se.names, se.n_names);
	gw_errf(err,
	        "library '%s' not found: no %s%s in %s (searched in this order: the directories "
	        "of %s%s, then %s%s)%s%s%s",
	        library, library, ext, se.dirs.p ? se.dirs.p : "(out of memory)",
	        GW_PLUGIN_PATH_ENV, env && *env ? "" : " (unset)", PKGLIBDIR,
	        in_build_tree ? ", then the build tree beside this gwsyncd" : "",
	        best ? " (did you mean '" : "", best ? best : "", best ? "'?)" : "");
	search_free(&se);
	return -1;
found:
	search_free(&se);
	return 0;
}

/* The smallest ABI-2 description the agent can use: abi, size, name, the four callbacks. */
#define MIN_DESC_SIZE (offsetof(struct gw_subscriber, fini) + sizeof(void (*)(void)))

/* dlopen, entry point, ABI, apply(): everything that needs no instance. */
static int open_file(const char *path, void **dl, int *abi, const void **raw, struct gw_err *err)
{
	/* the loader opens it by path, blocking: a FIFO there would hang start-up for ever,
	 * so only a regular file is handed over (core/readfile.h) */
	if (readfile_check(path, err) < 0)
		return -1;
	dlerror();
	*dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!*dl) {
		const char *why = dlerror();
		return gw_errf(err, "%s: cannot load: %s", path,
		               why ? why : "unknown dlopen error");
	}

	/* POSIX's sanctioned way to turn a dlsym() result into a function pointer. */
	entry_fn entry;
	void *sym = dlsym(*dl, GWSYNC_SUBSCRIBER_SYMBOL);
	if (!sym)
		return gw_errf(err,
		               "%s: no entry point %s() (is it a gwsync subscriber plugin built "
		               "against <gwsync/subscriber.h>?)",
		               path, GWSYNC_SUBSCRIBER_SYMBOL);
	memcpy(&entry, &sym, sizeof entry);

	const struct gw_subscriber *d = entry();
	if (!d)
		return gw_errf(err, "%s: %s() returned NULL", path, GWSYNC_SUBSCRIBER_SYMBOL);
	/* `abi` is the first member in every ABI: nothing else is read before it is known. */
	*abi = d->abi;
	*raw = d;
	if (d->abi == 1) {
		const struct gw1_subscriber *d1 = (const void *)d;
		if (!d1->apply)
			return gw_errf(err, "%s: plugin '%s' has no apply() callback", path,
			               d1->name ? d1->name : "?");
		return 0;
	}
	if (d->abi != GWSYNC_SUBSCRIBER_ABI)
		return gw_errf(err,
		               "%s: built for subscriber ABI %d, but this gwsyncd (%s) speaks ABI "
		               "%d (and loads ABI 1); rebuild the plugin against this version's "
		               "<gwsync/subscriber.h>",
		               path, d->abi, PACKAGE_VERSION, GWSYNC_SUBSCRIBER_ABI);
	if (d->size < MIN_DESC_SIZE)
		return gw_errf(
		    err,
		    "%s: its description is %zu bytes, less than ABI %d's smallest (%zu): "
		    "start it with GWSYNC_SUBSCRIBER_INIT",
		    path, d->size, GWSYNC_SUBSCRIBER_ABI, (size_t)MIN_DESC_SIZE);
	if (!d->apply)
		return gw_errf(err, "%s: plugin '%s' has no apply() callback", path,
		               d->name ? d->name : "?");
	return 0;
}

/* A member of the plugin's description, or NULL/0 if its `size` does not reach it. */
#define DESC_MEMBER(d, m)                                                                          \
	((d)->size >= offsetof(struct gw_subscriber, m) + sizeof((d)->m) ? (d)->m : 0)

int subscribers_open(const char *library, void **dl, int *abi, const struct gw_subscriber **desc,
                     char *path, size_t cap, struct gw_err *err)
{
	*dl = NULL;
	*desc = NULL;
	if (subscribers_resolve(library, path, cap, err) < 0)
		return -1;
	const void *raw = NULL;
	if (open_file(path, dl, abi, &raw, err) < 0)
		return -1;
	if (*abi == GWSYNC_SUBSCRIBER_ABI)
		*desc = raw;
	return 0;
}

/* Everything up to (not including) init(): find, dlopen, entry point, ABI, apply(). */
static int open_plugin(struct subscriber *s, const char *library, struct gw_err *err)
{
	char path[PATH_MAX];
	if (subscribers_resolve(library, path, sizeof path, err) < 0)
		return -1;
	s->path = strdup(path);
	if (!s->path)
		return gw_errf(err, "out of memory");
	const void *raw = NULL;
	if (open_file(path, &s->dl, &s->abi, &raw, err) < 0)
		return -1;
	/* main released GnuTLS's implicit initialisation: a plugin using it has its own */
	s->gnutls = gw_memory_gnutls_hold(s->dl);
	if (s->abi == 1) {
		s->v1 = abi1_new(raw, &s->host);
		if (!s->v1)
			return gw_errf(err, "out of memory");
		s->desc = &s->v1->face;
		s->typed = 1;
		s->lists = 1;
		return 0;
	}
	s->desc = raw;
	s->ctx.options = DESC_MEMBER(s->desc, options);
	s->typed = !(DESC_MEMBER(s->desc, flags) & GW_SUB_TYPED_ON_DEMAND);
	s->lists = !(DESC_MEMBER(s->desc, flags) & GW_SUB_LISTS_ON_DEMAND);
	s->ctx.typed = s->typed; /* the items host->change_item makes (deliver/host.c) */
	return 0;
}

/* The plugin's `config:` against its declared options (or the warning that it has none). */
static int check_options(struct subscriber *s, const struct cfg_subscriber *cs, size_t index,
                         struct gw_err *err)
{
	if (s->abi == 1)
		return 0; /* ABI 1 could not declare options: today's behaviour */
	if (!s->ctx.options) {
		if (cs->config && cs->config->type == YNODE_MAP && cs->config->n)
			LOG_W(s->log, "subscribers",
			      "subscriber '%s': plugin '%s' declares no options, so its config: is "
			      "not checked (a misspelt key is ignored)",
			      s->name, s->desc->name ? s->desc->name : "?");
		return 0;
	}
	char path[64] = "";
	if (!cs->bare_config)
		snprintf(path, sizeof path, "subscribers[%zu].config", index);
	return plugin_options_check(s->ctx.options, cs->config, cs->config, path, err);
}

/* A refusal with no position of its own gets the one of the entry it is about,
 * "FILE:LINE:COL: subscribers[I].KEY: subscriber 'NAME': why", so it reads like every
 * other configuration error (config/config_walk.c). */
static int at_entry(struct gw_err *err, const struct cfg *cfg, const struct cfg_subscriber *cs,
                    size_t i, const char *key)
{
	if (cs->bare_config) { /* gwsync-replay: its own words, and the -c file for init()'s */
		if (strcmp(key, "config") == 0 && cs->config && cs->config != cs->own_config)
			return gw_err_prefix(err, "%s", cs->config->file);
		return -1;
	}
	int line = cs->line, col = cs->col;
	if (strcmp(key, "library") == 0 && cs->library_line)
		line = cs->library_line, col = cs->library_col;
	else if (strcmp(key, "config") == 0 && cs->config && cs->config != cs->own_config)
		line = ytree_line(cs->config), col = ytree_col(cs->config);
	return gw_err_prefix(err, "%s:%d:%d: subscribers[%zu].%s: subscriber '%s'",
	                     cfg->path ? cfg->path : "(configuration)", line, col, i, key,
	                     cs->name ? cs->name : "?");
}

/* Whether a message already starts with a position in `file` ("FILE:LINE:COL: "). */
static int positioned(const char *msg, const char *file)
{
	size_t n = file ? strlen(file) : 0;
	return n && strncmp(msg, file, n) == 0 && msg[n] == ':' && msg[n + 1] >= '0' &&
	       msg[n + 1] <= '9';
}

static int load_one(struct subscriber *s, const struct cfg *cfg, const struct cfg_subscriber *cs,
                    size_t index, struct gw_log *log, struct gw_err *err)
{
	s->log = log;
	s->name = strdup(cs->name ? cs->name : "");
	if (!s->name)
		return gw_errf(err, "out of memory");
	s->ctx.instance = s->name;
	snprintf(s->ctx.config_key, sizeof s->ctx.config_key, "subscribers[%zu].config", index);
	s->ctx.config_bare = cs->bare_config;
	s->ctx.log = log;
	host_table_init(&s->host, &s->ctx);
	/* its own `groups:` (each one synced: config.c checked), else every synced group:
	 * what it is delivered, and what host->group_configured() answers */
	const enum gw_group *groups = cs->n_groups ? cs->groups : cfg->groups;
	size_t n_groups = cs->n_groups ? cs->n_groups : cfg->n_groups;
	host_set_groups(&s->ctx, groups, n_groups);
	for (size_t k = 0; k < n_groups; k++)
		s->groups |= 1u << groups[k];
	if (open_plugin(s, cs->library, err) < 0)
		return at_entry(err, cfg, cs, index, "library");
	if (check_options(s, cs, index, err) < 0) /* positioned by the check itself */
		return -1;

	s->state = s->v1; /* the ABI-1 face keeps its adapter as the state; else NULL */
	if (s->desc->init) {
		s->ctx.error[0] = '\0';
		s->ctx.in_init = 1;
		int rc = s->desc->init(&s->host, plugin_config_of(cs->config), &s->state);
		s->ctx.in_init = 0;
		if (rc != 0) {
			/* a config getter's refusal already names its file, position and key */
			if (positioned(s->ctx.error, cs->config ? cs->config->file : NULL))
				return gw_errf(err, "%s", s->ctx.error);
			if (s->ctx.error[0])
				gw_errf(err, "%s: init() failed: %s", s->path, s->ctx.error);
			else
				gw_errf(err, "%s: init() failed (returned %d; see the log above)",
				        s->path, rc);
			return at_entry(err, cfg, cs, index, "config");
		}
	}
	s->inited = 1;
	LOG_I(log, "subscribers", "loaded subscriber '%s': plugin '%s' (ABI %d) from %s", s->name,
	      s->desc->name ? s->desc->name : "?", s->abi, s->path);
	return 0;
}

int subscribers_load(const struct cfg *cfg, struct gw_log *log, struct subscribers **out,
                     struct gw_err *err)
{
	struct subscribers *subs = calloc(1, sizeof *subs);
	if (!subs)
		return gw_errf(err, "out of memory");
	if (cfg->n_subscribers) {
		subs->v = calloc(cfg->n_subscribers, sizeof *subs->v);
		if (!subs->v) {
			free(subs);
			return gw_errf(err, "out of memory");
		}
	}
	for (size_t i = 0; i < cfg->n_subscribers; i++) {
		const struct cfg_subscriber *cs = &cfg->subscribers[i];
		subs->n = i + 1; /* so subscribers_free() also cleans up a half-loaded one */
		if (load_one(&subs->v[i], cfg, cs, i, log, err) < 0) {
			subscribers_free(subs);
			return -1;
		}
	}
	*out = subs;
	return 0;
}

/* A host->error() message from a callback without a verdict (tick, fini): a warning. */
static void flush_error(struct subscriber *s, const char *where)
{
	if (!s->ctx.error[0])
		return;
	LOG_W(s->log, "subscribers", "subscriber '%s': %s: %s", s->name, where, s->ctx.error);
	s->ctx.error[0] = '\0';
}

void subscribers_free(struct subscribers *subs)
{
	if (!subs)
		return;
	for (size_t i = subs->n; i-- > 0;) {
		struct subscriber *s = &subs->v[i];
		if (s->inited && s->desc->fini) {
			s->ctx.error[0] = '\0';
			s->desc->fini(s->state, &s->host);
			flush_error(s, "fini()");
		}
		abi1_free(s->v1);
		host_call_done(&s->ctx);
		if (s->gnutls) /* before dlclose(): GnuTLS may have come with the plugin */
			gw_memory_gnutls_drop();
		if (s->dl)
			dlclose(s->dl);
		free(s->name);
		free(s->path);
	}
	free(subs->v);
	free(subs);
}

int subscriber_apply(struct subscriber *s, const struct gw_change *change, struct diff *lazy,
                     struct gw_err *why)
{
	s->ctx.error[0] = '\0';
	int rc = s->desc->apply(s->state, &s->host,
	                        host_change_begin(&s->ctx, change, !s->lists || lazy, lazy));
	host_call_done(&s->ctx);
	if (rc == 0) {
		if (s->ctx.error[0])
			LOG_W(s->log, "subscribers",
			      "subscriber '%s' accepted %s but called host->error(): %s", s->name,
			      change->group_name, s->ctx.error);
		s->ctx.error[0] = '\0';
		return 0;
	}
	if (s->ctx.error[0])
		gw_errf(why, "%s", s->ctx.error);
	else
		gw_errf(why, "apply() returned %d", rc);
	s->ctx.error[0] = '\0';
	return -1;
}

int subscriber_change(struct subscriber *s, enum gw_group g, struct group_data *from,
                      struct group_data *to, struct sub_change *c, struct gw_err *why)
{
	if (!s->lists)
		diff_count(&c->d, g, from, to);
	else if (diff_build(&c->d, g, from, to, why) < 0)
		return -1;
	if (abi_change_make(&c->ac, &c->d, from, to, s->lists, s->typed, why) != 0) {
		diff_free(&c->d);
		return -1;
	}
	return 0;
}

int subscriber_apply_change(struct subscriber *s, struct sub_change *c, struct gw_err *why)
{
	return subscriber_apply(s, &c->ac.change, s->lists ? NULL : &c->d, why);
}

void subscriber_change_free(struct sub_change *c)
{
	abi_change_free(&c->ac);
	diff_free(&c->d);
}

int64_t subscriber_tick(struct subscriber *s, int64_t now_ms)
{
	if (!s->desc->tick)
		return -1;
	s->ctx.error[0] = '\0';
	int64_t next = s->desc->tick(s->state, &s->host, now_ms);
	flush_error(s, "tick()");
	return next;
}
