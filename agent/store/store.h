/*
 * The store: the latest accepted version of each group. The ingest (ingest.h) offers the
 * sources' versions, each under its source's accept policy, which the store applies under
 * its lock; the snapshot's versions are put at start. Readers take references and never hold the
 * store's lock while they work. A generation counter and a condition variable let the dispatcher
 * sleep until something changes ("latest wins": it always reads the newest).
 */
#ifndef GW_STORE_H
#define GW_STORE_H

#include <gwsync/subscriber.h>
#include <stdint.h>

#include "model/groupdata.h"
#include "store/ingest.h"

struct store;

struct store *store_new(void);
void store_free(struct store *st);

/* Swap in a version if a source's accept policy (store/ingest.h) takes it, applied under the
 * store's lock; on INGEST_ACCEPTED the store takes its own reference and *replaced (when
 * not NULL) is the version it replaced (a reference the caller drops, NULL if nothing was
 * held), so what changed can be told without a race. */
enum ingest_verdict store_swap(struct store *st, struct group_data *gd, ingest_accept_fn accept,
                               struct group_data **replaced);

/* Install a version whatever the rule says (snapshot load at start). Takes a reference. */
void store_put(struct store *st, struct group_data *gd);

/* The group's current version with a new reference, or NULL. */
struct group_data *store_get(struct store *st, enum gw_group group);

/* md5 and lastModifyTime of the held version, for the listener ("" and 0 if none). */
void store_stamp(struct store *st, enum gw_group group, char md5[65], int64_t *last_modify_time);

/* Current generation: bumped by every accepted/put version and by store_kick(). */
uint64_t store_generation(struct store *st);

/* Sleep until the generation differs from `seen` or `timeout_ms` passes (-1: forever).
 * Returns the generation. */
uint64_t store_wait(struct store *st, uint64_t seen, int64_t timeout_ms);

/* Wake every store_wait() (shutdown, pause changes). */
void store_kick(struct store *st);

#endif
