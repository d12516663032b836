/*
 * The change history (see history.h). One mutex guards the rings; it is held to copy fixed-size
 * fields in and out, never while counting a change (the merge runs outside it, on versions
 * the pending entry holds references on) and never while reading or writing the file.
 */
#include "store/history.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/atomic_file.h"
#include "core/clock.h"
#include "core/readfile.h"
#include "core/utf8.h"
#include "model/diff.h"
#include "model/groups.h"
#include "model/keys.h"
#include "store/store.h"

#define SUB_NAME_MAX 128

struct slot {
	struct history_entry *e;      /* allocated once, reused when the ring wraps */
	struct group_data *from, *to; /* held until counted (NULL once taken to count) */
	uint64_t seq;                 /* to find the entry again after counting */
	int waiting;                  /* accepted here and not counted yet (in ring.pending) */
};

struct ring {
	struct slot *slots; /* `size` of them, allocated with the group's first entry */
	size_t head;        /* where the next entry goes */
	size_t n;           /* entries held */
	size_t pending;     /* entries not counted yet */
};

/* An outcome for a version not recorded yet: the dispatcher may deliver a version in the
 * moment between the store taking it and ingest recording it. Kept per group and subscriber
 * until that version's entry arrives. */
struct early {
	char md5[65];
	struct history_outcome o;
};

struct history {
	pthread_mutex_t mu;
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

static const char *const state_names[] = {"pending", "applied", "refused", "superseded"};

const char *history_state_name(int state)
{
	return state >= 0 && state <= HISTORY_SUPERSEDED ? state_names[state] : "?";
}

/* Copy `src` into dst (cap bytes), cut at a character boundary and made valid UTF-8: what a
 * JSON document and a terminal can show. A cut text ends in "...". */
static void copy_text(char *dst, size_t cap, const char *src)
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
		copy_text(h->subs[i], SUB_NAME_MAX, subscribers[i] ? subscribers[i] : "?");
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
		for (size_t i = 0; r->slots && i < h->size; i++) {
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

/* The i-th newest slot of a ring (0: the newest); i < r->n. */
static struct slot *nth(const struct history *h, const struct ring *r, size_t i)
{
	return &r->slots[(r->head + h->size - 1 - i) % h->size];
}

/* A new entry slot at the ring's head, the oldest given up if the ring is full (its versions
 * are handed back in *drop to be released outside the lock). NULL on out of memory. */
static struct slot *push(struct history *h, enum gw_group g, struct group_data *drop[2])
{
	struct ring *r = &h->rings[g];
	if (!r->slots && !(r->slots = calloc(h->size, sizeof *r->slots)))
		return NULL;
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
		struct slot *s = nth(h, r, i);
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
	copy_text(o->reason, sizeof o->reason, why ? why : "");
	if (o->state != HISTORY_APPLIED)
		o->state = HISTORY_REFUSED;
}

/* The versions older than the i-th newest that subscriber `sub` never received: a newer one
 * replaced them before delivery. */
static void supersede_older(struct history *h, const struct ring *r, size_t i, size_t sub)
{
	for (size_t k = i + 1; k < r->n; k++) {
		struct history_outcome *old = &nth(h, r, k)->e->subs[sub];
		if (old->state == HISTORY_WAITING)
			old->state = HISTORY_SUPERSEDED;
	}
}

void history_accepted(struct history *h, const struct group_data *from, const struct group_data *to,
                      const char *source)
{
	history_accepted_at(h, from, to, source, gw_wall_ms());
}

void history_accepted_at(struct history *h, const struct group_data *from,
                         const struct group_data *to, const char *source, int64_t now)
{
	if (!h || !to || (unsigned)to->group >= GW_GROUP_COUNT)
		return;
	enum gw_group g = to->group;
	struct group_data *drop[4] = {NULL, NULL, NULL, NULL};
	pthread_mutex_lock(&h->mu);
	struct ring *r = &h->rings[g];
	if (r->n && strcmp(nth(h, r, 0)->e->md5, to->md5) == 0) {
		pthread_mutex_unlock(&h->mu); /* the same version again: nothing changed */
		return;
	}
	struct slot *s = push(h, g, drop);
	if (s) {
		struct history_entry *e = s->e;
		snprintf(e->md5, sizeof e->md5, "%s", to->md5);
		e->last_modify_time = to->last_modify_time;
		e->accepted_ms = now;
		copy_text(e->source, sizeof e->source, source ? source : to->source);
		s->from = group_data_ref((struct group_data *)from);
		s->to = group_data_ref((struct group_data *)to);
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
			history_accepted(h, NULL, gd, gd->provisional ? "snapshot" : gd->source);
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
	while (i < r->n && strcmp(nth(h, r, i)->e->md5, md5) != 0)
		i++;
	if (i < r->n) {
		fold(&nth(h, r, i)->e->subs[sub], applied, why, wall_ms);
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

/* ---------------------------------------------------------------- counting */

static void first_keys(struct history_change *c, enum gw_group g,
                       const struct gw_item *const *items, size_t n)
{
	c->count = n;
	c->n_first = n < HISTORY_KEYS ? n : HISTORY_KEYS;
	for (size_t i = 0; i < c->n_first; i++) {
		char shown[HISTORY_KEY_MAX + 64];
		key_display(g, items[i]->key, shown, sizeof shown);
		copy_text(c->first[i], HISTORY_KEY_MAX, shown);
		/* only where the key is an opaque id and the name says what it is; never another
		 * group's (an AI proxy key's name may be the secret its key display shortens) */
		const char *name =
		    g == GW_GROUP_SELECTOR || g == GW_GROUP_RULE || g == GW_GROUP_META_DATA
		        ? items[i]->name
		        : NULL;
		copy_text(c->names[i], HISTORY_NAME_MAX,
		          name && strcmp(name, items[i]->key) != 0 ? name : "");
	}
}

/* Take the oldest entry of a group still waiting to be counted, count it outside the lock,
 * put the counts in. 1 if one was counted, 0 if none waited. */
static int count_one(struct history *h)
{
	struct group_data *from = NULL, *to = NULL;
	uint64_t seq = 0;
	int g = -1;
	pthread_mutex_lock(&h->mu);
	for (int k = 0; k < GW_GROUP_COUNT && !to; k++) {
		struct ring *r = &h->rings[k];
		for (size_t i = r->n; i-- > 0;) { /* oldest first */
			struct slot *s = nth(h, r, i);
			if (!s->e->counted && s->to) {
				from = s->from;
				to = s->to;
				s->from = s->to = NULL; /* ours now: nobody else counts it */
				seq = s->seq;
				g = k;
				break;
			}
		}
	}
	pthread_mutex_unlock(&h->mu);
	if (!to)
		return 0;

	struct history_change ch[3];
	struct diff d;
	struct gw_err err;
	int ok = diff_build(&d, (enum gw_group)g, from, to, &err) == 0;
	if (ok) {
		const struct gw_item *const *upd = NULL;
		const struct gw_item *ubuf[HISTORY_KEYS];
		size_t nu = d.change.n_updated;
		for (size_t i = 0; i < nu && i < HISTORY_KEYS; i++)
			ubuf[i] = d.change.updated[i].new_item;
		upd = ubuf;
		first_keys(&ch[0], (enum gw_group)g, d.change.added, d.change.n_added);
		first_keys(&ch[1], (enum gw_group)g, upd, nu);
		first_keys(&ch[2], (enum gw_group)g, d.change.removed, d.change.n_removed);
		diff_free(&d);
	} else {
		LOG_W(h->log, "history", "%s", err.msg);
	}

	pthread_mutex_lock(&h->mu);
	struct ring *r = &h->rings[g];
	for (size_t i = 0; i < r->n; i++) {
		struct slot *s = nth(h, r, i);
		if (s->seq != seq)
			continue;
		if (ok) {
			s->e->added = ch[0];
			s->e->updated = ch[1];
			s->e->removed = ch[2];
			s->e->counted = 1;
		}
		if (s->waiting && r->pending)
			r->pending--;
		s->waiting = 0;
		h->dirty = 1;
		break;
	}
	pthread_mutex_unlock(&h->mu);
	group_data_unref(from);
	group_data_unref(to);
	return 1;
}

size_t history_settle(struct history *h)
{
	size_t n = 0;
	while (h && count_one(h))
		n++;
	return n;
}

/* ---------------------------------------------------------------- as JSON */

static json_t *change_json(const struct history_entry *e, const struct history_change *c)
{
	if (!e->counted)
		return json_null();
	json_t *first = json_array(), *names = json_array();
	for (size_t i = 0; first && i < c->n_first; i++)
		json_array_append_new(first, json_string(c->first[i]));
	for (size_t i = 0; names && i < c->n_first; i++) /* null: no name */
		json_array_append_new(names,
		                      c->names[i][0] ? json_string(c->names[i]) : json_null());
	return json_pack("{s:I, s:o*, s:o*}", "count", (json_int_t)c->count, "first", first,
	                 "names", names);
}

static json_t *outcome_json(const struct history_outcome *o)
{
	return json_pack("{s:s, s:o, s:I, s:o}", "state", history_state_name(o->state), "at",
	                 o->at_ms > 0 && o->state != HISTORY_SUPERSEDED
	                     ? json_integer((json_int_t)o->at_ms)
	                     : json_null(),
	                 "refusals", (json_int_t)o->refusals, "reason",
	                 o->reason[0] ? json_string(o->reason) : json_null());
}

json_t *history_entry_json(const struct history *h, const struct history_entry *e)
{
	json_t *subs = json_object();
	for (size_t i = 0; subs && i < h->n_subs; i++)
		if (!(h->takes[i] & (1u << e->group)))
			continue; /* not one of its groups: nothing to say */
		else if (json_object_set_new(subs, h->subs[i], outcome_json(&e->subs[i])) != 0) {
			json_decref(subs);
			subs = NULL;
		}
	return json_pack("{s:s, s:I, s:I, s:s, s:o*, s:o*, s:o*, s:o*}", "md5", e->md5,
	                 "lastModifyTime", (json_int_t)e->last_modify_time, "acceptedAt",
	                 (json_int_t)e->accepted_ms, "source", e->source, "added",
	                 change_json(e, &e->added), "updated", change_json(e, &e->updated),
	                 "removed", change_json(e, &e->removed), "subscribers", subs);
}

json_t *history_json(struct history *h, const enum gw_group *order, size_t n_order, unsigned groups,
                     int64_t since_ms, size_t limit)
{
	size_t eb = history_entry_bytes(h), n = 0, cap = 0;
	/* a copy of the entries wanted, newest first per group, taken under the lock */
	pthread_mutex_lock(&h->mu);
	for (size_t k = 0; k < n_order; k++)
		if ((unsigned)order[k] < GW_GROUP_COUNT && (groups & (1u << order[k])))
			cap += h->rings[order[k]].n;
	char *copy = malloc(cap ? cap * eb : 1);
	size_t *per = calloc(n_order ? n_order : 1, sizeof *per);
	if (copy && per)
		for (size_t k = 0; k < n_order; k++) {
			if ((unsigned)order[k] >= GW_GROUP_COUNT || !(groups & (1u << order[k])))
				continue;
			const struct ring *r = &h->rings[order[k]];
			for (size_t i = 0; i < r->n; i++) {
				const struct history_entry *e = nth(h, r, i)->e;
				if (e->accepted_ms < since_ms)
					break; /* newest first: the rest are older still */
				memcpy(copy + n * eb, e, eb);
				n++;
				per[k]++;
			}
		}
	pthread_mutex_unlock(&h->mu);
	if (!copy || !per) {
		free(copy);
		free(per);
		return NULL;
	}
	/* the newest `limit` of them all: the oldest time kept, ties by position */
	int64_t cut = INT64_MIN;
	if (limit && n > limit) {
		int64_t *times = malloc(n * sizeof *times);
		if (!times) {
			free(copy);
			free(per);
			return NULL;
		}
		for (size_t i = 0; i < n; i++)
			times[i] = ((const struct history_entry *)(copy + i * eb))->accepted_ms;
		/* partial selection: the limit-th largest */
		for (size_t i = 0; i < limit; i++) {
			size_t best = i;
			for (size_t j = i + 1; j < n; j++)
				if (times[j] > times[best])
					best = j;
			int64_t t = times[i];
			times[i] = times[best];
			times[best] = t;
		}
		cut = times[limit - 1];
		free(times);
	}
	json_t *subs = json_array();
	for (size_t i = 0; subs && i < h->n_subs; i++)
		json_array_append_new(subs, json_string(h->subs[i]));
	json_t *out = json_object(), *gs = json_object();
	int ok = out && gs && subs;
	size_t at = 0, kept = 0;
	for (size_t k = 0; ok && k < n_order; k++) {
		if ((unsigned)order[k] >= GW_GROUP_COUNT || !(groups & (1u << order[k])))
			continue;
		json_t *list = json_array();
		ok = list && json_object_set_new(gs, gw_group_name(order[k]), list) == 0;
		for (size_t i = 0; ok && i < per[k]; i++, at++) {
			const struct history_entry *e = (const void *)(copy + at * eb);
			if (e->accepted_ms < cut || (limit && kept >= limit))
				continue;
			kept++;
			json_t *ej = history_entry_json(h, e);
			ok = ej && json_array_append_new(list, ej) == 0;
		}
	}
	free(copy);
	free(per);
	if (ok)
		ok = json_object_set_new(out, "size", json_integer((json_int_t)h->size)) == 0 &&
		     json_object_set_new(out, "subscribers", subs) == 0 &&
		     json_object_set_new(out, "groups", gs) == 0;
	else {
		json_decref(subs);
		json_decref(gs);
	}
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* ---------------------------------------------------------------- the file */

int history_dirty(struct history *h)
{
	pthread_mutex_lock(&h->mu);
	int d = h->dirty;
	pthread_mutex_unlock(&h->mu);
	return d;
}

int history_save(struct history *h, const char *dir, struct gw_err *err)
{
	history_settle(h);
	pthread_mutex_lock(&h->mu);
	h->dirty = 0;
	pthread_mutex_unlock(&h->mu);
	enum gw_group all[GW_GROUP_COUNT];
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		all[g] = (enum gw_group)g;
	json_t *doc = history_json(h, all, GW_GROUP_COUNT, ~0u, INT64_MIN, 0);
	if (doc &&
	    (json_object_set_new(doc, "format", json_string(HISTORY_FORMAT)) != 0 ||
	     json_object_set_new(doc, "version", json_integer(HISTORY_FORMAT_VERSION)) != 0)) {
		json_decref(doc);
		doc = NULL;
	}
	struct atomic_file af;
	int rc = -1;
	if (!doc)
		gw_errf(err, "history: out of memory");
	else if (make_dirs(dir, 0750, err) != 0 ||
	         atomic_file_open(&af, dir, HISTORY_FILE, 0600, err) != 0)
		gw_err_prefix(err, "history");
	else if (json_dumpf(doc, af.fp, JSON_COMPACT) != 0 || fputc('\n', af.fp) == EOF) {
		atomic_file_abort(&af);
		gw_errf(err, "history: %s/%s: cannot write", dir, HISTORY_FILE);
	} else if (atomic_file_finish(&af, err) != 0 || atomic_file_commit(&af, err) != 0) {
		atomic_file_abort(&af);
		gw_err_prefix(err, "history: %s/%s", dir, HISTORY_FILE);
	} else
		rc = 0;
	json_decref(doc);
	if (rc != 0) {
		pthread_mutex_lock(&h->mu);
		h->dirty = 1;
		pthread_mutex_unlock(&h->mu);
	}
	return rc;
}

static int text_field(const json_t *o, const char *name, char *out, size_t cap, int nullable,
                      struct gw_err *err)
{
	const json_t *v = json_object_get(o, name);
	if (nullable && (!v || json_is_null(v))) {
		out[0] = '\0';
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) >= cap ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return gw_errf(err, "\"%s\" is not a string of at most %zu bytes", name, cap - 1);
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int int_field(const json_t *o, const char *name, int64_t min, int nullable, int64_t *out,
                     struct gw_err *err)
{
	const json_t *v = json_object_get(o, name);
	if (nullable && (!v || json_is_null(v))) {
		*out = 0;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min)
		return gw_errf(err, "\"%s\" is not a whole number of at least %lld", name,
		               (long long)min);
	*out = json_integer_value(v);
	return 0;
}

static int change_from(const json_t *e, const char *name, struct history_change *c, int *counted,
                       struct gw_err *err)
{
	const json_t *v = json_object_get(e, name);
	if (!v || json_is_null(v)) {
		*counted = 0;
		return 0;
	}
	int64_t count;
	const json_t *first = json_object_get(v, "first");
	if (!json_is_object(v) || int_field(v, "count", 0, 0, &count, err) != 0)
		return gw_err_prefix(err, "\"%s\"", name);
	if (!json_is_array(first) || json_array_size(first) > HISTORY_KEYS ||
	    json_array_size(first) > (size_t)count)
		return gw_errf(err, "\"%s\".first is not a list of at most %d keys", name,
		               HISTORY_KEYS);
	c->count = (size_t)count;
	c->n_first = json_array_size(first);
	for (size_t i = 0; i < c->n_first; i++) {
		const json_t *k = json_array_get(first, i);
		if (!json_is_string(k) || json_string_length(k) >= HISTORY_KEY_MAX ||
		    strlen(json_string_value(k)) != json_string_length(k))
			return gw_errf(err, "\"%s\".first[%zu] is not a key", name, i);
		memcpy(c->first[i], json_string_value(k), json_string_length(k) + 1);
		/* names: optional (a file from before them has none); a bad one is dropped */
		const json_t *n = json_array_get(json_object_get(v, "names"), i);
		c->names[i][0] = '\0';
		if (json_is_string(n) && json_string_length(n) < HISTORY_NAME_MAX &&
		    strlen(json_string_value(n)) == json_string_length(n))
			memcpy(c->names[i], json_string_value(n), json_string_length(n) + 1);
	}
	return 0;
}

static int outcome_from(const struct history *h, const json_t *subs, struct history_entry *e,
                        struct gw_err *err)
{
	if (!subs || json_is_null(subs))
		return 0;
	if (!json_is_object(subs))
		return gw_errf(err, "\"subscribers\" is not an object");
	const char *name;
	const json_t *o;
	json_object_foreach((json_t *)subs, name, o)
	{
		const char *state = json_string_value(json_object_get(o, "state"));
		int st = -1;
		for (int s = 0; state && s <= HISTORY_SUPERSEDED; s++)
			if (strcmp(state, state_names[s]) == 0)
				st = s;
		int64_t at, refusals;
		struct history_outcome out = {0};
		if (!json_is_object(o) || st < 0)
			return gw_errf(err,
			               "subscriber \"%.64s\": \"state\" is not one of pending, "
			               "applied, refused, superseded",
			               name);
		if (int_field(o, "at", 0, 1, &at, err) != 0 ||
		    int_field(o, "refusals", 0, 0, &refusals, err) != 0 ||
		    text_field(o, "reason", out.reason, sizeof out.reason, 1, err) != 0)
			return gw_err_prefix(err, "subscriber \"%.64s\"", name);
		out.state = (uint8_t)st;
		out.at_ms = at;
		out.refusals = refusals > UINT32_MAX ? UINT32_MAX : (uint32_t)refusals;
		for (size_t i = 0; i < h->n_subs; i++)
			if (strcmp(h->subs[i], name) == 0)
				e->subs[i] = out; /* a subscriber configured no longer is dropped */
	}
	return 0;
}

static int entry_from(const struct history *h, const json_t *j, struct history_entry *e,
                      struct gw_err *err)
{
	if (!json_is_object(j))
		return gw_errf(err, "not an object");
	int counted[3] = {1, 1, 1};
	if (text_field(j, "md5", e->md5, sizeof e->md5, 0, err) != 0)
		return -1;
	if (!e->md5[0])
		return gw_errf(err, "\"md5\" is empty");
	if (int_field(j, "lastModifyTime", INT64_MIN, 0, &e->last_modify_time, err) != 0 ||
	    int_field(j, "acceptedAt", 0, 0, &e->accepted_ms, err) != 0 ||
	    text_field(j, "source", e->source, sizeof e->source, 0, err) != 0 ||
	    change_from(j, "added", &e->added, &counted[0], err) != 0 ||
	    change_from(j, "updated", &e->updated, &counted[1], err) != 0 ||
	    change_from(j, "removed", &e->removed, &counted[2], err) != 0 ||
	    outcome_from(h, json_object_get(j, "subscribers"), e, err) != 0)
		return -1;
	if (counted[0] != counted[1] || counted[1] != counted[2])
		return gw_errf(err, "added, updated and removed must all be counted or all null");
	e->counted = counted[0];
	return 0;
}

static int group_index(const char *name)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (strcmp(name, gw_group_name((enum gw_group)g)) == 0)
			return g;
	return -1;
}

/* Check the whole document and put what it holds into the rings (which are empty). */
static int load_doc(struct history *h, const json_t *doc, const enum gw_group *groups, size_t n,
                    size_t *loaded, struct gw_err *err)
{
	const json_t *gs = json_object_get(doc, "groups");
	if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "format")) ||
	    strcmp(json_string_value(json_object_get(doc, "format")), HISTORY_FORMAT) != 0)
		return gw_errf(err, "not a gwsync history (no \"format\": \"%s\")", HISTORY_FORMAT);
	if (!json_is_integer(json_object_get(doc, "version")) ||
	    json_integer_value(json_object_get(doc, "version")) != HISTORY_FORMAT_VERSION)
		return gw_errf(err, "format version is not %d", HISTORY_FORMAT_VERSION);
	if (!json_is_object(gs))
		return gw_errf(err, "\"groups\" is not an object");
	size_t eb = history_entry_bytes(h);
	struct history_entry *e = malloc(eb);
	if (!e)
		return gw_errf(err, "out of memory");
	/* every entry is checked before any is kept: a file is taken whole or not at all */
	for (int pass = 0; pass < 2; pass++) {
		const char *name;
		const json_t *list;
		json_object_foreach((json_t *)gs, name, list)
		{
			int g = group_index(name);
			if (g < 0) {
				free(e);
				return gw_errf(err, "unknown group \"%.64s\"", name);
			}
			if (!json_is_array(list)) {
				free(e);
				return gw_errf(err, "%s: not a list of versions", name);
			}
			int wanted = 0;
			for (size_t k = 0; k < n; k++)
				wanted |= groups[k] == (enum gw_group)g;
			size_t count = json_array_size(list),
			       keep = count < h->size ? count : h->size;
			/* newest first in the file; the ring is filled oldest first */
			for (size_t i = pass ? keep : count; i-- > 0;) {
				memset(e, 0, eb);
				if (entry_from(h, json_array_get(list, i), e, err) != 0) {
					gw_err_prefix(err, "%s[%zu]", name, i);
					free(e);
					return -1;
				}
				if (!pass || !wanted)
					continue;
				struct group_data *drop[2] = {NULL, NULL};
				struct slot *s = push(h, (enum gw_group)g, drop);
				if (!s) {
					free(e);
					return gw_errf(err, "out of memory");
				}
				e->group = (enum gw_group)g;
				memcpy(s->e, e, eb);
				(*loaded)++;
			}
		}
	}
	free(e);
	return 0;
}

int history_load(struct history *h, const char *dir, const enum gw_group *groups, size_t n,
                 struct gw_err *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, HISTORY_FILE);
	char *buf = NULL;
	size_t len = 0;
	struct gw_err ferr;
	if (readfile(path, HISTORY_FILE_MAX, &buf, &len, &ferr) < 0) {
		if (errno == ENOENT)
			return 1;
		gw_errf(err, "%s", ferr.msg);
	} else {
		json_error_t jerr;
		json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
		free(buf);
		size_t loaded = 0;
		if (!doc)
			gw_errf(err, "not JSON: %s (line %d)", jerr.text, jerr.line);
		else {
			pthread_mutex_lock(&h->mu);
			int rc = load_doc(h, doc, groups, n, &loaded, err);
			if (rc != 0) /* back to empty */
				for (int g = 0; g < GW_GROUP_COUNT; g++) {
					h->rings[g].n = h->rings[g].head = h->rings[g].pending = 0;
				}
			pthread_mutex_unlock(&h->mu);
			json_decref(doc);
			if (rc == 0) {
				LOG_I(h->log, "history", "loaded %zu version(s) of history from %s",
				      loaded, path);
				return 0;
			}
		}
		gw_err_prefix(err, "%s", path);
	}
	LOG_W(h->log, "history", "ignoring %s; starting with an empty history", err->msg);
	return -1;
}
