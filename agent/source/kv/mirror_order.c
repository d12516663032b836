/*
 * The held version's nodes, in path order beside its items (see mirror_state.h), found by
 * the agent's one binary search (core/search.h) and edited where they stand, not copied per
 * version: a replaced node keeps its place (one node per path), a few inserted or removed
 * ones move the rest (a REFRESH's many are rebuilt in one pass).
 */
#include <stdlib.h>
#include <string.h>

#include "core/search.h"
#include "source/kv/mirror_state.h"

/* Edits that insert or remove a node: up to this many are made in place, each moving the
 * tail of the order (a memmove, no allocation); more (a REFRESH) rebuild it in one pass. */
#define ORDER_SHIFTS_MAX 16

static int order_cmp(const void *list, size_t rank, const void *key)
{
	const struct kv_node *const *order = list;
	return kv_node_cmp(&order[rank], key);
}

size_t kv_mirror_order_rank(const struct gstate *s, const struct kv_node *n, int *found)
{
	return gw_search_rank(s->base ? s->base->n_items : 0, order_cmp, s->order, &n, found);
}

/* The base's nodes after the changes (in the edits' order), for the version they made: a
 * new array, in one pass over the old. NULL on out of memory. */
static struct kv_node **order_after(const struct gstate *s, const struct change *ch, size_t nc,
                                    size_t n_new)
{
	struct kv_node **v = malloc((n_new ? n_new : 1) * sizeof *v);
	size_t n_old = s->base->n_items, pos = 0, k = 0;
	if (!v)
		return NULL;
	for (size_t c = 0; c <= nc; c++) {
		size_t upto = c < nc ? ch[c].e.at : n_old;
		memcpy(&v[k], &s->order[pos], (upto - pos) * sizeof *v);
		k += upto - pos;
		pos = upto;
		if (c == nc)
			break;
		if (ch[c].e.op != EDIT_REMOVE)
			v[k++] = ch[c].node;
		if (ch[c].e.op != EDIT_INSERT)
			pos++;
	}
	return v;
}

/* How many of the changes insert (ins) and remove (rem) a node. */
static void order_shifts(const struct change *ch, size_t nc, size_t *ins, size_t *rem)
{
	*ins = *rem = 0;
	for (size_t c = 0; c < nc; c++) {
		*ins += ch[c].e.op == EDIT_INSERT;
		*rem += ch[c].e.op == EDIT_REMOVE;
	}
}

/* Make room for the base's order after the changes, before the version is offered, so that
 * applying them (order_apply) cannot fail: in place when few insert or remove (the order
 * grown if needed to hold the base's nodes and every inserted one, as it does midway; a
 * one-node change among 100,000 then copies nothing), else a new array in *fresh. 0 or -1
 * (out of memory). */
int kv_mirror_order_prepare(struct gstate *s, const struct change *ch, size_t nc, size_t n_new,
                            struct kv_node ***fresh)
{
	size_t ins, rem, need;
	*fresh = NULL;
	order_shifts(ch, nc, &ins, &rem);
	if (ins + rem > ORDER_SHIFTS_MAX)
		return (*fresh = order_after(s, ch, nc, n_new)) ? 0 : -1;
	need = s->base->n_items + ins;
	if (need <= s->order_cap)
		return 0;
	size_t cap = s->order_cap + s->order_cap / 2;
	if (cap < need)
		cap = need;
	struct kv_node **v = realloc(s->order, cap * sizeof *v);
	if (!v)
		return -1;
	s->order = v;
	s->order_cap = cap;
	return 0;
}

/* The changes made to the base's order (its room made by order_prepare): a replaced node
 * keeps its place (one node per path: it is the same node), an inserted or removed one
 * moves the tail. The last edit first, so the positions the earlier ones name still hold
 * (edits at one position go in as listed: the one applied last lands first). */
void kv_mirror_order_apply(struct gstate *s, const struct change *ch, size_t nc, size_t n_old)
{
	size_t len = n_old;
	for (size_t c = nc; c-- > 0;) {
		size_t at = ch[c].e.at;
		if (ch[c].e.op == EDIT_REPLACE) {
			s->order[at] = ch[c].node;
		} else if (ch[c].e.op == EDIT_INSERT) {
			memmove(&s->order[at + 1], &s->order[at], (len - at) * sizeof *s->order);
			s->order[at] = ch[c].node;
			len++;
		} else {
			memmove(&s->order[at], &s->order[at + 1],
			        (len - at - 1) * sizeof *s->order);
			len--;
		}
	}
}
