/*
 * The configuration loader: YAML text -> ytree -> ${VAR} expansion -> one validated
 * struct cfg (config.h). This file holds the tables of the agent's own keys, the
 * log/status loaders (the subscribers' in config_subscribers.c), the rule of exactly one source
 * section, and the entry points; the walk is in config_walk.c, the loaders of the keys the sources'
 * sections share in config_admin.c, and each source's section (admin:, zookeeper:, etcd:,
 * admin.websocket) in the source's folder, handed over by the caller (main takes them from the
 * source registry), so this folder knows no source. The first refusal ends the load
 * ("FILE:LINE:COL: key.path: what is wrong"): an operator fixes one line at a time, and a
 * half-valid configuration is never used.
 */
#include "config/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_admin.h"
#include "config/config_subscribers.h"
#include "config/config_walk.h"
#include "config/envexpand.h"
#include "config/suggest.h"
#include "core/readfile.h"
#include "shared/units.h"
#include "config/ytree.h"

/* ---------------------------------------------------------------- log, status */

static int load_log_level(struct loader *ld, const struct key *k, const struct ynode *v,
                          const char *path, void *base)
{
	(void)k, (void)base;
	const char *s = cfgw_scalar(ld, v, path, "a log level");
	if (!s)
		return -1;
	int lvl = gw_log_level_parse(s);
	if (lvl < 0)
		return cfgw_err(ld, v, path, "expected error, warn, info or debug, got '%.100s'",
		                s);
	ld->cfg->log_level = (enum gw_log_level)lvl;
	return 0;
}

static int load_log_format(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	(void)k, (void)base;
	const char *s = cfgw_scalar(ld, v, path, "text or json");
	if (!s)
		return -1;
	if (strcmp(s, "text") == 0)
		ld->cfg->log_format = GW_LOG_TEXT;
	else if (strcmp(s, "json") == 0)
		ld->cfg->log_format = GW_LOG_JSON;
	else
		return cfgw_err(ld, v, path, "expected text or json, got '%.100s'", s);
	return 0;
}

/* "HOST:PORT", "[IPv6]:PORT"; the port 1..65535. */
static int load_listen(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "HOST:PORT");
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
		return cfgw_err(
		    ld, v, path,
		    "expected HOST:PORT such as 127.0.0.1:9196 or [::1]:9196 (port 1 to "
		    "65535), got '%.100s'",
		    s);
	return cfgw_string(ld, k, v, path, base);
}

/* control_socket: an absolute path, or "" for none (kept as "" until the default is
 * decided after the whole file is read: cfg_default_control_socket()). */
static int load_control_socket(struct loader *ld, const struct key *k, const struct ynode *v,
                               const char *path, void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a string");
	if (!s)
		return -1;
	if (!*s) {
		free(ld->cfg->control_socket);
		ld->cfg->control_socket = strdup("");
		return ld->cfg->control_socket ? 0 : cfgw_err(ld, v, path, "out of memory");
	}
	if (*s != '/')
		return cfgw_err(ld, v, path, "expected an absolute path, got \"%s\"", s);
	return cfgw_string(ld, k, v, path, base);
}

/* ---------------------------------------------------------------- the tables */

#define CFG(f) offsetof(struct cfg, f)
#define NOSUB  0, 0, NULL
const struct key cfg_retry_keys[] = {
    {"attempts", cfgw_int, CFG(retry_attempts), 1, 10000, NULL, CFGW_NODOC},
    /* at least 10ms: 0 would turn a refused connection into a busy loop */
    {"interval", cfgw_duration, CFG(retry_interval_ms), 10, INT64_MAX, NULL, CFGW_NODOC},
    {"backoff", cfgw_duration, CFG(retry_backoff_ms), 10, INT64_MAX, NULL, CFGW_NODOC},
    /* the backoff's cap until the agent first holds data (retry.h) */
    {"startup_backoff", cfgw_duration, CFG(retry_startup_backoff_ms), 10, INT64_MAX, NULL,
     CFGW_NODOC},
    {NULL, NULL, 0, NOSUB, CFGW_NODOC},
};

const struct key cfg_tls_keys[] = {
    {"ca_file", cfga_readable_file, CFG(tls.ca_file), NOSUB, CFGW_NODOC},
    {"cert_file", cfga_readable_file, CFG(tls.cert_file), NOSUB, CFGW_NODOC},
    {"key_file", cfga_readable_file, CFG(tls.key_file), NOSUB, CFGW_NODOC},
    {"insecure_skip_verify", cfgw_bool, CFG(tls.insecure_skip_verify), NOSUB, CFGW_NODOC},
    {NULL, NULL, 0, NOSUB, CFGW_NODOC},
};

static const struct key gateway_keys[] = {
    {"port", cfgw_int, CFG(gateway_port), 0, 65535, NULL, CFGW_NODOC},
    {NULL, NULL, 0, NOSUB, CFGW_NODOC},
};

static const struct key log_keys[] = {
    {"level", load_log_level, 0, NOSUB, CFGW_NODOC},
    {"format", load_log_format, 0, NOSUB, CFGW_NODOC},
    {"file", cfgw_string, CFG(log_file), NOSUB, CFGW_NODOC},
    {NULL, NULL, 0, NOSUB, CFGW_NODOC},
};

static const struct key status_keys[] = {
    {"listen", load_listen, CFG(status_listen), NOSUB, CFGW_NODOC},
    /* POST (pause, resume) over HTTP only with this bearer token; else read-only */
    {"token", cfga_status_token, 0, NOSUB, CFGW_NODOC},
    {"token_file", cfga_status_token_file, CFG(status_token_file), NOSUB, CFGW_NODOC},
    /* accepted versions kept per group for /history, the page and --status (store/history.h) */
    {"history", cfgw_int, CFG(status_history), 1, 1000, NULL, CFGW_NODOC},
    /* GET /config/<GROUP>: the held version, secrets redacted (ops/redact.h); off by default */
    {"expose_config", cfgw_bool, CFG(status_expose_config), NOSUB, CFGW_NODOC},
    {NULL, NULL, 0, NOSUB, CFGW_NODOC},
};

/* the top level; the sources' sections (admin:, zookeeper:, etcd:) are added at load,
 * first */
static const struct key top_keys[] = {
    {"gateway", cfgw_submap, 0, 0, 0, gateway_keys, CFGW_NODOC},
    {"state_dir", cfgw_string, CFG(state_dir), NOSUB, CFGW_NODOC},
    /* the Unix socket for --pause/--resume (ops/control.h); default STATE_DIR/control.sock */
    {"control_socket", load_control_socket, CFG(control_socket), NOSUB, CFGW_NODOC},
    {"log", cfgw_submap, 0, 0, 0, log_keys, CFGW_NODOC},
    {"status", cfgw_submap, 0, 0, 0, status_keys, CFGW_NODOC},
    {"subscribers", cfg_load_subscribers, 0, NOSUB, CFGW_NODOC},
    {NULL, NULL, 0, NOSUB, CFGW_NODOC},
};

/* ---------------------------------------------------------------- ${VAR} over the tree */

/* Expand every cfgw_scalar value (not keys) in place, plugin config maps included. Nulls stay
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
		free(n->own_text);
		n->own_text = out;
		n->text = out;
		n->len = strlen(out);
		return 0;
	}
	for (size_t i = 0; i < n->n; i++) {
		char child[256];
		if (n->type == YNODE_MAP)
			cfgw_path_join(child, sizeof child, path, n->keys[i]->text);
		else
			snprintf(child, sizeof child, "%s[%zu]", path, i);
		if (expand_tree(ld, n->items[i], child) < 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------- entry points */

struct cfg *cfg_new(void)
{
	struct cfg *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->connect_timeout_ms = 10 * 1000;
	c->read_timeout_ms = 90 * 1000;
	c->transfer_timeout_ms = 5 * 60 * 1000;
	c->retry_attempts = 3;
	c->retry_interval_ms = 5 * 1000;
	c->retry_backoff_ms = 5 * 60 * 1000;
	c->retry_startup_backoff_ms = 10 * 1000;
	c->max_response = 64 * 1024 * 1024;
	c->log_level = GW_LOG_INFO;
	c->status_history = 50;
	c->log_format = GW_LOG_TEXT;
	c->namespace_id = strdup(GW_DEFAULT_NAMESPACE);
	c->state_dir = strdup("/var/lib/gwsync");
	if (!c->namespace_id || !c->state_dir) {
		cfg_free(c);
		return NULL;
	}
	return c;
}

/* control_socket: STATE_DIR/control.sock unless set; "" turns it off. Its length does not
 * matter: the socket is reached through its directory when its path does not fit a Unix
 * socket's address (ops/unix_addr.h), so a deep state_dir never stops the agent. */
int cfg_default_control_socket(struct cfg *c, struct gw_err *err)
{
	if (c->control_socket) {
		if (!*c->control_socket) {
			free(c->control_socket);
			c->control_socket = NULL;
		}
		return 0;
	}
	size_t n = strlen(c->state_dir) + sizeof "/control.sock";
	if (!(c->control_socket = malloc(n)))
		return gw_errf(err, "out of memory");
	snprintf(c->control_socket, n, "%s/control.sock", c->state_dir);
	return 0;
}

/* ---------------------------------------------------------------- the sources' sections */

/* A source's section (zookeeper:, admin.websocket): its map kept for the checks, its keys
 * walked into its own settings. */
static int load_section(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)base;
	ld->section[k->off] = v;
	return cfgw_submap(ld, k, v, path, ld->cfg->settings[k->off]);
}

/* A section's settings: zeroed, then every declared default loaded through its key's own
 * loader, so a default is written once, in the file's units, beside the key. */
static int section_defaults(struct loader *ld, const struct cfg_section *sec, void *settings)
{
	for (const struct key *k = sec->keys; k->name; k++) {
		if (!k->def)
			continue;
		struct ynode def = {.type = YNODE_SCALAR,
		                    .file = "(built-in default)",
		                    .text = k->def,
		                    .len = strlen(k->def),
		                    .plain = 1};
		char path[128];
		snprintf(path, sizeof path, "%s%s%s.%s", sec->parent ? sec->parent : "",
		         sec->parent ? "." : "", sec->name, k->name);
		if (k->load(ld, k, &def, path, k->in_cfg ? (void *)ld->cfg : settings) < 0)
			return -1;
	}
	return 0;
}

static int sections_open(struct loader *ld, const struct cfg_section *const *sections)
{
	struct cfg *c = ld->cfg;
	const struct cfg_section *sec;
	for (size_t i = 0; sections && (sec = sections[i]) != NULL; i++) {
		if (i == CFG_SECTIONS_MAX)
			return gw_errf(ld->err, "more than %d source sections", CFG_SECTIONS_MAX);
		c->sections[i] = sec;
		c->settings[i] = calloc(1, sec->size ? sec->size : 1);
		c->n_sections = i + 1;
		if (!c->settings[i])
			return gw_errf(ld->err, "out of memory");
		if (section_defaults(ld, sec, c->settings[i]) < 0)
			return -1;
	}
	return 0;
}

#define N_KEYS(t) (sizeof(t) / sizeof((t)[0]))

/* The tables of the top-level sections with the sections that go inside them (a section of
 * admin: after admin's own keys: the order "valid keys here" lists), malloc'd into
 * tables[i] (NULL: the section's own table will do), freed by the caller. */
static int sections_nest(struct loader *ld, struct key *tables[CFG_SECTIONS_MAX])
{
	const struct cfg *c = ld->cfg;
	for (size_t i = 0; i < c->n_sections; i++) {
		const struct cfg_section *sec = c->sections[i];
		size_t p = 0;
		while (sec->parent && p < c->n_sections &&
		       (c->sections[p]->parent || strcmp(c->sections[p]->name, sec->parent) != 0))
			p++;
		if (sec->parent && p == c->n_sections)
			return gw_errf(ld->err, "source section %s: no section %s to go in",
			               sec->name, sec->parent);
		if (!sec->parent)
			continue;
		size_t n = 0;
		const struct key *own = tables[p] ? tables[p] : c->sections[p]->keys;
		while (own[n].name)
			n++;
		struct key *t = malloc((n + 2) * sizeof *t);
		if (!t)
			return gw_errf(ld->err, "out of memory");
		memcpy(t, own, n * sizeof *t);
		t[n] = (struct key){sec->name, load_section, i, 0, 0, sec->keys, CFGW_NODOC};
		t[n + 1] = (struct key){NULL, NULL, 0, NOSUB, CFGW_NODOC};
		free(tables[p]);
		tables[p] = t;
	}
	return 0;
}

/* The top level with the sources' sections in, first (the order "valid keys here" lists). */
static void sections_top(const struct cfg *c, struct key *const tables[CFG_SECTIONS_MAX],
                         struct key *top)
{
	size_t nt = 0;
	for (size_t i = 0; i < c->n_sections; i++)
		if (!c->sections[i]->parent)
			top[nt++] = (struct key){c->sections[i]->name,
			                         load_section,
			                         i,
			                         0,
			                         0,
			                         tables[i] ? tables[i] : c->sections[i]->keys,
			                         CFGW_NODOC};
	for (const struct key *k = top_keys; k->name; k++)
		top[nt++] = *k;
	top[nt] = (struct key){NULL, NULL, 0, NOSUB, CFGW_NODOC};
}

/* "admin: (HTTP long-polling or WebSocket), zookeeper: or etcd:": the top-level sections,
 * each with its words (struct cfg_section.what) when `what` is 1. */
static void section_list(const struct cfg *c, int what, char *buf, size_t cap)
{
	size_t n = 0, pos = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < c->n_sections; i++)
		n += c->sections[i]->parent ? 0 : 1;
	for (size_t i = 0, k = 0; i < c->n_sections && pos < cap; i++) {
		const struct cfg_section *sec = c->sections[i];
		if (sec->parent)
			continue;
		k++;
		pos += (size_t)snprintf(
		    buf + pos, cap - pos, "%s%s:%s%s%s", k == 1 ? "" : (k == n ? " or " : ", "),
		    sec->name, what && sec->what ? " (" : "", what && sec->what ? sec->what : "",
		    what && sec->what ? ")" : "");
	}
}

/* Exactly one source section; then its checks, those of the sections inside it, and the
 * default groups. */
static int check_source_section(struct loader *ld, const struct ynode *root)
{
	struct cfg *c = ld->cfg;
	const struct ynode *first = NULL, *second = NULL;
	size_t fi = 0, si = 0; /* which sections first and second are (read only once set) */
	for (size_t i = 0; i < c->n_sections; i++) {
		const struct ynode *n = ld->section[i];
		if (!n || c->sections[i]->parent)
			continue;
		if (!first || ytree_line(n) < ytree_line(first)) {
			second = first, si = fi;
			first = n, fi = i;
		} else if (!second || ytree_line(n) < ytree_line(second)) {
			second = n, si = i;
		}
	}
	char list[256];
	if (!first) {
		section_list(c, 1, list, sizeof list);
		return cfgw_err(ld, root, NULL, "a source section is required: %s", list);
	}
	if (second) {
		section_list(c, 0, list, sizeof list);
		return cfgw_err(ld, second, c->sections[si]->name,
		                "cannot be used together with %s: (line %d): an agent has "
		                "exactly one source section (%s)",
		                c->sections[fi]->name, ytree_line(first), list);
	}
	const struct cfg_section *sec = c->sections[fi];
	c->section = sec->name;
	if (sec->check && sec->check(ld, first, c->settings[fi]) < 0)
		return -1;
	for (size_t i = 0; i < c->n_sections; i++) {
		const struct cfg_section *in = c->sections[i];
		if (in->parent && strcmp(in->parent, sec->name) == 0 && in->check &&
		    in->check(ld, ld->section[i], c->settings[i]) < 0)
			return -1;
	}
	cfga_default_groups(c);
	return 0;
}

const void *cfg_settings(const struct cfg *c, const struct cfg_section *section)
{
	for (size_t i = 0; c && i < c->n_sections; i++)
		if (c->sections[i] == section)
			return c->settings[i];
	return NULL;
}

size_t cfg_secrets(const struct cfg *c, const char **out, size_t cap)
{
	size_t n = 0;
	if (c->password && n < cap)
		out[n++] = c->password;
	for (size_t i = 0; i < c->n_sections && n < cap; i++) {
		const char *s =
		    c->sections[i]->secret ? c->sections[i]->secret(c->settings[i]) : NULL;
		if (s)
			out[n++] = s;
	}
	if (c->status_token && n < cap)
		out[n++] = c->status_token;
	return n;
}

static int load_tree(struct ynode *root, const struct cfg_section *const *sections,
                     struct cfg **out, struct gw_err *err)
{
	struct cfg *c = cfg_new();
	if (!c) {
		gw_errf(err, "%s: out of memory", root->file);
		ytree_free(root);
		return -1;
	}
	c->tree = root;
	if (!(c->path = strdup(root->file))) {
		cfg_free(c);
		return gw_errf(err, "out of memory");
	}
	struct loader ld = {.cfg = c, .err = err, .root = root};
	if (root->type != YNODE_MAP) {
		cfgw_err(&ld, root, NULL,
		         "expected a map of keys at the top level (admin:, ...), got %s",
		         ytree_type_name(root));
		cfg_free(c);
		return -1;
	}
	struct key top[N_KEYS(top_keys) + CFG_SECTIONS_MAX];
	struct key *tables[CFG_SECTIONS_MAX] = {NULL};
	ld.root_keys = top; /* filled by sections_top() below */
	int rc = sections_open(&ld, sections) < 0 || sections_nest(&ld, tables) < 0 ? -1 : 0;
	if (rc == 0)
		sections_top(c, tables, top);
	if (rc < 0 || expand_tree(&ld, root, "") < 0 || cfgw_map(&ld, root, top, "", c) < 0 ||
	    check_source_section(&ld, root) < 0 || cfg_check_subscriber_groups(&ld) < 0 ||
	    cfg_default_control_socket(c, err) < 0)
		rc = -1;
	for (size_t i = 0; i < CFG_SECTIONS_MAX; i++)
		free(tables[i]);
	if (rc < 0) {
		cfg_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

int cfg_parse(const char *name, const char *text, size_t len,
              const struct cfg_section *const *sections, struct cfg **out, struct gw_err *err)
{
	struct ynode *root;
	if (ytree_parse(name, text, len, &root, err) < 0)
		return -1;
	return load_tree(root, sections, out, err);
}

int cfg_load(const char *path, const struct cfg_section *const *sections, struct cfg **out,
             struct gw_err *err)
{
	struct ynode *root;
	if (ytree_parse_file(path, &root, err) < 0)
		return -1;
	return load_tree(root, sections, out, err);
}

int cfg_tls_check(const struct cfg *c, struct gw_err *err)
{
	const char *section = c->section ? c->section : "admin";
	const struct {
		const char *key, *path;
	} files[] = {{"ca_file", c->tls.ca_file},
	             {"cert_file", c->tls.cert_file},
	             {"key_file", c->tls.key_file}};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		if (files[i].path && readfile_check(files[i].path, err) < 0)
			return gw_err_prefix(err, "%s.tls.%s", section, files[i].key);
	return 0;
}

void cfg_free(struct cfg *c)
{
	if (!c)
		return;
	free(c->username);
	if (c->password) {
		explicit_bzero(c->password, strlen(c->password));
		free(c->password);
	}
	free(c->password_file);
	free(c->namespace_id);
	for (size_t i = 0; i < c->n_sections; i++) {
		if (c->settings[i] && c->sections[i]->free)
			c->sections[i]->free(c->settings[i]);
		free(c->settings[i]);
	}
	free(c->tls.ca_file);
	free(c->tls.cert_file);
	free(c->tls.key_file);
	free(c->state_dir);
	free(c->log_file);
	free(c->status_listen);
	if (c->status_token) {
		explicit_bzero(c->status_token, strlen(c->status_token));
		free(c->status_token);
	}
	free(c->status_token_file);
	free(c->control_socket);
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
