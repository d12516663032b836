/*
 * cachewriter: the cache writer of figure 11 (the gateway at scale). It fills an LMDB cache
 * with a dataset and then commits one-item changes on command, through the real `lmdb`
 * subscriber loaded with dlopen by the agent's loader and driven as the dispatcher drives it
 * (the agent's model parses the new version, sharing unchanged items with the held one; the
 * agent's diff makes the delta; the plugin's apply() commits it), so the cache, and the
 * change log of a plugin that writes one, are exactly what gwsyncd would write.
 *
 * Why a process of its own and not gwsyncd: "commit" must be the moment apply() returned,
 * which only the process calling apply() knows, and a change must cost the writer as little
 * as possible so the gateway under test keeps the machine's cores. Each group's fetch reply
 * is built once; a change overwrites one item's bytes in place with a text of the same
 * length (the harness makes changes that only swap digits), rewrites the fixed-width md5
 * and lastModifyTime, and the model re-reads the reply against the held version (one item
 * parsed, the rest compared), as a long-polling agent does.
 *
 * Usage: cachewriter DATASET_DIR LMDB_SO ENV_DIR [MAP_SIZE]
 *   DATASET_DIR  what bench/gateway/scale.py wrote (benchdata.h's manifest + GROUP.json)
 *   LMDB_SO      the lmdb plugin to drive (any build's: the subscriber ABI is stable)
 * stdout: "FILL GROUP N_ITEMS APPLY_MS" per group, then "READY T_NS"; per command "ok
 * T_COMMIT_NS APPLY_NS" (CLOCK_MONOTONIC: apply() returned; how long it took) or "err WHY".
 * stdin, one command per line:
 *   put GROUP OFFSET LEN     followed by a line of LEN bytes: the item's new text, which
 *                            replaces the LEN bytes at OFFSET of GROUP's item list
 *   quit
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "benchdata.h"
#include "config/config.h"
#include "source/source.h"
#include "core/log.h"
#include "deliver/subscribers.h"
#include "model/diff.h"
#include "model/groupdata.h"
#include "model/groups.h"
#include "source/http/reply.h"

#define MD5_TAG_FMT "9a7e%028" PRIx64 /* 32 hex digits, unique per version */
#define LMT_BASE    1700000000000LL   /* + version: 13 digits for a long while */

/* One group: its whole fetch reply, built once and edited in place. */
struct wgroup {
	enum gw_group id;
	const char *name;
	char *reply;
	size_t len;
	size_t items_at; /* where the item list starts inside reply */
	size_t items_len;
	size_t md5_at, lmt_at; /* the fixed-width version fields inside reply */
	uint64_t version;
	struct group_data *held; /* the version the subscriber last accepted */
};

static int group_id(const char *name, enum gw_group *out)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (strcmp(gw_group_name((enum gw_group)g), name) == 0) {
			*out = (enum gw_group)g;
			return 0;
		}
	return -1;
}

static void set_version(struct wgroup *g)
{
	char md5[40], lmt[24];
	snprintf(md5, sizeof md5, MD5_TAG_FMT, g->version);
	snprintf(lmt, sizeof lmt, "%013lld", LMT_BASE + (long long)g->version);
	memcpy(g->reply + g->md5_at, md5, 32);
	memcpy(g->reply + g->lmt_at, lmt, 13);
}

static int build_reply(struct wgroup *g, const struct bench_group *src)
{
	char head[256];
	int n = snprintf(head, sizeof head,
	                 BENCH_FETCH_HEAD "\"%s\":{\"md5\":\"%032d\",\"lastModifyTime\":%013d,"
	                                  "\"data\":",
	                 src->name, 0, 0);
	const char *tail = BENCH_GROUP_TAIL BENCH_FETCH_TAIL;
	g->len = (size_t)n + src->len + strlen(tail);
	if (!(g->reply = malloc(g->len + 1)))
		return -1;
	memcpy(g->reply, head, (size_t)n);
	memcpy(g->reply + n, src->items, src->len);
	memcpy(g->reply + n + src->len, tail, strlen(tail) + 1);
	g->items_at = (size_t)n;
	g->items_len = src->len;
	g->md5_at = (size_t)(strstr(head, "\"md5\":\"") - head) + 7;
	g->lmt_at = (size_t)(strstr(head, "\"lastModifyTime\":") - head) + 17;
	set_version(g);
	return 0;
}

/* The next version of g from its reply; NULL (and a message) on failure. */
static struct group_data *parse(struct wgroup *g, struct gw_err *why)
{
	struct group_data *held[GW_GROUP_COUNT] = {0}, *out[GW_GROUP_COUNT] = {0};
	held[g->id] = g->held;
	struct gw_err err = {0};
	if (reply_parse_fetch(g->reply, g->len, &g->id, 1, "cachewriter", held, out, &err) < 0) {
		gw_errf(why, "parse: %.900s", err.msg);
		return NULL;
	}
	return out[g->id];
}

/* held -> next through the subscriber; 0 with the commit time and apply's duration. */
static int deliver(struct subscribers *subs, struct wgroup *g, struct group_data *next,
                   int64_t *t_commit, int64_t *took, struct gw_err *why)
{
	struct sub_change c;
	if (subscriber_change(&subs->v[0], g->id, g->held, next, &c, why) != 0) {
		gw_errf(why, "diff %s: out of memory", g->name);
		return -1;
	}
	int64_t t0 = bench_now_ns();
	int rc = subscriber_apply_change(&subs->v[0], &c, why);
	*t_commit = bench_now_ns();
	*took = *t_commit - t0;
	size_t changed = c.d.n_added + c.d.n_updated + c.d.n_removed;
	subscriber_change_free(&c);
	subscriber_tick(&subs->v[0], *t_commit / 1000000);
	if (rc != 0)
		return -1;
	if (g->held && changed != 1) {
		gw_errf(why, "%s: the change touched %zu items, not 1", g->name, changed);
		return -1;
	}
	if (g->held)
		group_data_unref(g->held);
	g->held = next;
	return 0;
}

static int put(struct subscribers *subs, struct wgroup *gs, size_t n, const char *name, size_t off,
               const char *text, size_t len, int64_t *t_commit, int64_t *took, struct gw_err *why)
{
	struct wgroup *g = NULL;
	for (size_t i = 0; i < n && !g; i++)
		if (strcmp(gs[i].name, name) == 0)
			g = &gs[i];
	if (!g) {
		gw_errf(why, "no group %s in the dataset", name);
		return -1;
	}
	char *at = g->reply + g->items_at + off;
	if (len < 2 || off + len > g->items_len || at[0] != '{' || at[len - 1] != '}' ||
	    text[0] != '{' || text[len - 1] != '}') {
		gw_errf(why, "%s: bytes %zu+%zu are not one item of the list", name, off, len);
		return -1;
	}
	char *old = malloc(len);
	if (!old) {
		gw_errf(why, "out of memory");
		return -1;
	}
	memcpy(old, at, len);
	memcpy(at, text, len);
	g->version++;
	set_version(g);
	struct group_data *next = parse(g, why);
	if (!next || deliver(subs, g, next, t_commit, took, why) < 0) {
		if (next && g->held != next)
			group_data_unref(next);
		memcpy(at, old, len); /* what the cache holds stays what the reply says */
		g->version--;
		set_version(g);
		free(old);
		return -1;
	}
	free(old);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: cachewriter DATASET_DIR LMDB_SO ENV_DIR [MAP_SIZE]\n");
		return 2;
	}
	struct bench_data data;
	if (bench_data_load(argv[1], &data) < 0)
		return 1;
	struct wgroup gs[BENCH_MAX_GROUPS];
	memset(gs, 0, sizeof gs);
	for (size_t i = 0; i < data.n; i++) {
		if (group_id(data.g[i].name, &gs[i].id) < 0) {
			fprintf(stderr, "cachewriter: unknown group %s\n", data.g[i].name);
			return 1;
		}
		gs[i].name = gw_group_name(gs[i].id);
		gs[i].version = 1;
		if (build_reply(&gs[i], &data.g[i]) < 0) {
			fprintf(stderr, "cachewriter: out of memory\n");
			return 1;
		}
	}
	char yaml[8192];
	snprintf(yaml, sizeof yaml,
	         "admin:\n  servers: [\"http://127.0.0.1:9\"]\n"
	         "log:\n  level: warn\n"
	         "subscribers:\n"
	         "  - name: cache\n    library: %s\n    config: { path: %s, map_size: %s }\n",
	         argv[2], argv[3], argc == 5 ? argv[4] : "1GiB");
	struct cfg *cfg;
	struct gw_log *log;
	struct subscribers *subs;
	struct gw_err err = {0};
	const struct cfg_section *bench_sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(bench_sections); /* as main hands them to the loader */
	if (cfg_parse("cachewriter.yaml", yaml, strlen(yaml), bench_sections, &cfg, &err) < 0 ||
	    gw_log_open(&log, GW_LOG_WARN, GW_LOG_TEXT, NULL, &err) < 0 ||
	    subscribers_load(cfg, log, &subs, &err) < 0) {
		fprintf(stderr, "cachewriter: %s\n", err.msg);
		return 1;
	}
	subscriber_tick(&subs->v[0], bench_now_ns() / 1000000);

	struct gw_err why;
	for (size_t i = 0; i < data.n; i++) {
		int64_t t, took;
		struct group_data *v = parse(&gs[i], &why);
		if (!v || deliver(subs, &gs[i], v, &t, &took, &why) < 0) {
			fprintf(stderr, "cachewriter: fill: %s\n", why.msg);
			return 1;
		}
		printf("FILL %s %zu %.1f\n", gs[i].name, v->n_items, (double)took / 1e6);
	}
	size_t n_groups = data.n;
	bench_data_free(&data); /* the replies hold copies of the lists */
	printf("READY %" PRId64 "\n", bench_now_ns());
	fflush(stdout);

	char line[512];
	size_t cap = 1 << 16;
	char *text = malloc(cap);
	int rc = 0;
	while (text && fgets(line, sizeof line, stdin)) {
		char name[32];
		size_t off, len;
		if (strncmp(line, "quit", 4) == 0)
			break;
		if (sscanf(line, "put %31s %zu %zu", name, &off, &len) != 3) {
			printf("err bad command: %s", line);
			fflush(stdout);
			continue;
		}
		if (len + 2 > cap) {
			char *p = realloc(text, len + 2);
			if (!p) {
				rc = 1;
				break;
			}
			text = p;
			cap = len + 2;
		}
		if (fread(text, 1, len + 1, stdin) != len + 1 || text[len] != '\n') {
			fprintf(stderr, "cachewriter: put %s: expected %zu bytes and a newline\n",
			        name, len);
			rc = 1;
			break;
		}
		int64_t t, took;
		if (put(subs, gs, n_groups, name, off, text, len, &t, &took, &why) < 0)
			printf("err %s\n", why.msg);
		else
			printf("ok %" PRId64 " %" PRId64 "\n", t, took);
		fflush(stdout);
	}
	free(text);
	for (size_t i = 0; i < n_groups; i++) {
		if (gs[i].held)
			group_data_unref(gs[i].held);
		free(gs[i].reply);
	}
	subscribers_free(subs);
	gw_log_close(log);
	cfg_free(cfg);
	return rc;
}
