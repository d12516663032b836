/*
 * The release version of every file the Polaris source has read: what its watch tells
 * Polaris it holds. Kept here rather than as node/'s tag because node/ forgets the tag of
 * a key whose value is blank or "null" (an absent key there), while on Polaris such a file
 * is a release like any other (ShenYu's delete re-publishes empty content): watched with
 * version 0, it would be named again at once, for ever. A file read as not found has
 * version 0, so its first release is news. Each entry also remembers where its version
 * sits in the watch body (sync.c), so that one release costs a patch of that body, not a
 * new body of every file.
 */
#ifndef GW_POLARIS_VERSIONS_H
#define GW_POLARIS_VERSIONS_H

#include <stddef.h>
#include <stdint.h>

#include "core/htab.h"

struct polaris_versions {
	struct htab t;
	uint64_t epoch; /* entries not set since polaris_versions_mark() go at the prune */
};

/* The version held for file key[0..len), 0 if none. */
uint64_t polaris_versions_get(const struct polaris_versions *v, const char *key, size_t len);
/* Set it (0: none). 0, or -1 on out of memory. */
int polaris_versions_set(struct polaris_versions *v, const char *key, size_t len, uint64_t version);

/* Where the file's version field sits in the watch bodies built as generation gen (> 0):
 * which body (slot) and where in it. 0, or -1 on out of memory. */
int polaris_versions_place(struct polaris_versions *v, const char *key, size_t len, uint64_t gen,
                           uint32_t slot, size_t at);
/* That place if it was given for body generation gen (*slot set), else (size_t)-1. */
size_t polaris_versions_at(const struct polaris_versions *v, const char *key, size_t len,
                           uint64_t gen, uint32_t *slot);

/* A full read begins: entries not set again before polaris_versions_prune() go then. */
void polaris_versions_mark(struct polaris_versions *v);
void polaris_versions_prune(struct polaris_versions *v);
size_t polaris_versions_count(const struct polaris_versions *v);
void polaris_versions_free(struct polaris_versions *v);

#endif
