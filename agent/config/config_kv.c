/*
 * The zookeeper: and etcd: sections (see config_kv.h). Server entries are checked for
 * what would otherwise fail later and obscurely inside a client library (a missing port, a
 * chroot in a ZooKeeper address, credentials or a path in an etcd URL); the root and the
 * groups for what ShenYu's admin actually writes (AI_PROXY_API_KEY never reaches a path
 * store, PROTOCOL-PUSH.md 2.1).
 */
#include "config/config_kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/groups.h"

#define SHOWN(len) (int)((len) > 200 ? 200 : (len))

static const char *section_name(const struct cfg *c)
{
	return c->source == CFG_SOURCE_ETCD ? "etcd" : "zookeeper";
}

int cfgk_zookeeper(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                   void *base)
{
	ld->zookeeper = v;
	if (!ld->etcd)
		ld->cfg->source = CFG_SOURCE_ZOOKEEPER;
	return cfgw_submap(ld, k, v, path, base);
}

int cfgk_etcd(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base)
{
	ld->etcd = v;
	if (!ld->zookeeper)
		ld->cfg->source = CFG_SOURCE_ETCD;
	return cfgw_submap(ld, k, v, path, base);
}

static int add_kv_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                         size_t len)
{
	struct cfg *c = ld->cfg;
	for (size_t i = 0; i < c->n_kv_servers; i++)
		if (strlen(c->kv_servers[i]) == len && strncasecmp(c->kv_servers[i], s, len) == 0)
			return cfgw_err(ld, at, path, "duplicate entry '%s'", c->kv_servers[i]);
	char **grown = realloc(c->kv_servers, (c->n_kv_servers + 1) * sizeof *grown);
	if (!grown)
		return cfgw_err(ld, at, path, "out of memory");
	c->kv_servers = grown;
	if (!(c->kv_servers[c->n_kv_servers] = strndup(s, len)))
		return cfgw_err(ld, at, path, "out of memory");
	c->n_kv_servers++;
	return 0;
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

/* host:port, host may be [v6]. */
static int valid_host_port(const char *s, size_t len)
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

static int add_zk_server(struct loader *ld, const struct ynode *at, const char *path, const char *s,
                         size_t len)
{
	if (memchr(s, '/', len))
		return cfgw_err(ld, at, path,
		                "'%.*s' must be host:port without a path: a chroot goes into "
		                "zookeeper.root",
		                SHOWN(len), s);
	if (!valid_host_port(s, len))
		return cfgw_err(ld, at, path, "'%.*s' is not host:port (such as 127.0.0.1:2181)",
		                SHOWN(len), s);
	return add_kv_server(ld, at, path, s, len);
}

int cfgk_zk_servers(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                    void *base)
{
	(void)k, (void)base;
	return cfgw_each_word(ld, v, path, "ZooKeeper servers", add_zk_server);
}

static int add_etcd_endpoint(struct loader *ld, const struct ynode *at, const char *path,
                             const char *s, size_t len)
{
	size_t scheme;
	if (len >= 7 && strncasecmp(s, "http://", 7) == 0)
		scheme = 7;
	else if (len >= 8 && strncasecmp(s, "https://", 8) == 0)
		scheme = 8;
	else
		return cfgw_err(ld, at, path,
		                "'%.*s' is not an http:// or https:// URL (such as "
		                "http://127.0.0.1:2379)",
		                SHOWN(len), s);
	const char *host = s + scheme, *end = s + len;
	const char *slash = memchr(host, '/', (size_t)(end - host));
	/* first, before any message quotes the URL: the part before an '@' is a credential */
	if (memchr(host, '@', (size_t)((slash ? slash : end) - host)))
		return cfgw_err(ld, at, path,
		                "credentials in the URL are not supported: use etcd.username and "
		                "etcd.password");
	size_t n = len;
	while (n > scheme && s[n - 1] == '/')
		n--;
	if (memchr(host, '/', (size_t)(s + n - host)) || memchr(s, '?', len) || memchr(s, '#', len))
		return cfgw_err(ld, at, path,
		                "'%.*s' must be scheme://host:port, without a path, query or "
		                "fragment",
		                SHOWN(len), s);
	if (!valid_host_port(host, (size_t)(s + n - host)))
		return cfgw_err(ld, at, path, "'%.*s' has no host:port (such as 127.0.0.1:2379)",
		                SHOWN(len), s);
	return add_kv_server(ld, at, path, s, n);
}

int cfgk_etcd_endpoints(struct loader *ld, const struct key *k, const struct ynode *v,
                        const char *path, void *base)
{
	(void)k, (void)base;
	return cfgw_each_word(ld, v, path, "etcd endpoint URLs", add_etcd_endpoint);
}

int cfgk_root(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base)
{
	ld->kv_root = v;
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

int cfgk_resync_interval(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	if (cfgw_duration(ld, k, v, path, base) < 0)
		return -1;
	int64_t ms = *(int64_t *)((char *)base + k->off);
	if (ms > 0 && ms < 1000)
		return cfgw_err(ld, v, path, "must be 0 (off) or at least 1s");
	return 0;
}

/* ---------------------------------------------------------------- checks */

/* servers[0]: "zookeeper://h1:2181,h2:2181/ns/shenyu", the name logs and /status show. */
static int make_label(struct loader *ld, const struct ynode *at)
{
	struct cfg *c = ld->cfg;
	size_t cap = strlen(section_name(c)) + 3 + strlen(c->kv_root) + 1;
	for (size_t i = 0; i < c->n_kv_servers; i++)
		cap += strlen(c->kv_servers[i]) + 1;
	char *label = malloc(cap);
	char **servers = calloc(1, sizeof *servers);
	if (!label || !servers) {
		free(label);
		free(servers);
		return cfgw_err(ld, at, NULL, "out of memory");
	}
	size_t pos = (size_t)snprintf(label, cap, "%s://", section_name(c));
	for (size_t i = 0; i < c->n_kv_servers; i++) {
		const char *s = c->kv_servers[i];
		const char *sep = strstr(s, "://");
		pos += (size_t)snprintf(label + pos, cap - pos, "%s%s", i ? "," : "",
		                        sep ? sep + 3 : s);
	}
	snprintf(label + pos, cap - pos, "%s", c->kv_root);
	servers[0] = label;
	c->servers = servers;
	c->n_servers = 1;
	return 0;
}

static int check_kv(struct loader *ld, const struct ynode *sec)
{
	struct cfg *c = ld->cfg;
	const char *name = section_name(c);
	char path[64];
	if (c->n_kv_servers == 0) {
		int zk = c->source == CFG_SOURCE_ZOOKEEPER;
		snprintf(path, sizeof path, "%s.%s", name, zk ? "servers" : "endpoints");
		return cfgw_err(ld, sec, path, "required: %s",
		                zk ? "a list of ZooKeeper servers such as [ \"127.0.0.1:2181\" ]"
		                   : "a list of etcd URLs such as [ \"http://127.0.0.1:2379\" ]");
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
		                "is set but %s.username is not: etcd authenticates a user "
		                "(set username, or leave the password out)",
		                name);
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
		                c->source == CFG_SOURCE_ETCD ? "etcd" : "ZooKeeper");
	}
	if (!c->kv_root) {
		size_t n = strlen(c->namespace_id) + sizeof "//shenyu";
		if (!(c->kv_root = malloc(n)))
			return cfgw_err(ld, sec, NULL, "out of memory");
		snprintf(c->kv_root, n, "/%s/shenyu", c->namespace_id);
	}
	return make_label(ld, sec);
}

int cfgk_check(struct loader *ld, const struct ynode *root)
{
	const struct ynode *secs[3] = {ld->admin, ld->zookeeper, ld->etcd};
	static const char *const names[3] = {"admin", "zookeeper", "etcd"};
	const struct ynode *first = NULL, *second = NULL;
	int fi = -1, si = -1;
	for (int i = 0; i < 3; i++) {
		if (!secs[i])
			continue;
		if (!first || ytree_line(secs[i]) < ytree_line(first)) {
			second = first, si = fi;
			first = secs[i], fi = i;
		} else if (!second || ytree_line(secs[i]) < ytree_line(second)) {
			second = secs[i], si = i;
		}
	}
	if (!first)
		return cfgw_err(ld, root, NULL,
		                "a source section is required: admin: (HTTP long-polling or "
		                "WebSocket), zookeeper: or etcd:");
	if (second) {
		char path[16];
		snprintf(path, sizeof path, "%s", names[si]);
		return cfgw_err(ld, second, path,
		                "cannot be used together with %s: (line %d): an agent has "
		                "exactly one source section (admin:, zookeeper: or etcd:)",
		                names[fi], ytree_line(first));
	}
	if (fi == 0)
		return 1;
	ld->cfg->source = fi == 1 ? CFG_SOURCE_ZOOKEEPER : CFG_SOURCE_ETCD;
	if (check_kv(ld, first) < 0)
		return -1;
	return 0;
}
