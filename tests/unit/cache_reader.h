/*
 * A reference incremental reader of the LMDB cache: the reader algorithm of
 * docs/lmdb-cache.md ("Reading only what changed") written once, plainly, so the tests can
 * drive it through random changes and compare what it built with a full read after every
 * step. It is what a gateway does (the nginx router in Lua, a Python sidecar), in C.
 */
#ifndef GW_TEST_CACHE_READER_H
#define GW_TEST_CACHE_READER_H

#include <lmdb.h>
#include <stddef.h>

struct cr_item {
	char *key, *val;
	size_t klen, vlen;
};

/* One group as the reader holds it: items in LMDB's key order. */
struct cr_group {
	const char *name;
	struct cr_item *v;
	size_t n, cap;
};

enum cr_how {
	CR_NOTHING,     /* the generation had not moved */
	CR_INCREMENTAL, /* only the keys the log named (and groups it said to replace) */
	CR_FULL         /* every group read whole */
};

struct cache_reader {
	MDB_env *env; /* shared, not owned */
	struct cr_group *groups;
	size_t n_groups;
	int loaded;
	unsigned long long gen; /* the generation the view is at */
	/* what the last poll did */
	enum cr_how how;
	char why_full[160];   /* why it read whole: "first load", "gap at 12", ... */
	size_t items_read;    /* values it read (mdb_get hits and cursor steps) */
	size_t groups_reread; /* groups it read whole */
};

/* A reader of the named groups over an open environment (MDB_RDONLY or not). */
void cache_reader_init(struct cache_reader *r, MDB_env *env, const char *const *groups,
                       size_t n_groups);
/* One poll: brings the view to the environment's current generation. 0, or an LMDB error
 * (the view is then unchanged). */
int cache_reader_poll(struct cache_reader *r);
/* 1 if both hold the same groups with the same items; else 0 and what differs in `diff`. */
int cache_reader_same(const struct cache_reader *a, const struct cache_reader *b, char *diff,
                      size_t cap);
void cache_reader_free(struct cache_reader *r);

#endif
