/*
 * The release version of every file the Polaris source has read: what its watch tells
 * Polaris it holds. Kept here rather than as node/'s tag because node/ forgets the tag of
 * a key whose value is blank or "null" (an absent key there), while on Polaris such a file
 * is a release like any other (ShenYu's delete re-publishes empty content): watched with
 * version 0, it would be named again at once, for ever. A file read as not found has
 * version 0, so its first release is news.
 */
#ifndef GW_POLARIS_VERSIONS_H
#define GW_POLARIS_VERSIONS_H

#include <stddef.h>
#include <stdint.h>

#include "core/htab.h"

struct polaris_versions {
	struct htab t;
	uint64_t epoch; /* entries not touched since polaris_versions_mark() may be pruned */
};

/* The version held for file key[0..len), 0 if none. */
uint64_t polaris_versions_get(const struct polaris_versions *v, const char *key, size_t len);
/* Set it (0 forgets it). 0, or -1 on out of memory. */
int polaris_versions_set(struct polaris_versions *v, const char *key, size_t len, uint64_t version);
/* A full read begins: entries not set again before polaris_versions_prune() go then. */
void polaris_versions_mark(struct polaris_versions *v);
void polaris_versions_prune(struct polaris_versions *v);
size_t polaris_versions_count(const struct polaris_versions *v);
void polaris_versions_free(struct polaris_versions *v);

#endif
