/*
 * When to run the reload command after a burst of changes: once the changes have been
 * quiet for `quiet_ms`, but no later than `max_ms` after the first change of the burst,
 * so a burst triggers one reload and a steady stream cannot postpone it forever (the
 * min/max "wait" of consul-template). Pure arithmetic on a caller-supplied clock, so it
 * is tested without sleeping.
 */
#ifndef GWFILE_DEBOUNCE_H
#define GWFILE_DEBOUNCE_H

#include <stdint.h>

struct debounce {
	int64_t quiet_ms, max_ms;
	int pending;
	int64_t first_ms, last_ms; /* the burst's first and latest change */
};

void debounce_init(struct debounce *d, int64_t quiet_ms, int64_t max_ms);

/* A change happened at `now`. */
void debounce_note(struct debounce *d, int64_t now);

/* When the reload is due, or -1 if nothing is pending. */
int64_t debounce_deadline(const struct debounce *d);

/* 1 if a reload is pending and due at `now`. */
int debounce_due(const struct debounce *d, int64_t now);

/* The reload ran (or was abandoned): nothing pending. */
void debounce_clear(struct debounce *d);

#endif
