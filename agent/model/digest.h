/*
 * The version identity of event sources (WebSocket, ZooKeeper, etcd), which the admin does
 * not give: an event has no md5. It must be equal for equal item sets whatever order or
 * path they came by (a full list, a patch, a rebuild of a path store, yesterday's run whose
 * snapshot is loaded), and a one-item change must update it for the cost of one item.
 *
 * So each item has a digest of its own raw JSON (128 bits of SHA-256: with the CPU's SHA
 * instructions it is the fastest digest OpenSSL has here), and a version's identity is
 * their sum modulo 2^128 (order-independent; an item leaving is a subtraction), combined
 * with the item count and hashed once more into the 32 hex digits that fill the md5 tag.
 * Only the sum is kept (16 bytes per version): an item's digest is computed from its JSON
 * when it comes and again when it goes (0.7 us for a 500-byte item), so nothing is added
 * per item. An item's JSON decides its key (model/keys.h), and keys are unique in a
 * version, so the sum is over distinct items.
 *
 * The sum is for change detection among versions of one group, not a defence against a
 * party choosing items to collide it: whoever writes the admin's items decides the
 * configuration anyway.
 */
#ifndef GW_MODEL_DIGEST_H
#define GW_MODEL_DIGEST_H

#include <stddef.h>
#include <stdint.h>

/* 128 bits: an item's digest, or a version's sum of them (the only one kept: an item's
 * own is computed from its JSON when it comes or goes). */
struct item_digest {
	uint64_t lo, hi;
};

/* A hashing context reused across the items of one version (creating one per item costs
 * more than hashing the item). */
struct digester;

/* NULL on out of memory. */
struct digester *digester_new(void);
void digester_free(struct digester *d);

/* The digest of one item's raw JSON. 0, or -1 if the library failed. */
int digest_item(struct digester *d, const char *json, size_t len, struct item_digest *out);

/* sum += x and sum -= x, modulo 2^128. */
void digest_add(struct item_digest *sum, const struct item_digest *x);
void digest_sub(struct item_digest *sum, const struct item_digest *x);

/* The identity of a set of n items whose digests add up to `sum`: 32 lower-case hex digits
 * and a NUL. 0, or -1 if the library failed. */
int digest_identity(struct digester *d, const struct item_digest *sum, size_t n, char out[33]);

#endif
