/*
 * Counting what changed in each recorded version (see history.h): the merge of the two
 * versions a waiting entry holds (model/diff.h, the merge the dispatcher makes), run outside
 * the history's lock on the snapshot writer's low-priority thread (or in a reader that
 * needs the counts first), so no thread that takes versions waits for a merge. An entry is
 * taken out of the ring's hands to count it (its references become ours) and found again
 * by its sequence number to put the counts in: the ring may have wrapped meanwhile.
 */
#include <pthread.h>
#include <string.h>

#include "model/diff.h"
#include "model/fields.h"
#include "model/keys.h"
#include "store/history.h"
#include "store/history_ring.h"

static void first_keys(struct history_change *c, enum gw_group g,
                       const struct gd_item *const *items, size_t n)
{
	c->count = n;
	c->n_first = n < HISTORY_KEYS ? n : HISTORY_KEYS;
	/* the name only where the key is an opaque id and the name says what it is; never
	 * another group's (an AI proxy key's name may be the secret its key display shortens) */
	const char *field = g == GW_GROUP_SELECTOR || g == GW_GROUP_RULE || g == GW_GROUP_META_DATA
	                        ? fields_group(g)->name
	                        : NULL;
	for (size_t i = 0; i < c->n_first; i++) {
		/* room for what is shown, cut by history_copy_text */
		char key[1024], shown[HISTORY_KEY_MAX + 64], nbuf[1024];
		gd_key_str(items[i], key, sizeof key);
		key_display(g, key, shown, sizeof shown);
		history_copy_text(c->first[i], HISTORY_KEY_MAX, shown);
		const char *name = field ? gd_item_text(items[i], field, nbuf, sizeof nbuf) : NULL;
		history_copy_text(c->names[i], HISTORY_NAME_MAX,
		                  name && strcmp(name, key) != 0 ? name : "");
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
			struct slot *s = history_nth(h, r, i);
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
		const struct gd_item *ubuf[HISTORY_KEYS];
		size_t nu = d.n_updated;
		for (size_t i = 0; i < nu && i < HISTORY_KEYS; i++)
			ubuf[i] = d.updated[i].new_item;
		first_keys(&ch[0], (enum gw_group)g, d.added, d.n_added);
		first_keys(&ch[1], (enum gw_group)g, ubuf, nu);
		first_keys(&ch[2], (enum gw_group)g, d.removed, d.n_removed);
		diff_free(&d);
	} else {
		LOG_W(h->log, "history", "%s", err.msg);
	}

	pthread_mutex_lock(&h->mu);
	struct ring *r = &h->rings[g];
	for (size_t i = 0; i < r->n; i++) {
		struct slot *s = history_nth(h, r, i);
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
