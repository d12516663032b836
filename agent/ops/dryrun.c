/*
 * The dry run's report (see dryrun.h). The delta is the dispatcher's own (model/diff.c):
 * what a running agent would hand a subscriber in step. Keys are printed, item JSON never;
 * an AI proxy API key's own part is a credential and is shortened (keys_display()).
 */
#include "ops/dryrun.h"

#include <string.h>

#include "model/diff.h"
#include "model/groups.h"
#include "model/keys.h"
#include "store/snapshot.h"

/* At most this many keys per list; the count is always exact. */
#define MAX_KEYS_SHOWN 50

/* One key as the lists show it. */
static void key_line(FILE *out, const char *sign, enum gw_group g, const struct gd_item *it)
{
	char key[300], shown[300];
	fprintf(out, "  %s %s\n", sign,
	        key_display(g, gd_key_str(it, key, sizeof key), shown, sizeof shown));
}

static void keys(FILE *out, const char *sign, enum gw_group g, const struct gd_item *const *items,
                 size_t n)
{
	for (size_t i = 0; i < n && i < MAX_KEYS_SHOWN; i++)
		key_line(out, sign, g, items[i]);
	if (n > MAX_KEYS_SHOWN)
		fprintf(out, "  %s ... and %zu more\n", sign, n - MAX_KEYS_SHOWN);
}

int dryrun_report(const struct cfg *cfg, struct store *st, FILE *out, struct gw_err *err)
{
	int changing = 0;
	unsigned changed_mask = 0;
	for (size_t k = 0; k < cfg->n_groups; k++) {
		enum gw_group g = cfg->groups[k];
		const char *name = gw_group_name(g);
		struct group_data *now = store_get(st, g), *before = NULL;
		int rc = snapshot_read(cfg->state_dir, g, &before, err);
		if (rc < 0) {
			group_data_unref(now);
			return -1;
		}
		if (!now) {
			fprintf(out, "%s: not fetched\n", name);
			group_data_unref(before);
			continue;
		}
		struct diff d;
		if (diff_build(&d, g, before, now, NULL) != 0) {
			group_data_unref(now);
			group_data_unref(before);
			return gw_errf(err, "%s: out of memory", name);
		}
		const struct diff *ch = &d;
		int same = ch->n_added + ch->n_updated + ch->n_removed == 0;
		if (before)
			fprintf(out, "%s: %s -> %s (%zu items): +%zu ~%zu -%zu%s\n", name,
			        before->md5, now->md5, now->n_items, ch->n_added, ch->n_updated,
			        ch->n_removed, same ? ", no change" : "");
		else
			fprintf(out, "%s: nothing held (no snapshot) -> %s (%zu items): +%zu\n",
			        name, now->md5, now->n_items, ch->n_added);
		keys(out, "+", g, ch->added, ch->n_added);
		for (size_t i = 0; i < ch->n_updated && i < MAX_KEYS_SHOWN; i++)
			key_line(out, "~", g, ch->updated[i].new_item);
		if (ch->n_updated > MAX_KEYS_SHOWN)
			fprintf(out, "  ~ ... and %zu more\n", ch->n_updated - MAX_KEYS_SHOWN);
		keys(out, "-", g, ch->removed, ch->n_removed);
		if (!same) {
			changing++;
			changed_mask |= 1u << g;
		}
		diff_free(&d);
		group_data_unref(now);
		group_data_unref(before);
	}
	for (size_t i = 0; i < cfg->n_subscribers; i++) {
		fprintf(out, "subscriber %s:", cfg->subscribers[i].name);
		int any = 0;
		for (size_t k = 0; k < cfg->n_groups; k++)
			if (changed_mask & (1u << cfg->groups[k])) {
				fprintf(out, " %s", gw_group_name(cfg->groups[k]));
				any = 1;
			}
		fprintf(out, "%s\n",
		        any ? " would change (from the snapshot's version, which it "
		              "holds when it is in step)"
		            : " no content would change");
	}
	fprintf(out, "dry run: %d of %zu groups would change; nothing was delivered or written\n",
	        changing, cfg->n_groups);
	return changing;
}
