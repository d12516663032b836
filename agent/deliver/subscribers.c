/*
 * Subscriber loader (see subscribers.h). Each check runs before the plugin's own code is
 * trusted with anything: the ABI version is compared before any other field of the
 * description is read, because a plugin built against another header may lay the struct
 * out differently. Errors name the instance and the file so an operator knows which
 * YAML entry and which .so to look at.
 */
#include "deliver/subscribers.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "deliver/plugin_config.h"

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

static void host_log(const struct gw_host *host, enum gw_log_level level, const char *fmt, ...)
{
	struct subscriber *s = host->priv;
	if (level < GW_LOG_ERROR)
		level = GW_LOG_ERROR;
	if (level > GW_LOG_DEBUG)
		level = GW_LOG_DEBUG;
	va_list ap;
	/* An error logged during init() (the config getters report bad values this way) is
	 * the start-up error's reason unless the plugin calls host->error() itself. */
	if (s->in_init && level == GW_LOG_ERROR && !s->error[0]) {
		va_start(ap, fmt);
		vsnprintf(s->error, sizeof s->error, fmt, ap);
		va_end(ap);
	}
	if (!gw_log_enabled(s->log, level))
		return;
	va_start(ap, fmt);
	gw_vlogf(s->log, level, s->name, fmt, ap);
	va_end(ap);
}

static void host_error(const struct gw_host *host, const char *fmt, ...)
{
	struct subscriber *s = host->priv;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof s->error, fmt, ap);
	va_end(ap);
}

static int64_t host_now_ms(const struct gw_host *host)
{
	(void)host;
	return gw_mono_ms();
}

static int is_file(const char *path)
{
	return access(path, F_OK) == 0;
}

/* Appends "DIR/NAME.so" candidates' directory to the searched list for the message. */
static void note_dir(char *searched, size_t cap, const char *dir, size_t dlen)
{
	size_t used = strlen(searched);
	if (used + dlen + 3 < cap)
		snprintf(searched + used, cap - used, "%s%.*s", used ? ", " : "", (int)dlen, dir);
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
	char searched[1024] = "";
	const char *env = getenv(GW_PLUGIN_PATH_ENV);
	const char *p = env ? env : "";
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
		if (dlen > 0) {
			int n = snprintf(path, cap, "%.*s/%s%s", (int)dlen, p, library, ext);
			if (n > 0 && (size_t)n < cap && is_file(path))
				return 0;
			note_dir(searched, sizeof searched, p, dlen);
		}
		p += dlen + (colon ? 1 : 0);
	}
	int n = snprintf(path, cap, "%s/%s%s", PKGLIBDIR, library, ext);
	if (n > 0 && (size_t)n < cap && is_file(path))
		return 0;
	note_dir(searched, sizeof searched, PKGLIBDIR, strlen(PKGLIBDIR));
	/* An uninstalled gwsyncd in its build tree finds the bundled plugins beside it
	 * (BUILD/plugins/NAME/.libs/NAME.so), so `build/gwsyncd --check -c etc/gwsync.yaml`
	 * works before `make install`. */
	char exe[4096];
	ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (el > 0) {
		exe[el] = '\0';
		char *slash = strrchr(exe, '/');
		int base = (int)(ln - (ext[0] ? 0 : 3));
		if (slash) {
			*slash = '\0';
			n = snprintf(path, cap, "%s/plugins/%.*s/.libs/%.*s.so", exe, base, library,
			             base, library);
			if (n > 0 && (size_t)n < cap && is_file(path))
				return 0;
		}
	}
	return gw_errf(err, "library '%s' not found: no %s%s in %s (directories from %s, then %s)",
	               library, library, ext, searched, GW_PLUGIN_PATH_ENV, PKGLIBDIR);
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

	dlerror();
	s->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!s->dl) {
		const char *why = dlerror();
		return gw_errf(err, "%s: cannot load: %s", path,
		               why ? why : "unknown dlopen error");
	}

	/* POSIX's sanctioned way to turn a dlsym() result into a function pointer. */
	entry_fn entry;
	void *sym = dlsym(s->dl, GWSYNC_SUBSCRIBER_SYMBOL);
	if (!sym)
		return gw_errf(err,
		               "%s: no entry point %s() (is it a gwsync subscriber plugin built "
		               "against <gwsync/subscriber.h>?)",
		               path, GWSYNC_SUBSCRIBER_SYMBOL);
	memcpy(&entry, &sym, sizeof entry);

	s->desc = entry();
	if (!s->desc)
		return gw_errf(err, "%s: %s() returned NULL", path, GWSYNC_SUBSCRIBER_SYMBOL);
	if (s->desc->abi != GWSYNC_SUBSCRIBER_ABI)
		return gw_errf(
		    err,
		    "%s: built for subscriber ABI %d, but this gwsyncd (%s) speaks ABI "
		    "%d; rebuild the plugin against this version's <gwsync/subscriber.h>",
		    path, s->desc->abi, PACKAGE_VERSION, GWSYNC_SUBSCRIBER_ABI);
	if (!s->desc->apply)
		return gw_errf(err, "%s: plugin '%s' has no apply() callback", path,
		               s->desc->name ? s->desc->name : "?");
	return 0;
}

static void init_host(struct subscriber *s)
{
	struct gw_host *h = &s->host;
	h->abi = GWSYNC_SUBSCRIBER_ABI;
	h->agent_version = PACKAGE_VERSION;
	h->instance = s->name;
	h->log = host_log;
	h->error = host_error;
	h->config_string = plugin_config_string;
	h->config_int = plugin_config_int;
	h->config_bool = plugin_config_bool;
	h->config_duration_ms = plugin_config_duration_ms;
	h->config_mode = plugin_config_mode;
	h->now_ms = host_now_ms;
	h->priv = s;
}

static int load_one(struct subscriber *s, const struct cfg_subscriber *cs, struct gw_log *log,
                    struct gw_err *err)
{
	s->log = log;
	s->name = strdup(cs->name ? cs->name : "");
	if (!s->name)
		return gw_errf(err, "out of memory");
	init_host(s);
	if (open_plugin(s, cs->library, err) < 0)
		return -1;

	if (s->desc->init) {
		s->error[0] = '\0';
		s->state = NULL;
		s->in_init = 1;
		int rc = s->desc->init(&s->host, plugin_config_of(cs->config), &s->state);
		s->in_init = 0;
		if (rc != 0) {
			if (s->error[0])
				return gw_errf(err, "%s: init() failed: %s", s->path, s->error);
			return gw_errf(err, "%s: init() failed (returned %d; see the log above)",
			               s->path, rc);
		}
	}
	s->inited = 1;
	LOG_I(log, "subscribers", "loaded subscriber '%s': plugin '%s' from %s", s->name,
	      s->desc->name ? s->desc->name : "?", s->path);
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
		if (load_one(&subs->v[i], cs, log, err) < 0) {
			gw_err_prefix(err, "subscriber '%s' (%s line %d)",
			              cs->name ? cs->name : "?",
			              cfg->path ? cfg->path : "configuration", cs->line);
			subscribers_free(subs);
			return -1;
		}
	}
	*out = subs;
	return 0;
}

void subscribers_free(struct subscribers *subs)
{
	if (!subs)
		return;
	for (size_t i = subs->n; i-- > 0;) {
		struct subscriber *s = &subs->v[i];
		if (s->inited && s->desc->fini)
			s->desc->fini(s->state);
		if (s->dl)
			dlclose(s->dl);
		free(s->name);
		free(s->path);
	}
	free(subs->v);
	free(subs);
}

int subscriber_apply(struct subscriber *s, const struct gw_change *change, char *why,
                     size_t why_cap)
{
	s->error[0] = '\0';
	int rc = s->desc->apply(s->state, change);
	if (rc == 0)
		return 0;
	if (s->error[0])
		snprintf(why, why_cap, "%s", s->error);
	else
		snprintf(why, why_cap, "apply() returned %d", rc);
	return -1;
}

int64_t subscriber_tick(struct subscriber *s, int64_t now_ms)
{
	if (!s->desc->tick)
		return -1;
	return s->desc->tick(s->state, now_ms);
}
