/*
 * The store: the latest accepted version of each group. Pollers offer versions; the
 * accept rule (md5 differs AND lastModifyTime newer; or the held version is provisional,
 * i.e. from the snapshot) decides. Readers take references and never hold the store's
 * lock while they work. A generation counter and a condition variable let the dispatcher
 * sleep until something changes ("latest wins": it always reads the newest).
 */
#ifndef GW_STORE_H
#define GW_STORE_H

#include <gwsync/subscriber.h>
#include <stdint.h>

#include "model/groupdata.h"

enum store_verdict {
	STORE_ACCEPTED = 0, /* it is now the group's version */
	STORE_SAME,         /* we already hold this md5: nothing to do */
	STORE_OLDER,        /* md5 differs but lastModifyTime is not newer: a lagging admin */
};

/* The long-polling accept rule as a pure function. cur may be NULL (nothing held yet). */
enum store_verdict store_judge(const struct group_data *cur, const char *md5,
                               int64_t last_modify_time);

/* An accept policy: the verdict on `offered` given what is held (NULL if nothing). Called
 * under the store's lock, so it must be quick and must not call the store. */
typedef enum store_verdict (*store_accept_fn)(const struct group_data *held,
                                              const struct group_data *offered);

struct store;

struct store *store_new(void);
void store_free(struct store *st);

/* Offer a version under the long-polling rule (store_judge); on STORE_ACCEPTED the store
 * takes its own reference. */
enum store_verdict store_offer(struct store *st, struct group_data *gd);

/* Offer a version under the source's own accept policy (store/ingest.h hands it on). */
enum store_verdict store_offer_if(struct store *st, struct group_data *gd, store_accept_fn accept);

/* The same; on STORE_ACCEPTED *replaced is the version it replaced (a reference the caller
 * drops, NULL if nothing was held), so what changed can be told without a race. */
enum store_verdict store_offer_swap(struct store *st, struct group_data *gd, store_accept_fn accept,
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
