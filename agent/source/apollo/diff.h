/*
 * The Apollo source's map diff: Apollo answers a read with the namespace's whole release
 * (every key), so what changed is found here by comparing the new `configurations` map
 * with the one held, key by key, and only the keys that differ are handed on (node_put,
 * node_delete): a one-item release costs the downstream what changed, not the group. The
 * compare itself is one hash lookup and one string compare per key. A service with
 * incremental replies on sends only the changes; they are applied the same way.
 */
#ifndef GW_APOLLO_DIFF_H
#define GW_APOLLO_DIFF_H

#include <jansson.h>
#include <stddef.h>

/* One key that differs: its new value, or value NULL when it is gone. Non-zero stops. */
typedef int (*apollo_diff_fn)(void *ctx, const char *key, size_t klen, const char *value,
                              size_t vlen);

/* Call fn for every key of next whose value differs from old's (new or changed), then for
 * every key of old missing from next. Both are objects of strings (old may be NULL: all
 * new). Returns how many keys differ, or -1 when fn stopped. */
long apollo_diff(json_t *old, json_t *next, apollo_diff_fn fn, void *ctx);

/* An incremental reply's configurationChanges (checked by reply.c) applied to `held` in
 * place, so it becomes the new release, calling fn for every key whose value differs: the
 * cost is what changed, not the namespace. Returns how many keys differ, or -1 when fn
 * stopped or memory ran out (held is then part way: the caller reads everything again). */
long apollo_apply_changes(json_t *held, const json_t *changes, apollo_diff_fn fn, void *ctx);

#endif
