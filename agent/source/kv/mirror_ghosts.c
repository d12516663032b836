/*
 * PLUGIN's ghosts (see mirror.h): a plugin renamed in the admin is written under its new name
 * while the old node stays, holding the same id; of the nodes holding one id only the newest
 * (highest revision) is the plugin, the others are kept out of the version. The plugin
 * list is tens of items: found by sorting them by id at every build.
 */
#include <stdlib.h>
#include <string.h>

#include "model/keys.h"
#include "source/kv/mirror_state.h"

/* An item with an alias and where it is. */
struct aliased {
	const char *id;
	size_t i;
};

static int cmp_aliased(const void *a, const void *b)
{
	const struct aliased *x = a, *y = b;
	int c = strcmp(x->id, y->id);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Of the items holding one plugin id, all but the newest (the highest revision, then the
 * last path) are ghosts: their positions in all (nodes[i] holds all's item i) are marked
 * in ghost[]. Returns how many, or -1 on out of memory. */
static long find_ghosts(const struct group_data *all, struct kv_node *const *nodes, uint8_t *ghost)
{
	size_t n = all->n_items, na = 0;
	long found = 0;
	struct aliased *v = malloc((n ? n : 1) * sizeof *v);
	if (!v)
		return -1;
	struct arena ids; /* the ids, read from the items' JSON */
	arena_init(&ids);
	for (size_t i = 0; i < n; i++) {
		const char *id = key_alias(all->group, &all->items[i], &ids);
		if (id)
			v[na++] = (struct aliased){id, i};
	}
	qsort(v, na, sizeof *v, cmp_aliased);
	for (size_t a = 0; a < na;) {
		size_t b = a + 1, best = a;
		for (; b < na && strcmp(v[b].id, v[a].id) == 0; b++)
			if (nodes[v[b].i]->rev >= nodes[v[best].i]->rev)
				best = b; /* equal revisions: the later path */
		for (size_t k = a; k < b; k++)
			if (k != best) {
				ghost[v[k].i] = 1;
				found++;
			}
		a = b;
	}
	free(v);
	arena_free(&ids);
	return found;
}

/* The group without its ghosts (PLUGIN): *list is `all` less the items hidden by a newer
 * one with their id; win[] and ghosts[] get the nodes of each (nodes[i] holds all's item
 * i). 0 or -1 (out of memory). */
int kv_mirror_drop_ghosts(enum gw_group g, struct group_data *all, struct kv_node *const *nodes,
                          struct kv_node **win, size_t *nw, struct kv_node **ghosts, size_t *ng,
                          struct group_data **list, struct gw_err *err)
{
	size_t n = all->n_items, ne = 0;
	uint8_t *ghost = calloc(n ? n : 1, 1);
	struct edit *e = malloc((n ? n : 1) * sizeof *e);
	int rc = -1;
	*nw = *ng = 0;
	if (!ghost || !e || (kv_mirror_alias_group(g) && find_ghosts(all, nodes, ghost) < 0))
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (ghost[i]) {
			ghosts[(*ng)++] = nodes[i];
			e[ne++] = (struct edit){i, EDIT_REMOVE, NULL};
		} else {
			win[(*nw)++] = nodes[i];
		}
	}
	if (!ne)
		*list = group_data_ref(all);
	else if (model_edit(all, NULL, e, ne, list, err) != 0)
		goto out;
	rc = 0;
out:
	free(ghost);
	free(e);
	return rc;
}
