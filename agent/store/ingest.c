/*
 * Ingest over the store (see ingest.h). The verdict lines are written here, once for every
 * source, so an operator reads the same "store: accepted ..." whatever the protocol.
 */
#include "store/ingest.h"
#include "core/clock.h"
#include "model/groups.h"
#include "store/history.h"
#include "store/store.h"

#include <stdlib.h>
#include <string.h>

struct ingest {
	struct store *st;
	struct gw_log *log;
	struct history *history; /* NULL: none kept */
};

enum ingest_verdict ingest_accept_polled(const struct group_data *held,
                                         const struct group_data *offered)
{
	/* The admin is the source of truth; the snapshot only bridges. Its copy replaces a
	 * provisional version even with the same md5, so the version is no longer provisional
	 * and a lagging admin's older one cannot replace it afterwards. */
	if (!held || held->provisional)
		return INGEST_ACCEPTED;
	if (strcmp(held->md5, offered->md5) == 0)
		return INGEST_SAME;
	return offered->last_modify_time > held->last_modify_time ? INGEST_ACCEPTED : INGEST_OLDER;
}

enum ingest_verdict ingest_accept_patched(const struct group_data *held,
                                          const struct group_data *offered)
{
	if (!held || held->provisional)
		return INGEST_ACCEPTED;
	return strcmp(held->md5, offered->md5) == 0 ? INGEST_SAME : INGEST_ACCEPTED;
}

struct ingest *ingest_new(struct store *st, struct gw_log *log)
{
	struct ingest *in = calloc(1, sizeof *in);
	if (!in)
		return NULL;
	in->st = st;
	in->log = log;
	return in;
}

void ingest_free(struct ingest *in)
{
	free(in);
}

void ingest_set_history(struct ingest *in, struct history *h)
{
	in->history = h;
}

size_t ingest_offer(struct ingest *in, const char *server, ingest_accept_fn accept,
                    const enum gw_group *groups, size_t n,
                    struct group_data *versions[GW_GROUP_COUNT], int *older)
{
	size_t accepted = 0;
	for (size_t i = 0; i < n; i++) {
		struct group_data *gd = versions[groups[i]];
		if (!gd)
			continue;
		versions[groups[i]] = NULL;
		const char *name = gw_group_name(gd->group);
		struct group_data *replaced = NULL;
		/* before the swap: the dispatcher may apply the version before it is recorded */
		int64_t accepted_ms = gw_wall_ms();
		switch (store_swap(in->st, gd, accept, &replaced)) {
		case INGEST_ACCEPTED:
			accepted++;
			LOG_I(in->log, "store",
			      "accepted %s version %s (lastModifyTime %lld, %zu items) from %s",
			      name, gd->md5, (long long)gd->last_modify_time, gd->n_items, server);
			history_accepted_at(in->history, replaced, gd, server, accepted_ms);
			group_data_unref(replaced);
			break;
		case INGEST_OLDER: {
			*older = 1;
			char held_md5[65];
			int64_t held_time;
			store_stamp(in->st, gd->group, held_md5, &held_time);
			LOG_D(in->log, "store",
			      "ignored %s version %s from %s: older than held (%lld <= %lld)", name,
			      gd->md5, server, (long long)gd->last_modify_time,
			      (long long)held_time);
			break;
		}
		case INGEST_SAME:
			LOG_D(in->log, "store", "ignored %s version %s from %s: already held", name,
			      gd->md5, server);
			break;
		}
		group_data_unref(gd);
	}
	return accepted;
}

void ingest_stamps(struct ingest *in, struct ingest_stamp out[GW_GROUP_COUNT])
{
	memset(out, 0, GW_GROUP_COUNT * sizeof *out);
	for (int g = 0; g < GW_GROUP_COUNT; g++) {
		struct group_data *gd = store_get(in->st, (enum gw_group)g);
		if (gd) {
			memcpy(out[g].md5, gd->md5, sizeof out[g].md5);
			out[g].last_modify_time = gd->last_modify_time;
			out[g].provisional = gd->provisional;
		}
		group_data_unref(gd);
	}
}

struct group_data *ingest_held(struct ingest *in, enum gw_group group)
{
	return store_get(in->st, group);
}
