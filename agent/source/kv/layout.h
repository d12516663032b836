/*
 * Where ShenYu's admin keeps each group in a path store (ZooKeeper znodes, etcd keys):
 * ROOT/plugin/{name}, ROOT/selector/{plugin}/{id}, ROOT/rule/{plugin}/{selectorId}-{ruleId},
 * ROOT/auth/{appKey}, ROOT/metaData/{path...} (nested by the path's own '/' since 2.7, one
 * URL-encoded node before), ROOT/proxySelectorData/{plugin}/{id},
 * ROOT/discoveryUpstream/{plugin}/{selectorId} (PROTOCOL-PUSH.md 2.1, 3.1). ROOT is
 * "/{namespace}/shenyu" for a 2.7 admin and "/shenyu" before. AI_PROXY_API_KEY has no
 * place: the admin never writes it to a path store.
 *
 * Only the group's directory matters here: below it every node with data is one item of
 * that group, whatever its depth, so no path is ever parsed into ids (the item's own JSON
 * carries its key, model/keys.h).
 */
#ifndef GW_KV_LAYOUT_H
#define GW_KV_LAYOUT_H

#include <gwsync/subscriber.h>
#include <stddef.h>

#include "core/error.h"

struct kv_layout {
	char *root; /* "/ns/shenyu", no trailing '/' */
	size_t n_groups;
	enum gw_group groups[GW_GROUP_COUNT]; /* configured, in order */
	char *dirs[GW_GROUP_COUNT];           /* by group: "ROOT/plugin"; NULL: not configured */
	size_t dir_len[GW_GROUP_COUNT];
};

/* The directory name of a group under the root ("plugin", "metaData", ...); NULL for a
 * group a path store never holds (AI_PROXY_API_KEY). */
const char *kv_group_dir(enum gw_group g);

/* Fill l for `root` and the configured groups. -1 (err says why) for a group without a
 * directory or out of memory. */
int kv_layout_init(struct kv_layout *l, const char *root, const enum gw_group *groups, size_t n,
                   struct gw_err *err);
void kv_layout_free(struct kv_layout *l);

/* The configured group whose directory holds `path` strictly below it (an item node or an
 * intermediate one), or -1: the root, a group directory itself, an unconfigured group,
 * "ROOT/pluginX" (a sibling sharing the prefix) or a path outside the root. */
int kv_layout_group_of(const struct kv_layout *l, const char *path, size_t len);

#endif
