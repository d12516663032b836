/* Helpers for the subscriber tests (see subtest.h). */
#include "subtest.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "config/ytree.h"

struct group_data *gd_make(enum gw_group g, const char *md5, int64_t lmt, const char *const *kv)
{
	struct group_data *gd = group_data_new(g);
	ck_assert_ptr_nonnull(gd);
	snprintf(gd->md5, sizeof gd->md5, "%s", md5);
	gd->last_modify_time = lmt;
	snprintf(gd->server, sizeof gd->server, "test");
	gd->received_us = gw_mono_us();
	size_t n = 0;
	while (kv && kv[2 * n])
		n++;
	gd->items = arena_calloc(&gd->arena, (n ? n : 1) * sizeof *gd->items);
	gd->n_items = n;
	for (size_t i = 0; i < n; i++) {
		/* the key as given, kept after the JSON (which need not hold it) */
		const char *json = kv[2 * i + 1];
		ck_assert_int_eq(gd_item_keyed(&gd->items[i], &gd->arena, json, strlen(json),
		                               kv[2 * i], strlen(kv[2 * i])),
		                 0);
		gd->json_bytes += gd->items[i].json_len;
	}
	ck_assert_int_eq(group_data_index(gd, NULL), GD_INDEX_DISTINCT);
	return gd;
}

void tcfg_init(struct tcfg *t)
{
	memset(t, 0, sizeof *t);
	t->cfg.path = "test.yaml";
	enum gw_group classic[] = {GW_GROUP_APP_AUTH, GW_GROUP_PLUGIN, GW_GROUP_RULE,
	                           GW_GROUP_SELECTOR, GW_GROUP_META_DATA};
	for (size_t i = 0; i < 5; i++)
		t->cfg.groups[i] = classic[i];
	t->cfg.n_groups = 5;
	t->cfg.subscribers = t->subs;
}

void tcfg_add(struct tcfg *t, const char *name, const char *library, const char *yaml)
{
	size_t i = t->cfg.n_subscribers;
	ck_assert_uint_lt(i, TCFG_MAX);
	struct gw_err err = {0};
	int rc = ytree_parse("test.yaml", yaml, strlen(yaml), &t->trees[i], &err);
	ck_assert_msg(rc == 0, "test config for %s: %s", name, err.msg);
	t->subs[i].name = (char *)name;
	t->subs[i].library = (char *)library;
	t->subs[i].config = t->trees[i];
	t->subs[i].line = 10 + (int)i;
	t->cfg.n_subscribers = i + 1;
}

void tcfg_free(struct tcfg *t)
{
	for (size_t i = 0; i < t->cfg.n_subscribers; i++)
		ytree_free(t->trees[i]);
	memset(t, 0, sizeof *t);
}

struct gw_log *test_log(const char *path)
{
	struct gw_log *log = NULL;
	struct gw_err err;
	int rc = gw_log_open(&log, path ? GW_LOG_DEBUG : GW_LOG_WARN, GW_LOG_TEXT, path, &err);
	ck_assert_msg(rc == 0, "%s", err.msg);
	return log;
}

int sub_apply(struct subscriber *s, enum gw_group g, struct group_data *from, struct group_data *to,
              struct gw_err *why)
{
	struct sub_change c;
	ck_assert_int_eq(subscriber_change(s, g, from, to, &c, why), 0);
	int rc = subscriber_apply_change(s, &c, why);
	subscriber_change_free(&c);
	return rc;
}
