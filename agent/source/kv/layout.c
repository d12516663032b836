/*
 * Group directories of ShenYu's path layout (see layout.h), from DefaultPathConstants in
 * ShenYu's common module as PROTOCOL-PUSH.md 2.1 records them.
 */
#include "source/kv/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/groups.h"

const char *kv_group_dir(enum gw_group g)
{
	switch (g) {
	case GW_GROUP_PLUGIN:
		return "plugin";
	case GW_GROUP_SELECTOR:
		return "selector";
	case GW_GROUP_RULE:
		return "rule";
	case GW_GROUP_APP_AUTH:
		return "auth";
	case GW_GROUP_META_DATA:
		return "metaData";
	case GW_GROUP_PROXY_SELECTOR:
		return "proxySelectorData";
	case GW_GROUP_DISCOVER_UPSTREAM:
		return "discoveryUpstream";
	default:
		return NULL; /* AI_PROXY_API_KEY: never written to a path store */
	}
}

int kv_layout_init(struct kv_layout *l, const char *root, const enum gw_group *groups, size_t n,
                   struct gw_err *err)
{
	memset(l, 0, sizeof *l);
	size_t rl = strlen(root);
	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	if (!(l->root = strndup(root, rl)))
		goto oom;
	for (size_t i = 0; i < n && i < GW_GROUP_COUNT; i++) {
		enum gw_group g = groups[i];
		const char *dir = kv_group_dir(g);
		if (!dir) {
			kv_layout_free(l);
			return gw_errf(err, "%s is never written to a path store by ShenYu's admin",
			               gw_group_name(g));
		}
		size_t cap = rl + 1 + strlen(dir) + 1;
		if (!(l->dirs[g] = malloc(cap)))
			goto oom;
		l->dir_len[g] = (size_t)snprintf(l->dirs[g], cap, "%s/%s", l->root, dir);
		l->groups[l->n_groups++] = g;
	}
	return 0;
oom:
	kv_layout_free(l);
	return gw_errf(err, "out of memory");
}

void kv_layout_free(struct kv_layout *l)
{
	free(l->root);
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		free(l->dirs[g]);
	memset(l, 0, sizeof *l);
}

int kv_layout_group_of(const struct kv_layout *l, const char *path, size_t len)
{
	for (size_t i = 0; i < l->n_groups; i++) {
		enum gw_group g = l->groups[i];
		size_t dl = l->dir_len[g];
		/* strictly below: "DIR/" and at least one more byte */
		if (len > dl + 1 && path[dl] == '/' && memcmp(path, l->dirs[g], dl) == 0)
			return (int)g;
	}
	return -1;
}
