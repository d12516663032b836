/*
 * ShenYu's node layout, shared by the key/value stores without hierarchy (Nacos, Apollo,
 * Polaris): what the admin's keys mean, which of them a source must read and watch, and
 * how their values reach the path stores' mirror (source/kv/mirror.h), which does the rest
 * (settle, patching a group at the cost of what changed, full reads with repairs, stats).
 *
 * The keys (PROTOCOL-PUSH.md 4.1; ShenYu DefaultNodeConstants, NacosPathConstants,
 * AbstractNodeDataChangedListener, AbstractNodeDataSyncService), P = the prefix, "{ns}."
 * for a 2.7 admin, "" for 2.6.1 to 2.6.x:
 *   P plugin.list                     -> P plugin.{name}
 *   P selector.{plugin}.list          -> P selector.{plugin}.{id}
 *   P rule.{plugin}.{selectorId}.list -> P rule.{plugin}.{selectorId}.{id}
 *   P auth.list                       -> P auth.{appKey}
 *   P meta.list                       -> P meta.{id}
 *   P proxy.selector.{plugin}.list    -> P proxy.selector.{plugin}.{id}
 *   P discovery.{plugin}.list         -> P discovery.{plugin}.{selectorId}
 * A list key holds a JSON array of ids. The selector, proxy-selector and discovery lists of
 * a plugin are those of the plugins in plugin.list; the rule list of a selector is that of a
 * selector in its plugin's selector list (the walk ShenYu's gateway does).
 *
 * The list key decides membership: an item key is live (in the mirror) only while its id
 * is in its list and that list is reached from the root lists. ShenYu's REFRESH deletes
 * vanished items by their bare name, so their item keys survive in the store; they are
 * gone here all the same. A list change adds and removes the members that came and went
 * (and, for plugin and selector lists, the lists below them); an item key read before its
 * list names it is held aside and becomes live when it does. A blank value, or "null"
 * (Polaris's delete), is an absent key.
 *
 * The whole-group layout of ShenYu 2.4 to 2.6.0 (NODE_LAYOUT_WHOLE) has one document per
 * group instead (shenyu.plugin.json: name -> PluginData; shenyu.selector.json: plugin ->
 * [SelectorData]; shenyu.rule.json: selectorId -> [RuleData]; shenyu.auth.json: appKey ->
 * AppAuthData; shenyu.meta.json: path -> MetaData; shenyu.proxy.selector.json: id ->
 * [ProxySelectorData]; shenyu.discovery.data.json, never written by 2.6.0's admin): each
 * document is exploded into its items, and an item missing from a new document is deleted
 * (ShenYu's own gateway never removed them).
 *
 * Two ways to feed it:
 *  - a per-key transport (Nacos, Polaris) reads and watches the keys node_wanted() lists
 *    (the root lists, the lists they name, every member's item key); a full read is
 *    "node_full_begin, then read every key node_unread() lists until it lists none, then
 *    node_full_end"; between full reads it re-reads the keys its watch names with
 *    node_put(), then reads what node_unread() lists (ids a list gained), and re-registers
 *    its watch when node_wanted_gen() moved;
 *  - a transport that gets every key at each read (Apollo: `complete`) gives the whole map
 *    as a full read, or the keys that differ one by one with node_put()/node_delete().
 * A key that leaves the wanted set is forgotten unless the feed is complete: it is not
 * watched any more, so what was read of it goes stale; it is read again when wanted again.
 *
 * Threads: one thread (the source's) calls everything but node_stats(), which any thread
 * may call.
 */
#ifndef GW_NODE_H
#define GW_NODE_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/log.h"
#include "source/kv/mirror.h"
#include "store/ingest.h"

struct node_map;

enum node_layout {
	NODE_LAYOUT_NODES = 0, /* list keys and item keys (ShenYu 2.6.1+) */
	NODE_LAYOUT_WHOLE,     /* one document per group (ShenYu 2.4 to 2.6.0) */
};

/* The longest tag a transport may keep with a key (node_put's `tag`), NUL included. */
#define NODE_TAG_MAX 72

struct node_args {
	enum node_layout layout;
	const char *prefix; /* NODES: "{namespace}." (2.7) or "" (2.6.x); copied */
	/* WHOLE: the document key of each group, by enum gw_group (NULL entry: the group has
	 * no document); NULL: Nacos's and Apollo's ("shenyu.plugin.json", ...,
	 * node_whole_doc_name()). Copied. */
	const char *const *doc_names;
	int complete; /* every read gives every key (Apollo): keys not wanted are kept */
	const enum gw_group *groups; /* configured; AI_PROXY_API_KEY is refused */
	size_t n_groups;
	struct ingest *ingest;
	struct gw_log *log;
	const char *type;   /* "nacos": starts every log line */
	const char *server; /* names the store in logs and versions: "nacos://h:8848/tenant" */
	int64_t settle_ms;  /* > 0 */
};

/* What one map holds, for /status and metrics: the mirror's figures and the keys. */
struct node_stats {
	struct kv_mirror_stats mirror;
	size_t keys;       /* keys held: read, or wanted and not yet read */
	size_t wanted;     /* keys to read and watch now */
	size_t aside;      /* item keys read whose id no list names (held aside) */
	uint64_t bad_list; /* list or document values that were not what they must be (the
	                    * last good membership stays) */
};

/* NULL (err says why) for a group no node store holds, or out of memory. */
struct node_map *node_new(const struct node_args *a, struct gw_err *err);
void node_free(struct node_map *m);

/* The whole-group layout's document key for group g on Nacos and Apollo; NULL if none. */
const char *node_whole_doc_name(enum gw_group g);

/*
 * One key read or changed at monotonic time now_ms: its value (vlen 0, blank or "null":
 * the key is absent) and the transport's tag for it (Nacos: the content's md5; NULL: none),
 * which node_wanted() hands back. Returns 1 if the mirror or the wanted set changed, 0 if
 * not, -1 on out of memory.
 */
int node_put(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
             const char *tag, int64_t now_ms);
/* The key is absent (deleted, or 404). */
int node_delete(struct node_map *m, const char *key, size_t klen, int64_t now_ms);

/* A full read: begin, put every key read (absent ones too: value NULL), end. Keys held but
 * not put are absent at the end. No node_put() between begin and end. */
int node_full_begin(struct node_map *m);
int node_full_put(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
                  const char *tag);
/* Hand the mirror what is live as a full read of `kind` (kv_mirror_full_end). Returns how
 * many versions the ingest accepted, -1 on out of memory. */
int node_full_end(struct node_map *m, enum kv_full_kind kind, int64_t now_ms);
/* A full read that failed half way: keep what was read (handed to the mirror as a
 * KV_FULL_RECOVER read, keys not read this time kept), so the map and the mirror agree;
 * node_unread() still lists the keys not read. Before any full read has ended, nothing is
 * handed over: half a first read is no version (the snapshot stands). */
int node_full_abort(struct node_map *m, int64_t now_ms);

/* What node_wanted() and node_unread() call for each key: its tag ("" when the key was read
 * absent or not read yet), and whether it has been read (since the last full_begin). */
typedef void (*node_key_fn)(void *ctx, const char *key, size_t klen, const char *tag, int present,
                            int read);
/* Every key to read and watch now, in no particular order. Returns how many. */
size_t node_wanted(const struct node_map *m, node_key_fn fn, void *ctx);
/* The wanted keys not read yet (since the last full_begin, or since they became wanted). */
size_t node_unread(const struct node_map *m, node_key_fn fn, void *ctx);
/* The same walk, with a number the transport may keep with each key (0 until it sets one;
 * Nacos: which listener watches it), so it can rebuild only what a change touched. Here
 * `key` and `tag` point into the map and stay valid, showing the key's tag as it changes
 * ("" while absent), until node_wanted_gen() moves. */
typedef void (*node_slot_fn)(void *ctx, const char *key, size_t klen, const char *tag, int present,
                             uint32_t *slot);
size_t node_wanted_slots(struct node_map *m, node_slot_fn fn, void *ctx);
/* The number kept with key, or NULL when the key is not held. */
uint32_t *node_slot(struct node_map *m, const char *key, size_t klen);
/* Whether key is to be read and watched now. */
int node_is_wanted(const struct node_map *m, const char *key, size_t klen);
/* Moves whenever the wanted set changes: a watcher re-registers when it differs from the
 * value it registered with. */
uint64_t node_wanted_gen(const struct node_map *m);

/* The mirror's deadline and flush (kv_mirror_deadline, kv_mirror_flush). */
int64_t node_deadline(const struct node_map *m);
int node_flush(struct node_map *m, int64_t now_ms, int force);

void node_stats(struct node_map *m, struct node_stats *out);

#endif
