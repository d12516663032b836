/*
 * The configuration loader: YAML text -> ytree -> ${VAR} expansion -> one validated
 * struct cfg (config.h). Each level of the file is a table of its keys (name, loader,
 * where the value goes, limits), so the set of valid keys, the "did you mean" suggestions
 * and the conversions all come from one place; the few checks that involve several keys
 * (read_timeout against the admin's hold, password against password_file) run after the
 * walk. Every refusal is "FILE:LINE:COL: key.path: what is wrong", and the first one ends
 * the load: an operator fixes one line at a time, and a half-valid configuration is never
 * used.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "envexpand.h"
#include "suggest.h"
#include "units.h"
#include "ytree.h"

#define PASSWORD_FILE_MAX   (64 * 1024)
#define SUBSCRIBER_NAME_MAX 64

struct loader {
	struct cfg *cfg;
	struct gw_err *err;
	/* nodes kept for the checks that run after the walk (NULL: key absent) */
	const struct ynode *admin, *read_timeout, *hold, *username, *password, *password_file;
	const struct ynode *cert_file, *key_file;
};

struct key;
typedef int (*load_fn)(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base);

/* One known key of one level of the file. */
struct key {
	const char *name;
	load_fn load;
	size_t off;            /* where the value goes in `base` (struct cfg or cfg_subscriber) */
	int64_t min, max;      /* numbers and durations */
	const struct key *sub; /* nested map: its keys (NULL-name terminated) */
};

/* ---------------------------------------------------------------- messages */

static int lerr(struct loader *ld, const struct ynode *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int lerr(struct loader *ld, const struct ynode *at, const char *path, const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return gw_errf(ld->err, "%s:%d:%d: %s%s%s", at->file, at->line, at->col, path ? path : "",
	               path && *path ? ": " : "", what);
}

/* A duration for a message, in the largest unit that states it exactly, preferring
 * seconds up to two minutes ("60s" reads better than "1m" next to a 60 s hold). */
static void fmt_duration(char *buf, size_t cap, int64_t ms)
{
	long long v = (long long)ms;
	if (v % 1000)
		snprintf(buf, cap, "%lldms", v);
	else if (v % 3600000 == 0 && v >= 7200000)
		snprintf(buf, cap, "%lldh", v / 3600000);
	else if (v % 60000 == 0 && v >= 120000)
		snprintf(buf, cap, "%lldm", v / 60000);
	else
		snprintf(buf, cap, "%llds", v / 1000);
}

static void path_join(char *buf, size_t cap, const char *parent, const char *key)
{
	if (parent && *parent)
		snprintf(buf, cap, "%s.%s", parent, key);
	else
		snprintf(buf, cap, "%s", key);
}

/* The text of a scalar, or NULL after an "expected ..." error. */
static const char *scalar(struct loader *ld, const struct ynode *v, const char *path,
                          const char *expected)
{
	if (v->type == YNODE_SCALAR)
		return v->text;
	lerr(ld, v, path, "expected %s, got %s", expected, ytree_type_name(v));
	return NULL;
}

static char **field_str(void *base, const struct key *k)
{
	return (char **)((char *)base + k->off);
}

/* ---------------------------------------------------------------- generic loaders */

/* A string; empty is refused (use null or leave the key out for the default). */
static int load_string(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "a string");
	if (!s)
		return -1;
	if (!*s)
		return lerr(ld, v, path, "must not be empty (leave the key out for the default)");
	char **dst = field_str(base, k);
	char *copy = strdup(s);
	if (!copy)
		return lerr(ld, v, path, "out of memory");
	free(*dst);
	*dst = copy;
	return 0;
}

/* A string where empty means "none" (username). */
static int load_optional_string(struct loader *ld, const struct key *k, const struct ynode *v,
                                const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "a string");
	if (!s)
		return -1;
	return *s ? load_string(ld, k, v, path, base) : 0;
}

static int load_duration(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "a duration like 200ms, 5s, 2m or 1h");
	int64_t ms;
	if (!s)
		return -1;
	if (units_duration_ms(s, &ms) < 0)
		return lerr(ld, v, path,
		            "expected a duration like 200ms, 5s, 2m or 1h (a unit is required), "
		            "got '%.100s'",
		            s);
	if (ms < k->min) {
		char min[32];
		fmt_duration(min, sizeof min, k->min);
		return lerr(ld, v, path, "must be at least %s", min);
	}
	*(int64_t *)((char *)base + k->off) = ms;
	return 0;
}

static int load_size(struct loader *ld, const struct key *k, const struct ynode *v,
                     const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "a size like 65536, 512KiB or 64MiB");
	int64_t n;
	if (!s)
		return -1;
	if (units_size(s, &n) < 0)
		return lerr(
		    ld, v, path,
		    "expected a size in bytes, or with KiB, MiB or GiB (64MiB), got '%.100s'", s);
	if (n < k->min)
		return lerr(ld, v, path, "must be at least %lld bytes", (long long)k->min);
	*(int64_t *)((char *)base + k->off) = n;
	return 0;
}

static int load_int(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                    void *base)
{
	const char *s = scalar(ld, v, path, "a whole number");
	int64_t n;
	if (!s)
		return -1;
	if (units_int(s, &n) < 0)
		return lerr(ld, v, path, "expected a whole number, got '%.100s'", s);
	if (n < k->min || n > k->max)
		return lerr(ld, v, path, "must be between %lld and %lld, got %lld",
		            (long long)k->min, (long long)k->max, (long long)n);
	*(int *)((char *)base + k->off) = (int)n;
	return 0;
}

static int load_bool(struct loader *ld, const struct key *k, const struct ynode *v,
                     const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "true or false");
	int b;
	if (!s)
		return -1;
	if (units_bool(s, &b) < 0)
		return lerr(ld, v, path, "expected true or false, got '%.100s'", s);
	*(int *)((char *)base + k->off) = b;
	return 0;
}

static int load_map(struct loader *ld, const struct ynode *map, const struct key *keys,
                    const char *path, void *base);

static int load_submap(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	return load_map(ld, v, k->sub, path, base);
}

/* ---------------------------------------------------------------- the walk */

static const struct key *find_key(const struct key *keys, const char *name)
{
	for (const struct key *k = keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

static int unknown_key(struct loader *ld, const struct ynode *key, const struct key *keys,
                       const char *path)
{
	const char *names[32];
	size_t n = 0;
	char list[512] = "";
	size_t pos = 0;
	for (const struct key *k = keys; k->name && n < 32; k++) {
		names[n++] = k->name;
		if (pos < sizeof list)
			pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s",
			                        pos ? ", " : "", k->name);
	}
	const char *best = suggest_closest(key->text, names, n);
	char where[300] = "";
	if (path && *path)
		snprintf(where, sizeof where, " in %s", path);
	if (best)
		return lerr(ld, key, NULL, "unknown key '%.100s'%s (did you mean '%s'?)", key->text,
		            where, best);
	return lerr(ld, key, NULL, "unknown key '%.100s'%s (valid keys here: %s)", key->text, where,
	            list);
}

/* Walk a map against its key table. A null value counts as absent: the default stays. */
static int load_map(struct loader *ld, const struct ynode *map, const struct key *keys,
                    const char *path, void *base)
{
	if (map->type != YNODE_MAP)
		return lerr(ld, map, path, "expected a map of keys, got %s", ytree_type_name(map));
	for (size_t i = 0; i < map->n; i++) {
		const struct ynode *kn = map->keys[i], *v = map->items[i];
		const struct key *k = find_key(keys, kn->text);
		if (!k)
			return unknown_key(ld, kn, keys, path);
		if (v->type == YNODE_SCALAR && v->null)
			continue;
		char child[256];
		path_join(child, sizeof child, path, k->name);
		if (k->load(ld, k, v, child, base) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- admin.servers */

static int add_server(struct loader *ld, const struct ynode *at, const char *path, const char *url,
                      size_t len)
{
	struct cfg *c = ld->cfg;
	size_t scheme;
	if (len >= 7 && strncasecmp(url, "http://", 7) == 0)
		scheme = 7;
	else if (len >= 8 && strncasecmp(url, "https://", 8) == 0)
		scheme = 8;
	else
		return lerr(ld, at, path, "'%.*s' is not an http:// or https:// URL",
		            (int)(len > 200 ? 200 : len), url);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)url[i];
		if (ch <= ' ' || ch == 0x7f || ch == '?' || ch == '#')
			return lerr(
			    ld, at, path,
			    "'%.*s' must be a base URL like http://host:port[/path], without "
			    "spaces, query or fragment",
			    (int)(len > 200 ? 200 : len), url);
	}
	size_t host_end = scheme;
	while (host_end < len && url[host_end] != '/')
		host_end++;
	if (host_end == scheme)
		return lerr(ld, at, path, "'%.*s' has no host", (int)(len > 200 ? 200 : len), url);
	if (memchr(url + scheme, '@', host_end - scheme))
		/* do not echo it: the part before '@' is a credential */
		return lerr(ld, at, path,
		            "credentials in the URL are not supported: use admin.username and "
		            "admin.password");
	while (len > host_end && url[len - 1] == '/')
		len--;
	for (size_t i = 0; i < c->n_servers; i++)
		if (strlen(c->servers[i]) == len && strncasecmp(c->servers[i], url, len) == 0)
			return lerr(ld, at, path, "duplicate server '%s'", c->servers[i]);
	char **grown = realloc(c->servers, (c->n_servers + 1) * sizeof *grown);
	if (!grown)
		return lerr(ld, at, path, "out of memory");
	c->servers = grown;
	if (!(c->servers[c->n_servers] = strndup(url, len)))
		return lerr(ld, at, path, "out of memory");
	c->n_servers++;
	return 0;
}

/* A list of words, or one comma-separated string of them; calls `each` per word. */
static int for_each_word(struct loader *ld, const struct ynode *v, const char *path,
                         const char *what,
                         int (*each)(struct loader *, const struct ynode *, const char *,
                                     const char *, size_t))
{
	if (v->type == YNODE_MAP)
		return lerr(ld, v, path, "expected a list of %s, got a map", what);
	if (v->type == YNODE_SEQ) {
		if (v->n == 0)
			return lerr(ld, v, path, "the list is empty: name at least one");
		for (size_t i = 0; i < v->n; i++) {
			const struct ynode *it = v->items[i];
			char ipath[280];
			snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
			if (it->type != YNODE_SCALAR || it->null || !*it->text)
				return lerr(ld, it, ipath, "expected %s, got %s", what,
				            it->type == YNODE_SCALAR && !it->null
				                ? "an empty string"
				                : ytree_type_name(it));
			if (each(ld, it, ipath, it->text, it->len) < 0)
				return -1;
		}
		return 0;
	}
	const char *s = v->text;
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *w = s;
		while (len && (*w == ' ' || *w == '\t'))
			w++, len--;
		while (len && (w[len - 1] == ' ' || w[len - 1] == '\t'))
			len--;
		if (!len)
			return lerr(ld, v, path, "empty entry in the comma-separated list of %s",
			            what);
		if (each(ld, v, path, w, len) < 0)
			return -1;
		if (!end)
			return 0;
		s = end + 1;
	}
}

static int load_servers(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k, (void)base;
	return for_each_word(ld, v, path, "admin URLs", add_server);
}

/* ---------------------------------------------------------------- admin.groups */

int cfg_group_parse(const char *name)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (name && strcmp(name, gw_group_name((enum gw_group)g)) == 0)
			return g;
	return -1;
}

static int add_group(struct loader *ld, const struct ynode *at, const char *path, const char *name,
                     size_t len)
{
	struct cfg *c = ld->cfg;
	char word[64];
	if (len >= sizeof word)
		len = sizeof word - 1;
	memcpy(word, name, len);
	word[len] = '\0';
	int g = cfg_group_parse(word);
	if (g < 0) {
		const char *names[GW_GROUP_COUNT];
		char list[256] = "";
		size_t pos = 0;
		for (int i = 0; i < GW_GROUP_COUNT; i++) {
			names[i] = gw_group_name((enum gw_group)i);
			pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s",
			                        i ? ", " : "", names[i]);
		}
		const char *best = suggest_closest(word, names, GW_GROUP_COUNT);
		if (best)
			return lerr(ld, at, path, "unknown group '%s' (did you mean '%s'?)", word,
			            best);
		return lerr(ld, at, path, "unknown group '%s' (known groups: %s)", word, list);
	}
	for (size_t i = 0; i < c->n_groups; i++)
		if ((int)c->groups[i] == g)
			return lerr(ld, at, path, "duplicate group '%s'", word);
	c->groups[c->n_groups++] = (enum gw_group)g;
	return 0;
}

static int load_groups(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	(void)k, (void)base;
	ld->cfg->n_groups = 0;
	return for_each_word(ld, v, path, "group names", add_group);
}

/* ---------------------------------------------------------------- admin credentials */

static int load_username(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	ld->username = v;
	return load_optional_string(ld, k, v, path, base);
}

static int load_password(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	(void)k, (void)base;
	/* never echo the value: it is a secret */
	if (v->type != YNODE_SCALAR)
		return lerr(ld, v, path, "expected a string, got %s", ytree_type_name(v));
	if (ld->password_file)
		return lerr(ld, v, path,
		            "cannot be used together with admin.password_file (line %d)",
		            ld->password_file->line);
	ld->password = v;
	if (!(ld->cfg->password = strdup(v->text)))
		return lerr(ld, v, path, "out of memory");
	return 0;
}

/* Read the whole file; one trailing "\n" is not part of the password. */
static int read_password_file(struct loader *ld, const struct ynode *at, const char *path,
                              const char *file, char **out)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lerr(ld, at, path, "cannot read '%.300s': %s", file, strerror(errno));
	char *buf = malloc(PASSWORD_FILE_MAX + 1);
	size_t len = 0;
	if (!buf) {
		close(fd);
		return lerr(ld, at, path, "out of memory");
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, PASSWORD_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return lerr(ld, at, path, "cannot read '%.300s': %s", file, strerror(e));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > PASSWORD_FILE_MAX) {
			close(fd);
			free(buf);
			return lerr(ld, at, path, "'%.300s' is larger than %d KiB", file,
			            PASSWORD_FILE_MAX / 1024);
		}
	}
	close(fd);
	if (len && buf[len - 1] == '\n')
		len--;
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		free(buf);
		return lerr(ld, at, path, "'%.300s' contains a NUL byte", file);
	}
	*out = buf;
	return 0;
}

static int load_password_file(struct loader *ld, const struct key *k, const struct ynode *v,
                              const char *path, void *base)
{
	if (ld->password)
		return lerr(ld, v, path, "cannot be used together with admin.password (line %d)",
		            ld->password->line);
	if (load_string(ld, k, v, path, base) < 0)
		return -1;
	ld->password_file = v;
	return read_password_file(ld, v, path, ld->cfg->password_file, &ld->cfg->password);
}

/* ---------------------------------------------------------------- nodes kept for later */

static int load_read_timeout(struct loader *ld, const struct key *k, const struct ynode *v,
                             const char *path, void *base)
{
	ld->read_timeout = v;
	return load_duration(ld, k, v, path, base);
}

static int load_hold(struct loader *ld, const struct key *k, const struct ynode *v,
                     const char *path, void *base)
{
	ld->hold = v;
	return load_duration(ld, k, v, path, base);
}

static int load_admin(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base)
{
	ld->admin = v;
	return load_submap(ld, k, v, path, base);
}

/* A file that must be readable now, so --check finds a wrong path before the first poll. */
static int load_readable_file(struct loader *ld, const struct key *k, const struct ynode *v,
                              const char *path, void *base)
{
	if (load_string(ld, k, v, path, base) < 0)
		return -1;
	const char *file = *field_str(base, k);
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return lerr(ld, v, path, "cannot read '%.300s': %s", file, strerror(errno));
	close(fd);
	if (strcmp(k->name, "cert_file") == 0)
		ld->cert_file = v;
	else if (strcmp(k->name, "key_file") == 0)
		ld->key_file = v;
	return 0;
}

/* ---------------------------------------------------------------- log, status */

static int load_log_level(struct loader *ld, const struct key *k, const struct ynode *v,
                          const char *path, void *base)
{
	(void)k, (void)base;
	const char *s = scalar(ld, v, path, "a log level");
	if (!s)
		return -1;
	int lvl = gw_log_level_parse(s);
	if (lvl < 0)
		return lerr(ld, v, path, "expected error, warn, info or debug, got '%.100s'", s);
	ld->cfg->log_level = (enum gw_log_level)lvl;
	return 0;
}

static int load_log_format(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	(void)k, (void)base;
	const char *s = scalar(ld, v, path, "text or json");
	if (!s)
		return -1;
	if (strcmp(s, "text") == 0)
		ld->cfg->log_format = GW_LOG_TEXT;
	else if (strcmp(s, "json") == 0)
		ld->cfg->log_format = GW_LOG_JSON;
	else
		return lerr(ld, v, path, "expected text or json, got '%.100s'", s);
	return 0;
}

/* "HOST:PORT", "[IPv6]:PORT"; the port 1..65535. */
static int load_listen(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "HOST:PORT");
	if (!s)
		return -1;
	const char *colon = strrchr(s, ':');
	int64_t port;
	int bad = !colon || colon == s || units_int(colon + 1, &port) < 0 || colon[1] == '+' ||
	          colon[1] == '-' || port < 1 || port > 65535;
	if (!bad && s[0] == '[')
		bad = colon - s < 3 || colon[-1] != ']';
	else if (!bad)
		bad = memchr(s, ':', (size_t)(colon - s)) != NULL; /* bare IPv6 needs brackets */
	if (bad)
		return lerr(ld, v, path,
		            "expected HOST:PORT such as 127.0.0.1:9196 or [::1]:9196 (port 1 to "
		            "65535), got '%.100s'",
		            s);
	return load_string(ld, k, v, path, base);
}

/* ---------------------------------------------------------------- subscribers */

static int load_sub_name(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	const char *s = scalar(ld, v, path, "a name");
	if (!s)
		return -1;
	size_t len = strlen(s);
	if (len == 0 || len > SUBSCRIBER_NAME_MAX ||
	    strspn(s, "abcdefghijklmnopqrstuvwxyz"
	              "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	              "0123456789._-") != len)
		return lerr(ld, v, path,
		            "'%.100s' is not a valid name: use 1 to %d letters, digits, '.', '_' "
		            "or '-'",
		            s, SUBSCRIBER_NAME_MAX);
	const struct cfg *c = ld->cfg;
	for (size_t i = 0; i < c->n_subscribers; i++)
		if (c->subscribers[i].name && strcmp(c->subscribers[i].name, s) == 0)
			return lerr(ld, v, path,
			            "duplicate subscriber name '%s' (first at line %d)", s,
			            c->subscribers[i].line);
	return load_string(ld, k, v, path, base);
}

static int load_sub_config(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	(void)k;
	if (v->type != YNODE_MAP)
		return lerr(ld, v, path, "expected a map (the plugin's own settings), got %s",
		            ytree_type_name(v));
	((struct cfg_subscriber *)base)->config = v;
	return 0;
}

#define SUB(f) offsetof(struct cfg_subscriber, f)
static const struct key subscriber_keys[] = {
    {"name", load_sub_name, SUB(name), 0, 0, NULL},
    {"library", load_string, SUB(library), 0, 0, NULL},
    {"config", load_sub_config, 0, 0, 0, NULL},
    {NULL, NULL, 0, 0, 0, NULL},
};

static int load_subscribers(struct loader *ld, const struct key *k, const struct ynode *v,
                            const char *path, void *base)
{
	(void)k, (void)base;
	struct cfg *c = ld->cfg;
	if (v->type != YNODE_SEQ)
		return lerr(ld, v, path, "expected a list of subscribers, got %s",
		            ytree_type_name(v));
	if (v->n == 0)
		return 0;
	if (!(c->subscribers = calloc(v->n, sizeof *c->subscribers)))
		return lerr(ld, v, path, "out of memory");
	for (size_t i = 0; i < v->n; i++) {
		const struct ynode *e = v->items[i];
		char ipath[64];
		snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
		struct cfg_subscriber *s = &c->subscribers[i];
		s->line = e->line;
		s->col = e->col;
		/* counted before it is complete so cfg_free sees what was allocated; the
		 * duplicate-name check skips a NULL name */
		c->n_subscribers = i + 1;
		if (load_map(ld, e, subscriber_keys, ipath, s) < 0)
			return -1;
		if (!s->name)
			return lerr(ld, e, ipath, "'name' is required (a unique instance name)");
		if (!s->library)
			return lerr(ld, e, ipath,
			            "'library' is required (a plugin name such as file, or a path "
			            "to a .so)");
		if (!s->config) {
			if (!(s->own_config = ytree_new_map(e->file, e->line, e->col)))
				return lerr(ld, e, ipath, "out of memory");
			s->config = s->own_config;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- the tables */

#define CFG(f) offsetof(struct cfg, f)
#define NOSUB  0, 0, NULL
static const struct key retry_keys[] = {
    {"attempts", load_int, CFG(retry_attempts), 1, 10000, NULL},
    {"interval", load_duration, CFG(retry_interval_ms), 0, INT64_MAX, NULL},
    {"backoff", load_duration, CFG(retry_backoff_ms), 0, INT64_MAX, NULL},
    {NULL, NULL, 0, NOSUB},
};

static const struct key tls_keys[] = {
    {"ca_file", load_readable_file, CFG(tls.ca_file), NOSUB},
    {"cert_file", load_readable_file, CFG(tls.cert_file), NOSUB},
    {"key_file", load_readable_file, CFG(tls.key_file), NOSUB},
    {"insecure_skip_verify", load_bool, CFG(tls.insecure_skip_verify), NOSUB},
    {NULL, NULL, 0, NOSUB},
};

static const struct key admin_keys[] = {
    {"servers", load_servers, 0, NOSUB},
    {"username", load_username, CFG(username), NOSUB},
    {"password", load_password, 0, NOSUB},
    {"password_file", load_password_file, CFG(password_file), NOSUB},
    {"namespace", load_string, CFG(namespace_id), NOSUB},
    {"groups", load_groups, 0, NOSUB},
    {"connect_timeout", load_duration, CFG(connect_timeout_ms), 1, INT64_MAX, NULL},
    {"read_timeout", load_read_timeout, CFG(read_timeout_ms), 1, INT64_MAX, NULL},
    {"hold", load_hold, CFG(hold_ms), 1, INT64_MAX, NULL},
    {"retry", load_submap, 0, 0, 0, retry_keys},
    {"max_response", load_size, CFG(max_response), 1, INT64_MAX, NULL},
    {"tls", load_submap, 0, 0, 0, tls_keys},
    {NULL, NULL, 0, NOSUB},
};

static const struct key gateway_keys[] = {
    {"port", load_int, CFG(gateway_port), 0, 65535, NULL},
    {NULL, NULL, 0, NOSUB},
};

static const struct key log_keys[] = {
    {"level", load_log_level, 0, NOSUB},
    {"format", load_log_format, 0, NOSUB},
    {"file", load_string, CFG(log_file), NOSUB},
    {NULL, NULL, 0, NOSUB},
};

static const struct key status_keys[] = {
    {"listen", load_listen, CFG(status_listen), NOSUB},
    {NULL, NULL, 0, NOSUB},
};

static const struct key top_keys[] = {
    {"admin", load_admin, 0, 0, 0, admin_keys},
    {"gateway", load_submap, 0, 0, 0, gateway_keys},
    {"state_dir", load_string, CFG(state_dir), NOSUB},
    {"log", load_submap, 0, 0, 0, log_keys},
    {"status", load_submap, 0, 0, 0, status_keys},
    {"subscribers", load_subscribers, 0, NOSUB},
    {NULL, NULL, 0, NOSUB},
};

/* ---------------------------------------------------------------- ${VAR} over the tree */

/* Expand every scalar value (not keys) in place, plugin config maps included. Nulls stay
 * null: nullness was decided from the text as written. */
static int expand_tree(struct loader *ld, struct ynode *n, const char *path)
{
	if (n->type == YNODE_SCALAR) {
		if (n->null || !env_has_refs(n->text))
			return 0;
		char *out;
		if (env_expand(n->text, &out, NULL, NULL, ld->err) < 0)
			return gw_err_prefix(ld->err, "%s:%d:%d: %s", n->file, n->line, n->col,
			                     *path ? path : "value");
		free(n->text);
		n->text = out;
		n->len = strlen(out);
		return 0;
	}
	for (size_t i = 0; i < n->n; i++) {
		char child[256];
		if (n->type == YNODE_MAP)
			path_join(child, sizeof child, path, n->keys[i]->text);
		else
			snprintf(child, sizeof child, "%s[%zu]", path, i);
		if (expand_tree(ld, n->items[i], child) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- checks across keys */

static int check_all(struct loader *ld, const struct ynode *root)
{
	struct cfg *c = ld->cfg;
	const struct ynode *admin = ld->admin ? ld->admin : root;
	if (!ld->admin)
		return lerr(ld, root, "admin", "required: the admin servers to sync from");
	if (c->n_servers == 0)
		return lerr(ld, admin, "admin.servers",
		            "required: a list of admin URLs such as [ \"http://127.0.0.1:9095\" ]");
	if (c->read_timeout_ms <= c->hold_ms) {
		char hold[32], rt[32];
		fmt_duration(hold, sizeof hold, c->hold_ms);
		fmt_duration(rt, sizeof rt, c->read_timeout_ms);
		if (ld->read_timeout)
			return lerr(ld, ld->read_timeout, "admin.read_timeout",
			            "must be more than %s (the admin holds a poll %s)", hold, hold);
		return lerr(ld, ld->hold, "admin.hold",
		            "must be less than admin.read_timeout (%s), or every held poll times "
		            "out",
		            rt);
	}
	if (c->username && !c->password)
		return lerr(ld, ld->username, "admin.username",
		            "is set, so admin.password or admin.password_file is required (leave "
		            "username out or empty for an admin without login)");
	if (!!c->tls.cert_file != !!c->tls.key_file) {
		const struct ynode *at = c->tls.cert_file ? ld->cert_file : ld->key_file;
		return lerr(ld, at, c->tls.cert_file ? "admin.tls.cert_file" : "admin.tls.key_file",
		            "cert_file and key_file go together: set both or neither");
	}
	if (c->n_groups == 0) {
		static const enum gw_group classic[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR,
		                                        GW_GROUP_RULE, GW_GROUP_APP_AUTH,
		                                        GW_GROUP_META_DATA};
		memcpy(c->groups, classic, sizeof classic);
		c->n_groups = sizeof classic / sizeof classic[0];
	}
	return 0;
}

/* ---------------------------------------------------------------- entry points */

static struct cfg *cfg_new(void)
{
	struct cfg *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->connect_timeout_ms = 10 * 1000;
	c->read_timeout_ms = 90 * 1000;
	c->hold_ms = 60 * 1000;
	c->retry_attempts = 3;
	c->retry_interval_ms = 5 * 1000;
	c->retry_backoff_ms = 5 * 60 * 1000;
	c->max_response = 64 * 1024 * 1024;
	c->log_level = GW_LOG_INFO;
	c->log_format = GW_LOG_TEXT;
	c->namespace_id = strdup(GW_DEFAULT_NAMESPACE);
	c->state_dir = strdup("/var/lib/gwsync");
	if (!c->namespace_id || !c->state_dir) {
		cfg_free(c);
		return NULL;
	}
	return c;
}

static int load_tree(struct ynode *root, struct cfg **out, struct gw_err *err)
{
	struct cfg *c = cfg_new();
	if (!c) {
		ytree_free(root);
		return gw_errf(err, "%s: out of memory", root->file);
	}
	c->tree = root;
	if (!(c->path = strdup(root->file))) {
		cfg_free(c);
		return gw_errf(err, "out of memory");
	}
	struct loader ld = {.cfg = c, .err = err};
	if (root->type != YNODE_MAP) {
		lerr(&ld, root, NULL,
		     "expected a map of keys at the top level (admin:, ...), got %s",
		     ytree_type_name(root));
		cfg_free(c);
		return -1;
	}
	if (expand_tree(&ld, root, "") < 0 || load_map(&ld, root, top_keys, "", c) < 0 ||
	    check_all(&ld, root) < 0) {
		cfg_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

int cfg_parse(const char *name, const char *text, size_t len, struct cfg **out, struct gw_err *err)
{
	struct ynode *root;
	if (ytree_parse(name, text, len, &root, err) < 0)
		return -1;
	return load_tree(root, out, err);
}

int cfg_load(const char *path, struct cfg **out, struct gw_err *err)
{
	struct ynode *root;
	if (ytree_parse_file(path, &root, err) < 0)
		return -1;
	return load_tree(root, out, err);
}

void cfg_free(struct cfg *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_servers; i++)
		free(c->servers[i]);
	free(c->servers);
	free(c->username);
	if (c->password) {
		explicit_bzero(c->password, strlen(c->password));
		free(c->password);
	}
	free(c->password_file);
	free(c->namespace_id);
	free(c->tls.ca_file);
	free(c->tls.cert_file);
	free(c->tls.key_file);
	free(c->state_dir);
	free(c->log_file);
	free(c->status_listen);
	for (size_t i = 0; i < c->n_subscribers; i++) {
		free(c->subscribers[i].name);
		free(c->subscribers[i].library);
		ytree_free(c->subscribers[i].own_config);
	}
	free(c->subscribers);
	ytree_free(c->tree);
	free(c->path);
	free(c);
}
