/*
 * The change history's rings and their lock (see history.h): what ingest and the dispatcher
 * report is recorded here, a few fixed-size fields copied under one mutex, which is held to
 * copy fields in and out and never while counting a change (history_count.c: the merge runs
 * outside it, on versions the pending entry holds references on) nor while the file is read
 * or written (history_file.c).
 *
 * The pending outcome rule. The store takes a version before ingest records it (ingest
 * reads the clock, swaps, then calls history_accepted_at), so the dispatcher may apply the
 * version, and report its outcome, in between: an outcome for a version the ring does not
 * hold yet is kept per group and subscriber (`early`, one each) and folded into the entry
 * when that version arrives; an outcome for another version replaces it. Applying a
 * version marks the older versions the subscriber never received as superseded, whether
 * the outcome came before its entry or after.
 */
#include "store/history.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/utf8.h"
#include "model/groups.h"
#include "store/history_ring.h"
#include "store/store.h"

static const char *const state_names[] = {"pending", "applied", "refused", "superseded"};

const char *history_state_name(int state)
{
	return state >= 0 && state <= HISTORY_SUPERSEDED ? state_names[state] : "?";
}

void history_copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);
	if (n < cap) {
		memcpy(dst, src, n + 1);
	} else {
		n = cap - 4;
		while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
			n--; /* not in the middle of a character */
		memcpy(dst, src, n);
		memcpy(dst + n, "...", 4);
	}
	utf8_scrub(dst);
}

struct history *history_new(size_t size, const char *const *subscribers, size_t n_subscribers,
                            struct gw_log *log)
{
	if (size < 1)
		size = 1;
	if (size > HISTORY_MAX)
		size = HISTORY_MAX;
	if (n_subscribers > HISTORY_SUBSCRIBERS)
		n_subscribers = HISTORY_SUBSCRIBERS;
	struct history *h = calloc(1, sizeof *h);
	if (!h)
		return NULL;
	h->subs = calloc(n_subscribers ? n_subscribers : 1, sizeof *h->subs);
	h->early = calloc(GW_GROUP_COUNT * (n_subscribers ? n_subscribers : 1), sizeof *h->early);
	h->takes = malloc((n_subscribers ? n_subscribers : 1) * sizeof *h->takes);
	if (!h->subs || !h->early || !h->takes) {
		free(h->subs);
		free(h->early);
		free(h->takes);
		free(h);
		return NULL;
	}
	for (size_t i = 0; i < n_subscribers; i++)
		history_copy_text(h->subs[i], SUB_NAME_MAX, subscribers[i] ? subscribers[i] : "?");
	h->n_subs = n_subscribers;
	for (size_t i = 0; i < n_subscribers; i++)
		h->takes[i] = ~0u;
	h->size = size;
	h->log = log;
	pthread_mutex_init(&h->mu, NULL);
	return h;
}

void history_set_takes(struct history *h, size_t sub, unsigned groups)
{
	if (h && sub < h->n_subs)
		h->takes[sub] = groups;
}

void history_free(struct history *h)
{
	if (!h)
		return;
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		struct ring *r = &h->rings[g];
		for (size_t i = 0; r->slots && i < r->cap; i++) {
			group_data_unref(r->slots[i].from);
			group_data_unref(r->slots[i].to);
			free(r->slots[i].e);
		}
		free(r->slots);
	}
	pthread_mutex_destroy(&h->mu);
	free(h->early);
	free(h->subs);
	free(h->takes);
	free(h);
}

size_t history_entry_bytes(const struct history *h)
{
	return sizeof(struct history_entry) + h->n_subs * sizeof(struct history_outcome);
}

struct slot *history_nth(const struct history *h, const struct ring *r, size_t i)
{
	return &r->slots[(r->head + h->size - 1 - i) % h->size];
}

struct slot *history_push(struct history *h, enum gw_group g, struct group_data *drop[2])
{
	struct ring *r = &h->rings[g];
	if (r->head == r->cap && r->cap < h->size) { /* not wrapped yet: head == n */
		size_t cap = r->cap ? 2 * r->cap : 2;
		if (cap > h->size)
			cap = h->size;
		struct slot *v = realloc(r->slots, cap * sizeof *v);
		if (!v)
			return NULL;
		memset(v + r->cap, 0, (cap - r->cap) * sizeof *v);
		r->slots = v;
		r->cap = cap;
	}
	struct slot *s = &r->slots[r->head];
	if (!s->e && !(s->e = malloc(history_entry_bytes(h))))
		return NULL;
	if (r->n == h->size) { /* the oldest goes */
		if (s->waiting && r->pending)
			r->pending--;
		s->waiting = 0;
		drop[0] = s->from;
		drop[1] = s->to;
		s->from = s->to = NULL;
	} else {
		r->n++;
	}
	r->head = (r->head + 1) % h->size;
	memset(s->e, 0, history_entry_bytes(h));
	s->e->group = g;
	s->seq = ++h->seq;
	return s;
}

/* A burst outran the counting: the oldest version of the group still waiting gives up its
 * two versions (into drop[], released outside the lock) and stays uncounted. Counting it
 * here instead would delay the accepting thread, and so the next version, by a merge. */
static void give_up_oldest(struct history *h, struct ring *r, struct group_data *drop[2])
{
	for (size_t i = r->n; i-- > 0;) {
		struct slot *s = history_nth(h, r, i);
		if (s->waiting && s->to) {
			drop[0] = s->from;
			drop[1] = s->to;
			s->from = s->to = NULL;
			s->waiting = 0;
			r->pending--;
			return;
		}
	}
}

/* Fold one apply()'s result into what a subscriber did with a version. */
static void fold(struct history_outcome *o, int applied, const char *why, int64_t wall_ms)
{
	if (applied) {
		if (o->state != HISTORY_APPLIED) {
			o->state = HISTORY_APPLIED;
			o->at_ms = wall_ms;
		}
		return;
	}
	o->refusals++;
	o->at_ms = wall_ms;
	history_copy_text(o->reason, sizeof o->reason, why ? why : "");
	if (o->state != HISTORY_APPLIED)
		o->state = HISTORY_REFUSED;
}

/* The versions older than the i-th newest that subscriber `sub` never received: a newer one
 * replaced them before delivery. */
static void supersede_older(struct history *h, const struct ring *r, size_t i, size_t sub)
{
	for (size_t k = i + 1; k < r->n; k++) {
		struct history_outcome *old = &history_nth(h, r, k)->e->subs[sub];
		if (old->state == HISTORY_WAITING)
			old->state = HISTORY_SUPERSEDED;
	}
}

void history_accepted(struct history *h, struct group_data *from, struct group_data *to,
                      const char *source)
{
	history_accepted_at(h, from, to, source, gw_wall_ms());
}

void history_accepted_at(struct history *h, struct group_data *from, struct group_data *to,
                         const char *source, int64_t now)
{
	if (!h || !to || (unsigned)to->group >= GW_GROUP_COUNT)
		return;
	enum gw_group g = to->group;
	struct group_data *drop[4] = {NULL, NULL, NULL, NULL};
	pthread_mutex_lock(&h->mu);
	struct ring *r = &h->rings[g];
	if (r->n && strcmp(history_nth(h, r, 0)->e->md5, to->md5) == 0) {
		pthread_mutex_unlock(&h->mu); /* the same version again: nothing changed */
		return;
	}
	struct slot *s = history_push(h, g, drop);
	if (s) {
		struct history_entry *e = s->e;
		snprintf(e->md5, sizeof e->md5, "%s", to->md5);
		e->last_modify_time = to->last_modify_time;
		e->accepted_ms = now;
		history_copy_text(e->source, sizeof e->source, source ? source : to->server);
		s->from = group_data_ref(from);
		s->to = group_data_ref(to);
		for (size_t i = 0; i < h->n_subs; i++) {
			struct early *early = &h->early[g * h->n_subs + i];
			if (early->md5[0] && strcmp(early->md5, e->md5) == 0) {
				e->subs[i] = early->o;
				if (e->subs[i].state == HISTORY_APPLIED)
					supersede_older(h, r, 0, i);
			}
			early->md5[0] = '\0';
		}
		s->waiting = 1;
		r->pending++;
		if (r->pending > HISTORY_PENDING)
			give_up_oldest(h, r, drop + 2);
		h->dirty = 1;
	}
	pthread_mutex_unlock(&h->mu);
	for (size_t i = 0; i < 4; i++)
		group_data_unref(drop[i]);
}

void history_held(struct history *h, struct store *st, const enum gw_group *groups, size_t n)
{
	for (size_t i = 0; h && i < n; i++) {
		struct group_data *gd = store_get(st, groups[i]);
		if (gd)
			history_accepted(h, NULL, gd, gd->provisional ? "snapshot" : gd->server);
		group_data_unref(gd);
	}
}

void history_outcome(struct history *h, size_t sub, enum gw_group group, const char *md5,
                     int applied, const char *why, int64_t wall_ms)
{
	if (!h || sub >= h->n_subs || (unsigned)group >= GW_GROUP_COUNT || !md5)
		return;
	pthread_mutex_lock(&h->mu);
	struct ring *r = &h->rings[group];
	size_t i = 0;
	while (i < r->n && strcmp(history_nth(h, r, i)->e->md5, md5) != 0)
		i++;
	if (i < r->n) {
		fold(&history_nth(h, r, i)->e->subs[sub], applied, why, wall_ms);
		if (applied)
			supersede_older(h, r, i, sub);
		h->dirty = 1;
	} else { /* ingest is about to record it */
		struct early *early = &h->early[group * h->n_subs + sub];
		if (strcmp(early->md5, md5) != 0) {
			memset(early, 0, sizeof *early);
			snprintf(early->md5, sizeof early->md5, "%s", md5);
		}
		fold(&early->o, applied, why, wall_ms);
	}
	pthread_mutex_unlock(&h->mu);
}

void *history_copy(struct history *h, const enum gw_group *order, size_t n_order, unsigned groups,
                   int64_t since_ms, size_t *per, size_t *n)
{
	size_t eb = history_entry_bytes(h), cap = 0;
	*n = 0;
	pthread_mutex_lock(&h->mu);
	for (size_t k = 0; k < n_order; k++)
		if ((unsigned)order[k] < GW_GROUP_COUNT && (groups & (1u << order[k])))
			cap += h->rings[order[k]].n;
	char *copy = malloc(cap ? cap * eb : 1);
	for (size_t k = 0; copy && k < n_order; k++) {
		per[k] = 0;
		if ((unsigned)order[k] >= GW_GROUP_COUNT || !(groups & (1u << order[k])))
			continue;
		const struct ring *r = &h->rings[order[k]];
		for (size_t i = 0; i < r->n; i++) {
			const struct history_entry *e = history_nth(h, r, i)->e;
			if (e->accepted_ms < since_ms)
				break; /* newest first: the rest are older still */
			memcpy(copy + *n * eb, e, eb);
			(*n)++;
			per[k]++;
		}
	}
	pthread_mutex_unlock(&h->mu);
	return copy;
}

int history_dirty(struct history *h)
{
	pthread_mutex_lock(&h->mu);
	int d = h->dirty;
	pthread_mutex_unlock(&h->mu);
	return d;
}
