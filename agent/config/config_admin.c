/*
 * The `admin:` section of the configuration (see config_admin.h). URLs are checked for
 * what would otherwise fail later and obscurely (scheme, host, a query string, credentials
 * in the URL); group names against the eight the admin knows; the password is taken from
 * the file or from password_file and never quoted in any message.
 */
#include "config/config_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/suggest.h"
#include "core/readfile.h"
#include "model/groups.h"

#define PASSWORD_FILE_MAX (64 * 1024)

/* ---------------------------------------------------------------- admin.groups */

int cfg_group_parse(const char *name)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (name && strcmp(name, gw_group_name((enum gw_group)g)) == 0)
			return g;
	return -1;
}

static int add_group(struct loader *ld, const struct ynode *at, const char *path, const char *name,
                     size_t len, void *base)
{
	(void)base;
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
			return cfgw_err(ld, at, path, "unknown group '%s' (did you mean '%s'?)",
			                word, best);
		return cfgw_err(ld, at, path, "unknown group '%s' (known groups: %s)", word, list);
	}
	for (size_t i = 0; i < c->n_groups; i++)
		if ((int)c->groups[i] == g)
			return cfgw_err(ld, at, path, "duplicate group '%s'", word);
	c->groups[c->n_groups++] = (enum gw_group)g;
	return 0;
}

int cfga_groups(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base)
{
	(void)k;
	ld->groups = v;
	ld->cfg->n_groups = 0;
	return cfgw_each_word(ld, v, path, "group names", add_group, base);
}

/* ---------------------------------------------------------------- admin credentials */

/* "SECTION.name" for a key beside `path` ("etcd.password" -> "etcd.password_file"), so a
 * message names the keys of the section it is about. */
static const char *sibling(char *buf, size_t cap, const char *path, const char *name)
{
	const char *dot = strrchr(path, '.');
	snprintf(buf, cap, "%.*s%s", dot ? (int)(dot - path + 1) : 0, path, name);
	return buf;
}

int cfga_username(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base)
{
	ld->username = v;
	return cfgw_optional_string(ld, k, v, path, base);
}

int cfga_password(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base)
{
	(void)k, (void)base;
	/* never echo the value: it is a secret */
	if (v->type != YNODE_SCALAR)
		return cfgw_err(ld, v, path, "expected a string, got %s", ytree_type_name(v));
	char other[64];
	if (ld->password_file)
		return cfgw_err(ld, v, path, "cannot be used together with %s (line %d)",
		                sibling(other, sizeof other, path, "password_file"),
		                ytree_line(ld->password_file));
	ld->password = v;
	if (!(ld->cfg->password = strdup(v->text)))
		return cfgw_err(ld, v, path, "out of memory");
	return 0;
}

/* Read the whole file (a regular file only: core/readfile.h); one trailing "\n" is not part
 * of the password. */
int cfga_read_secret_file(struct loader *ld, const struct ynode *at, const char *path,
                          const char *file, char **out)
{
	char *buf;
	size_t len;
	struct gw_err ferr;
	if (readfile(file, PASSWORD_FILE_MAX, &buf, &len, &ferr) < 0)
		return cfgw_err(ld, at, path, "%s", ferr.msg);
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	if (memchr(buf, '\0', len)) {
		explicit_bzero(buf, len);
		free(buf);
		return cfgw_err(ld, at, path, "'%.300s' contains a NUL byte", file);
	}
	*out = buf;
	return 0;
}

int cfga_password_file(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	char other[64];
	if (ld->password)
		return cfgw_err(ld, v, path, "cannot be used together with %s (line %d)",
		                sibling(other, sizeof other, path, "password"),
		                ytree_line(ld->password));
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	ld->password_file = v;
	return cfga_read_secret_file(ld, v, path, ld->cfg->password_file, &ld->cfg->password);
}

/* status.token: the bearer token that allows POST on the status endpoint; a secret. */
int cfga_status_token(struct loader *ld, const struct key *k, const struct ynode *v,
                      const char *path, void *base)
{
	(void)k, (void)base;
	if (v->type != YNODE_SCALAR)
		return cfgw_err(ld, v, path, "expected a string, got %s", ytree_type_name(v));
	if (ld->status_token_file)
		return cfgw_err(ld, v, path,
		                "cannot be used together with status.token_file (line %d)",
		                ytree_line(ld->status_token_file));
	ld->status_token = v;
	if (!*v->text)
		return 0; /* empty: no token, the endpoint stays read-only */
	if (strlen(v->text) < 16)
		return cfgw_err(ld, v, path, "too short to guard control: at least 16 characters");
	if (!(ld->cfg->status_token = strdup(v->text)))
		return cfgw_err(ld, v, path, "out of memory");
	return 0;
}

int cfga_status_token_file(struct loader *ld, const struct key *k, const struct ynode *v,
                           const char *path, void *base)
{
	if (ld->status_token)
		return cfgw_err(ld, v, path, "cannot be used together with status.token (line %d)",
		                ytree_line(ld->status_token));
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	ld->status_token_file = v;
	if (cfga_read_secret_file(ld, v, path, ld->cfg->status_token_file, &ld->cfg->status_token) <
	    0)
		return -1;
	if (ld->cfg->status_token && strlen(ld->cfg->status_token) < 16)
		return cfgw_err(ld, v, path,
		                "the token in %s is too short to guard control: at least "
		                "16 characters",
		                ld->cfg->status_token_file);
	return 0;
}

/* A file that must be readable now, so --check finds a wrong path before the first poll. */
int cfga_readable_file(struct loader *ld, const struct key *k, const struct ynode *v,
                       const char *path, void *base)
{
	if (cfgw_string(ld, k, v, path, base) < 0)
		return -1;
	const char *file = *cfgw_field_str(base, k);
	struct gw_err ferr;
	if (readfile_check(file, &ferr) < 0)
		return cfgw_err(ld, v, path, "%s", ferr.msg);
	if (strcmp(k->name, "cert_file") == 0)
		ld->cert_file = v;
	else if (strcmp(k->name, "key_file") == 0)
		ld->key_file = v;
	return 0;
}

/* ---------------------------------------------------------------- checks across keys */

void cfga_default_groups(struct cfg *c)
{
	if (c->n_groups == 0) {
		static const enum gw_group classic[] = {GW_GROUP_PLUGIN, GW_GROUP_SELECTOR,
		                                        GW_GROUP_RULE, GW_GROUP_APP_AUTH,
		                                        GW_GROUP_META_DATA};
		memcpy(c->groups, classic, sizeof classic);
		c->n_groups = sizeof classic / sizeof classic[0];
	}
}
