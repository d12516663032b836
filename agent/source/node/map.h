/*
 * The node map's insides (node.h), shared by its files and by nothing else: node.c (what
 * values mean, membership, life), table.c (the keys held), full.c (full reads) and walk.c
 * (what to read and watch, stats). Not a public header.
 */
#ifndef GW_NODE_MAP_H
#define GW_NODE_MAP_H

#include <stdatomic.h>

#include "core/htab.h"
#include "source/kv/layout.h"
#include "source/node/node.h"

/* The mirror's root: paths are "/n/{group dir}/{key without the prefix}". */
#define NODE_MIRROR_ROOT "/n"

enum kind { K_UNKNOWN = 0, K_ITEM, K_LIST, K_DOC };
enum list { L_PLUGIN = 0, L_SELECTOR, L_RULE, L_AUTH, L_META, L_PROXY, L_DISC };

struct entry {
	struct htab_link link; /* first */
	char *key;
	size_t klen;
	char *value; /* NULL: absent (or not read yet) */
	size_t vlen;
	char tag[NODE_TAG_MAX];
	uint32_t refs;
	uint32_t seen; /* the epoch it was last read in; 0: never */
	int64_t rev;
	uint32_t slot; /* the transport's (node_wanted_slots) */
	uint8_t kind, list, live, root;
	int group;  /* items and documents: their group; lists: -1 */
	char *path; /* items: the mirror path */
	size_t plen;
	char *p, *s; /* lists: the plugin name and selector id they are under */
	char **ids;  /* lists: members of the last good value, sorted, unique; documents:
	              * the mirror paths of their items, sorted */
	size_t n_ids;
};

struct node_map {
	struct node_args a;
	char *prefix;
	size_t plen;
	char *docs[GW_GROUP_COUNT];
	int want[GW_GROUP_COUNT];
	struct kv_layout layout;
	struct kv_mirror *mirror;
	struct htab keys;
	uint32_t epoch;
	int in_full;
	int delivered; /* a full read has reached the mirror */
	int64_t now;   /* of the call in progress */
	int64_t seq;   /* revisions handed to the mirror */
	int oom;
	uint64_t gen;
	atomic_size_t n_keys, n_wanted, n_aside;
	size_t n_unread; /* wanted and not read in this epoch: node_unread() walks only if any */
	atomic_uint_fast64_t n_bad;
};

/* table.c: the keys held */
struct entry *nmap_find(const struct node_map *m, const char *key, size_t len);
/* The entry of key, added (unknown, unreferenced, unread) if new; NULL on out of memory
 * (m->oom set). */
struct entry *nmap_add(struct node_map *m, const char *key, size_t len);
/* Take e out of the table and free it. */
void nmap_drop(struct node_map *m, struct entry *e);
void nmap_entry_free(struct entry *e);
void nmap_free_ids(struct entry *e);
/* The counters /status shows (and the unread count): what e adds to them; call with -1
 * before changing e's refs, value or seen, with +1 after. */
void nmap_acct(struct node_map *m, const struct entry *e, int sign);

/* node.c */
/* A key's new value (NULL: absent) and tag, applied as node_put() says. */
int nmap_set(struct node_map *m, const char *key, size_t klen, const char *value, size_t vlen,
             const char *tag);
/* A wanted entry: an item with a value goes to the mirror, a list references its members. */
void nmap_activate(struct node_map *m, struct entry *e);
/* A document's new value: feed 1 events, 2 a full read's puts, 0 the mirror not told. */
void nmap_doc_changed(struct node_map *m, struct entry *e, int feed);

#endif
