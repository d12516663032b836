/*
 * What the path stores' sections share (see config.h). Server entries are checked for what
 * would otherwise fail later and obscurely inside a client library; the root and the groups
 * for what ShenYu's admin actually writes (AI_PROXY_API_KEY never reaches a path store,
 * PROTOCOL-PUSH.md 2.1).
 */
#include "source/kv/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_admin.h"
#include "core/url.h"
#include "model/groups.h"

int kv_config_add_entry(struct loader *ld, char ***list, size_t *n, const struct ynode *at,
                        const char *path, const char *s, size_t len)
{
	for (size_t i = 0; i < *n; i++)
		if (strlen((*list)[i]) == len && strncasecmp((*list)[i], s, len) == 0)
			return cfgw_err(ld, at, path, "duplicate entry '%s'", (*list)[i]);
	char **grown = realloc(*list, (*n + 1) * sizeof *grown);
	if (!grown)
		return cfgw_err(ld, at, path, "out of memory");
	*list = grown;
	if (!(grown[*n] = strndup(s, len)))
		return cfgw_err(ld, at, path, "out of memory");
	(*n)++;
	return 0;
}

int kv_config_add_server(struct loader *ld, struct kv_config *kv, const struct ynode *at,
                         const char *path, const char *s, size_t len)
{
	return kv_config_add_entry(ld, &kv->servers, &kv->n_servers, at, path, s, len);
}

/* "PORT" at [p, end): 1..65535, digits only. */
static int valid_port(const char *p, const char *end)
{
	long port = 0;
	if (p == end || end - p > 5)
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		port = port * 10 + (*p - '0');
	}
	return port >= 1 && port <= 65535;
}

int kv_config_host_port(const char *s, size_t len)
{
	const char *end = s + len, *colon;
	if (len && s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (!close || close + 1 >= end || close[1] != ':' || close == s + 1)
			return 0;
		colon = close + 1;
	} else {
		colon = NULL;
		for (const char *p = s; p < end; p++)
			if (*p == ':')
				colon = p;
		if (!colon || colon == s)
			return 0;
		for (const char *p = s; p < colon; p++)
			if (*p == ':' || *p == '/' || *p == '@' || (unsigned char)*p <= ' ')
				return 0;
	}
	return valid_port(colon + 1, end);
}

#define SHOWN(len) (int)((len) > 200 ? 200 : (len))

int kv_config_url(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                  size_t len, const struct kv_url_words *words, size_t *n)
{
	/* first, before any message quotes the URL, whatever its scheme (one mistyped, another
	 * protocol's): the part of the authority before an '@' is a credential */
	const char *end = s + len;
	if (gw_url_has_userinfo(s, len))
		return cfgw_err(ld, at, path, "credentials in the URL are not supported: use %s",
		                words->instead);
	size_t scheme;
	if (len >= 7 && strncasecmp(s, "http://", 7) == 0)
		scheme = 7;
	else if (len >= 8 && strncasecmp(s, "https://", 8) == 0)
		scheme = 8;
	else
		return cfgw_err(ld, at, path,
		                "'%.*s' is not an http:// or https:// URL (such as %s)", SHOWN(len),
		                s, words->example);
	const char *host = s + scheme;
	const char *slash = memchr(host, '/', (size_t)(end - host));
	*n = len;
	while (*n > scheme && s[*n - 1] == '/')
		(*n)--;
	if (words->paths && (memchr(s, '?', len) || memchr(s, '#', len)))
		return cfgw_err(ld, at, path,
		                "'%.*s' must be scheme://host:port[/path], without a query or "
		                "fragment",
		                SHOWN(len), s);
	if (!words->paths && (memchr(host, '/', (size_t)(s + *n - host)) || memchr(s, '?', len) ||
	                      memchr(s, '#', len)))
		return cfgw_err(ld, at, path,
		                "'%.*s' must be scheme://host:port, without a path, query or "
		                "fragment",
		                SHOWN(len), s);
	/* host:port ends at the first '/' (only trailing ones when no path is allowed) */
	if (!kv_config_host_port(host, (size_t)((slash ? slash : end) - host)))
		return cfgw_err(ld, at, path, "'%.*s' has no host:port (such as %s)", SHOWN(len), s,
		                words->host ? words->host : words->example);
	return 0;
}

int kv_config_add_url(struct loader *ld, struct kv_config *kv, const struct ynode *at,
                      const char *path, const char *s, size_t len, const struct kv_url_words *words)
{
	size_t n;
	if (kv_config_url(ld, at, path, s, len, words, &n) < 0)
		return -1;
	return kv_config_add_server(ld, kv, at, path, s, n);
}

int kv_config_root(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                   void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	char *r = *cfgw_field_str(base, k);
	if (r[0] != '/')
		return cfgw_err(ld, v, path,
		                "expected an absolute path such as /shenyu, got \"%s\"", r);
	if (strstr(r, "//"))
		return cfgw_err(ld, v, path, "\"%s\" has an empty segment (\"//\")", r);
	size_t n = strlen(r);
	while (n > 1 && r[n - 1] == '/')
		r[--n] = '\0';
	if (n == 1)
		return cfgw_err(ld, v, path,
		                "must not be \"/\": the admin writes under /{namespace}/shenyu "
		                "(2.7) or /shenyu (2.5, 2.6)");
	return 0;
}

int kv_config_secret(struct loader *ld, const struct ynode *v, const char *path, char **value,
                     const struct ynode **node, const struct ynode *other)
{
	if (v->type != YNODE_SCALAR)
		return cfgw_err(ld, v, path, "expected a string, got %s", ytree_type_name(v));
	/* the other key is this one's path and "_file" ("consul.token_file") */
	if (other)
		return cfgw_err(ld, v, path, "cannot be used together with %s_file (line %d)", path,
		                ytree_line(other));
	*node = v;
	if (!*v->text)
		return 0;
	if (!(*value = strdup(v->text)))
		return cfgw_err(ld, v, path, "out of memory");
	return 0;
}

int kv_config_secret_file(struct loader *ld, const struct key *k, const struct ynode *v,
                          const char *path, void *base, char **value, const struct ynode **node,
                          const struct ynode *other)
{
	/* the other key is this one's path without "_file" ("consul.token") */
	size_t n = strlen(path);
	if (other)
		return cfgw_err(ld, v, path, "cannot be used together with %.*s (line %d)",
		                (int)(n > 5 ? n - 5 : n), path, ytree_line(other));
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	*node = v;
	return cfga_read_secret_file(ld, v, path, *cfgw_field_str(base, k), value);
}

void kv_config_wipe(char *secret)
{
	if (secret)
		explicit_bzero(secret, strlen(secret));
	free(secret);
}

/* "zookeeper://h1:2181,h2:2181/ns/shenyu", the name logs and /status show. */
static int make_label(struct loader *ld, const struct ynode *at, struct kv_config *kv,
                      const char *section)
{
	size_t cap = strlen(section) + 3 + strlen(kv->root) + 1;
	for (size_t i = 0; i < kv->n_servers; i++)
		cap += strlen(kv->servers[i]) + 1;
	char *label = malloc(cap);
	if (!label)
		return cfgw_err(ld, at, NULL, "out of memory");
	size_t pos = (size_t)snprintf(label, cap, "%s://", section);
	for (size_t i = 0; i < kv->n_servers; i++) {
		const char *s = kv->servers[i];
		const char *sep = strstr(s, "://");
		pos += (size_t)snprintf(label + pos, cap - pos, "%s%s", i ? "," : "",
		                        sep ? sep + 3 : s);
	}
	snprintf(label + pos, cap - pos, "%s", kv->root);
	free(kv->label);
	kv->label = label;
	return 0;
}

int kv_config_check(struct loader *ld, const struct ynode *sec, struct kv_config *kv,
                    const struct kv_config_words *words)
{
	struct cfg *c = ld->cfg;
	const char *name = words->section;
	char path[64];
	if (kv->n_servers == 0) {
		snprintf(path, sizeof path, "%s.%s", name, words->servers);
		return cfgw_err(ld, sec, path, "required: %s", words->example);
	}
	if (c->username && !c->password) {
		snprintf(path, sizeof path, "%s.username", name);
		return cfgw_err(ld, ld->username, path,
		                "is set, so %s.password or %s.password_file is required", name,
		                name);
	}
	if (c->password && !c->username) {
		snprintf(path, sizeof path, "%s.%s", name,
		         ld->password ? "password" : "password_file");
		return cfgw_err(ld, ld->password ? ld->password : ld->password_file, path,
		                "is set but %s.username is not: %s authenticates a user "
		                "(set username, or leave the password out)",
		                name, words->system);
	}
	if (!!c->tls.cert_file != !!c->tls.key_file) {
		snprintf(path, sizeof path, "%s.tls.%s", name,
		         c->tls.cert_file ? "cert_file" : "key_file");
		return cfgw_err(ld, c->tls.cert_file ? ld->cert_file : ld->key_file, path,
		                "cert_file and key_file go together: set both or neither");
	}
	for (size_t i = 0; i < c->n_groups; i++) {
		if (c->groups[i] != GW_GROUP_AI_PROXY_API_KEY)
			continue;
		snprintf(path, sizeof path, "%s.groups", name);
		return cfgw_err(ld, ld->groups, path,
		                "AI_PROXY_API_KEY is never published to %s by ShenYu's admin (it "
		                "syncs AI proxy API keys over HTTP and WebSocket only): remove it, "
		                "or sync that group from admin:",
		                words->system);
	}
	if (!kv->root) {
		size_t n = strlen(c->namespace_id) + sizeof "//shenyu";
		if (!(kv->root = malloc(n)))
			return cfgw_err(ld, sec, NULL, "out of memory");
		snprintf(kv->root, n, "/%s/shenyu", c->namespace_id);
	}
	return make_label(ld, sec, kv, name);
}

void kv_config_free(struct kv_config *kv)
{
	for (size_t i = 0; i < kv->n_servers; i++)
		free(kv->servers[i]);
	free(kv->servers);
	free(kv->root);
	free(kv->label);
}

void kv_config_summary(const struct kv_config *kv, const char *type, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s source %s", type, kv && kv->label ? kv->label : "");
}
