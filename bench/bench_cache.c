/*
 * Figure 7: the `lmdb` subscriber's cost against the `file` subscriber's, in one process,
 * on the same versions (issue 10's benchmark). Both plugins are loaded with dlopen through
 * the agent's loader and driven the way the dispatcher drives them (diff, then apply); only
 * apply() is timed, since the diff is the agent's and the same for both.
 *
 *  - one change: one rule's name changes (benchdata's mutable rule) in a group of 10,000
 *    or 100,000 rules; apply() of the one-item delta. The lmdb plugin writes the delta (one
 *    put, the meta entry, the generation: one commit with one data sync); the file plugin
 *    rewrites and syncs the whole group file. Median and p99 of ROUNDS alternating rounds.
 *  - the same one-item apply by a second `lmdb` instance with `change_log: 0`, so the cost of
 *    the change log (one entry, one trimmed, changes_from) is the difference of two medians
 *    measured in the same rounds. The first instance keeps a log of 100 generations, so
 *    most rounds also trim one entry, as every commit of a long-running agent does (the
 *    default window of 1000 is the same B-tree depth).
 *  - the first (whole-group) write of each, once.
 *  - the environment's size (data.mdb's allocated bytes) against the group's JSON bytes.
 *
 * Usage: bench_cache DATASET_DIR LMDB_SO FILE_SO WORK_DIR ROUNDS LABEL
 * Output: "ROW|..." lines for bench/table.py, details on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "benchdata.h"
#include "config/config.h"
#include "source/source.h"
#include "model/diff.h"
#include "model/groupdata.h"
#include "core/log.h"
#include "model/model.h"
#include "source/http/reply.h"
#include "deliver/subscribers.h"

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* nearest-rank percentile of a sorted array */
static int64_t pct(const int64_t *v, int n, int p)
{
	int i = (p * n + 99) / 100 - 1;
	return v[i < 0 ? 0 : i];
}

static void row(const char *figure, const char *value, const char *floor, double ratio,
                const char *target, const char *verdict)
{
	char r[32] = "-";
	if (ratio > 0)
		snprintf(r, sizeof r, "%.2fx", ratio);
	printf("ROW|%s|%s|%s|%s|%s|%s\n", figure, value, floor, r, target, verdict);
	fflush(stdout);
}

static struct group_data *parse_rule(struct bench_data *d, struct group_data *prev)
{
	const char *groups[] = {"RULE"};
	size_t len;
	char *body = bench_fetch_reply(d, groups, 1, &len);
	enum gw_group want = GW_GROUP_RULE;
	struct group_data *held[GW_GROUP_COUNT] = {0}, *out[GW_GROUP_COUNT] = {0};
	held[GW_GROUP_RULE] = prev;
	struct gw_err err = {0};
	if (reply_parse_fetch(body, len, &want, 1, "bench", held, out, &err) < 0) {
		fprintf(stderr, "bench_cache: parse: %s\n", err.msg);
		exit(1);
	}
	free(body);
	return out[GW_GROUP_RULE];
}

/* apply() of from -> to on subscriber i; returns the nanoseconds apply took. */
static int64_t timed_apply(struct subscribers *subs, size_t i, struct group_data *from,
                           struct group_data *to)
{
	struct sub_change c;
	struct gw_err why = {0};
	if (subscriber_change(&subs->v[i], GW_GROUP_RULE, from, to, &c, &why) != 0)
		exit(1);
	int64_t t0 = bench_now_ns();
	int rc = subscriber_apply_change(&subs->v[i], &c, &why);
	int64_t t1 = bench_now_ns();
	subscriber_change_free(&c);
	if (rc != 0) {
		fprintf(stderr, "bench_cache: %s apply failed: %s\n", subs->v[i].name, why.msg);
		exit(1);
	}
	return t1 - t0;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr,
		        "usage: bench_cache DATASET_DIR LMDB_SO FILE_SO WORK_DIR ROUNDS LABEL\n");
		return 2;
	}
	const char *work = argv[4], *label = argv[6];
	int rounds = atoi(argv[5]);
	struct bench_data data;
	if (bench_data_load(argv[1], &data) < 0)
		return 1;
	struct bench_group *rule = bench_data_group(&data, "RULE");
	char *digits = rule ? bench_mutable_digits(rule) : NULL;
	if (!digits) {
		fprintf(stderr, "bench_cache: %s has no mutable rule\n", argv[1]);
		return 1;
	}

	char yaml[4096];
	snprintf(
	    yaml, sizeof yaml,
	    "admin:\n  servers: [\"http://127.0.0.1:9\"]\n  groups: [RULE]\n"
	    "log:\n  level: warn\n"
	    "subscribers:\n"
	    "  - name: lmdb\n    library: %s\n    config: { path: %s/env, change_log: 100 }\n"
	    "  - name: file\n    library: %s\n    config: { dir: %s/files, mode: \"0640\" }\n"
	    "  - name: nolog\n    library: %s\n    config: { path: %s/env-nolog, change_log: 0 }\n",
	    argv[2], work, argv[3], work, argv[2], work);
	struct cfg *cfg;
	struct gw_log *log;
	struct subscribers *subs;
	struct gw_err err = {0};
	const struct cfg_section *bench_sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(bench_sections); /* as main hands them to the loader */
	if (cfg_parse("bench_cache.yaml", yaml, strlen(yaml), bench_sections, &cfg, &err) < 0 ||
	    gw_log_open(&log, GW_LOG_WARN, GW_LOG_TEXT, NULL, &err) < 0 ||
	    subscribers_load(cfg, log, &subs, &err) < 0) {
		fprintf(stderr, "bench_cache: %s\n", err.msg);
		return 1;
	}

	int64_t base = rule->lmt;
	struct group_data *held = parse_rule(&data, NULL);
	size_t json = held->json_bytes, n_items = held->n_items;
	int64_t first_lmdb = timed_apply(subs, 0, NULL, held);
	int64_t first_file = timed_apply(subs, 1, NULL, held);
	timed_apply(subs, 2, NULL, held);

	int64_t *tl = calloc((size_t)rounds, sizeof *tl), *tf = calloc((size_t)rounds, sizeof *tf);
	int64_t *tn = calloc((size_t)rounds, sizeof *tn);
	for (int k = 0; k < rounds; k++) {
		bench_group_set_version(rule, digits, base, (unsigned long)k + 1);
		struct group_data *next = parse_rule(&data, held);
		/* alternate which goes first, so neither always finds a warm or a cold cache */
		if (k % 2) {
			tl[k] = timed_apply(subs, 0, held, next);
			tn[k] = timed_apply(subs, 2, held, next);
			tf[k] = timed_apply(subs, 1, held, next);
		} else {
			tf[k] = timed_apply(subs, 1, held, next);
			tn[k] = timed_apply(subs, 2, held, next);
			tl[k] = timed_apply(subs, 0, held, next);
		}
		group_data_unref(held);
		held = next;
	}
	qsort(tl, (size_t)rounds, sizeof *tl, cmp_i64);
	qsort(tf, (size_t)rounds, sizeof *tf, cmp_i64);
	qsort(tn, (size_t)rounds, sizeof *tn, cmp_i64);

	char path[4200];
	snprintf(path, sizeof path, "%s/env/data.mdb", work);
	struct stat sb;
	if (stat(path, &sb) != 0) {
		perror(path);
		return 1;
	}
	double env_bytes = (double)sb.st_blocks * 512.0;

	char fig[96], v[64], f[64];
	double l50 = (double)pct(tl, rounds, 50) / 1e6, f50 = (double)pct(tf, rounds, 50) / 1e6;
	double l99 = (double)pct(tl, rounds, 99) / 1e6, f99 = (double)pct(tf, rounds, 99) / 1e6;
	snprintf(fig, sizeof fig, "7. lmdb apply, 1 rule in %s, p50", label);
	snprintf(v, sizeof v, "%.3f ms", l50);
	snprintf(f, sizeof f, "file %.3f ms", f50);
	row(fig, v, f, l50 / f50, "<=2x file, <1 ms", l50 <= 2 * f50 && l50 < 1.0 ? "yes" : "NO");
	snprintf(fig, sizeof fig, "7. lmdb apply, 1 rule in %s, p99", label);
	snprintf(v, sizeof v, "%.3f ms", l99);
	snprintf(f, sizeof f, "file %.3f ms", f99);
	row(fig, v, f, l99 / f99, "-", "-");
	double n50 = (double)pct(tn, rounds, 50) / 1e6;
	snprintf(fig, sizeof fig, "7. lmdb apply, 1 rule in %s, p50, change log on/off", label);
	snprintf(v, sizeof v, "%.3f ms", l50);
	snprintf(f, sizeof f, "off %.3f ms", n50);
	row(fig, v, f, l50 / n50, "-", "-");
	snprintf(fig, sizeof fig, "7. lmdb first write, %s rules", label);
	snprintf(v, sizeof v, "%.1f ms", (double)first_lmdb / 1e6);
	snprintf(f, sizeof f, "file %.1f ms", (double)first_file / 1e6);
	row(fig, v, f, (double)first_lmdb / (double)first_file, "-", "-");
	snprintf(fig, sizeof fig, "7. lmdb environment size, %s rules", label);
	snprintf(v, sizeof v, "%.1f MB", env_bytes / 1e6);
	snprintf(f, sizeof f, "JSON %.1f MB", (double)json / 1e6);
	row(fig, v, f, env_bytes / (double)json, "-", "-");
	fprintf(stderr,
	        "bench_cache %s: %zu rules, %d rounds: lmdb p50 %.3f p99 %.3f max %.3f ms; "
	        "file p50 %.3f p99 %.3f max %.3f ms\n",
	        label, n_items, rounds, l50, l99, (double)tl[rounds - 1] / 1e6, f50, f99,
	        (double)tf[rounds - 1] / 1e6);

	free(tl);
	free(tf);
	free(tn);
	group_data_unref(held);
	subscribers_free(subs);
	gw_log_close(log);
	cfg_free(cfg);
	bench_data_free(&data);
	return 0;
}
