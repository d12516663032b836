/*
 * Ingest: the one way group versions enter the agent, and all a source may know of what
 * is held. main makes one over the store and hands it to the source; a source includes
 * this header, never store.h, so no source reads or changes the store behind the store's
 * rules. A source brings its own accept policy (long-polling: md5 differs and
 * lastModifyTime is newer; an event source: its own stamps), applied under the store's
 * lock so two servers offering at once cannot both win.
 */
#ifndef GW_INGEST_H
#define GW_INGEST_H

#include <gwsync/subscriber.h>
#include <stddef.h>
#include <stdint.h>

#include "core/log.h"
#include "model/groupdata.h"

struct ingest;
struct store;

/* What an accept policy says of an offered version. */
enum ingest_verdict {
	INGEST_ACCEPTED = 0, /* it is now the group's version */
	INGEST_SAME,         /* the held version has this md5: nothing to do */
	INGEST_OLDER,        /* md5 differs but it is not newer than held: a lagging admin */
};

/* An accept policy: the verdict on `offered` given what is held (NULL if nothing). Called
 * under the store's lock, so it must be quick and must not call the store or the ingest. */
typedef enum ingest_verdict (*ingest_accept_fn)(const struct group_data *held,
                                                const struct group_data *offered);

/* What a source is told of one held group. */
struct ingest_stamp {
	char md5[65];             /* "" if nothing is held */
	int64_t last_modify_time; /* 0 if nothing is held */
	int provisional;          /* held from the snapshot: any admin version replaces it */
};

/* The long-polling policy: a version is taken if nothing is held, the held one is
 * provisional, or its md5 differs and its lastModifyTime is newer (a lagging admin never
 * rolls the gateway back). */
enum ingest_verdict ingest_accept_polled(const struct group_data *held,
                                         const struct group_data *offered);

/* The event sources' policy (WebSocket, ZooKeeper, etcd): their versions are built from the
 * held one by the source's single builder and stamped newer (model/patch.h), so anything
 * with another md5 is newer; a snapshot version always yields. */
enum ingest_verdict ingest_accept_patched(const struct group_data *held,
                                          const struct group_data *offered);

/* st and log must outlive the ingest. NULL on out of memory. */
struct ingest *ingest_new(struct store *st, struct gw_log *log);
void ingest_free(struct ingest *in);

struct history;
/* Record every accepted version in `h` (store/history.h), which must outlive the ingest. Set
 * before the source starts offering. */
void ingest_set_history(struct ingest *in, struct history *h);

/*
 * Offer versions[groups[i]] (NULL slots skipped; each reference is consumed) in the order
 * of groups[], under `accept`, logging each verdict with the shapes the tests and
 * operators rely on:
 *   info  store: accepted GROUP version MD5 (lastModifyTime N, K items) from URL
 *   debug store: ignored GROUP version MD5 from URL: older than held (N <= M)
 *   debug store: ignored GROUP version MD5 from URL: already held
 * Returns how many were accepted; *older is set to 1 if any was refused as older than
 * held (a lagging admin).
 */
size_t ingest_offer(struct ingest *in, const char *server, ingest_accept_fn accept,
                    const enum gw_group *groups, size_t n,
                    struct group_data *versions[GW_GROUP_COUNT], int *older);

/* The stamps of every group held now. */
void ingest_stamps(struct ingest *in, struct ingest_stamp out[GW_GROUP_COUNT]);

/* The version held now (a new reference, or NULL): a source may carry its unchanged items
 * over into the next version instead of parsing them again. */
struct group_data *ingest_held(struct ingest *in, enum gw_group group);

#endif
