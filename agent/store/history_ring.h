/*
 * The inside of the change history (history.h), private to the files that make it up:
 * history.c (the rings, their lock and the recording of what ingest and the dispatcher
 * report), history_count.c (counting what changed, off the recording threads) and
 * history_file.c (the file). Nothing else includes it: everyone else has history.h.
 */
#ifndef GW_HISTORY_RING_H
#define GW_HISTORY_RING_H

#include <pthread.h>

#include "store/history.h"

#define SUB_NAME_MAX 128

struct slot {
	struct history_entry *e;      /* allocated once, reused when the ring wraps */
	struct group_data *from, *to; /* held until counted (NULL once taken to count) */
	uint64_t seq;                 /* to find the entry again after counting */
	int waiting;                  /* accepted here and not counted yet (in ring.pending) */
};

struct ring {
	struct slot *slots; /* `cap` of them: grown by doubling up to `size` until the ring
	                     * first wraps (an idle agent holds one entry per group, not 50
	                     * slots: issue 30 item 9) */
	size_t cap;
	size_t head;    /* where the next entry goes */
	size_t n;       /* entries held */
	size_t pending; /* entries not counted yet */
};

/* An outcome for a version not recorded yet (the pending outcome rule, history.c). */
struct early {
	char md5[65];
	struct history_outcome o;
};

struct history {
	pthread_mutex_t mu;  /* guards everything below but size, n_subs, subs and log */
	struct early *early; /* [group * n_subs + sub] */
	size_t size;
	size_t n_subs;
	char (*subs)[SUB_NAME_MAX];
	unsigned *takes; /* per subscriber: the groups it takes (bit 1u << group) */
	struct gw_log *log;
	struct ring rings[GW_GROUP_COUNT];
	uint64_t seq;
	int dirty;
};

/* The i-th newest slot of a ring (0: the newest); i < r->n. Under h->mu. */
struct slot *history_nth(const struct history *h, const struct ring *r, size_t i);

/* A new entry slot at the ring's head of group g, the oldest given up if the ring is full (its
 * versions are handed back in *drop to be released outside the lock). NULL on out of memory.
 * Under h->mu. */
struct slot *history_push(struct history *h, enum gw_group g, struct group_data *drop[2]);

/* Copy `src` into dst (cap bytes), cut at a character boundary and made valid UTF-8: what a
 * JSON document and a terminal can show. A cut text ends in "...". */
void history_copy_text(char *dst, size_t cap, const char *src);

#endif
