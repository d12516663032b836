/*
 * In-process benchmarks on the agent's own objects (libgwagent): figure 2 (full sync)
 * and figure 5 (one change in a big group). In process, because the figures are about
 * the agent's CPU work (parse, store, diff, deliver) and their floors are too: a floor
 * measured in the same process on the same bytes, interleaved with the figure, shares
 * its caches, allocator and frequency, so the ratio holds on a noisy machine.
 *
 * 2. Full sync: a fetch reply with every group of the dataset -> reply_parse_fetch ->
 *    store_swap -> dispatch_once to the no-op bench subscriber (loaded with dlopen like
 *    in the daemon). Floor: jansson json_loads() of the same bytes.
 * 5. One change: the store holds the dataset, the dispatcher thread runs; one rule's name
 *    changes; the RULE reply is parsed, then timed from store_swap() to the subscriber's
 *    apply() having returned (its report's timestamp): the dispatch time. The subscriber
 *    must see exactly one update and nothing else. Floor: comparing every item's raw JSON
 *    of the two versions with memcmp (what any change detection must at least read).
 *    Also: parse + store + dispatch of the RULE reply against json_loads() of it.
 *
 * Output: "ROW|figure|value|floor|ratio|target|verdict" lines for bench/run.sh's table,
 * and details on stderr.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "benchdata.h"
#include "config/config.h"
#include "source/source.h"
#include "deliver/dispatch.h"
#include "model/groupdata.h"
#include "core/log.h"
#include "model/model.h"
#include "source/http/reply.h"
#include "store/store.h"
#include "deliver/subscribers.h"

struct ctx {
	struct bench_data data;
	enum gw_group want[BENCH_MAX_GROUPS];
	size_t n_want;
	struct cfg *cfg;
	struct gw_log *log;
	struct subscribers *subs;
	int rfd; /* where the bench subscriber reports */
	char sock[100];
};

struct report {
	char group[32];
	int64_t lmt, t;
	unsigned long items, added, updated, removed;
};

static double ms(int64_t ns)
{
	return (double)ns / 1e6;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t median(int64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_i64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int64_t max_of(const int64_t *v, size_t n)
{
	int64_t m = v[0];
	for (size_t i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
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

/* Wait for the bench subscriber's report of `group` at version `lmt`. */
static int wait_report(struct ctx *c, const char *group, int64_t lmt, struct report *out)
{
	char msg[512];
	for (;;) {
		ssize_t n = recv(c->rfd, msg, sizeof msg - 1, 0);
		if (n < 0) {
			fprintf(stderr, "bench_inproc: no report of %s version %" PRId64 ": %s\n",
			        group, lmt, strerror(errno));
			return -1;
		}
		msg[n] = '\0';
		char inst[128];
		if (sscanf(msg, "A %127s %31s %" SCNd64 " %" SCNd64 " %lu %lu %lu %lu", inst,
		           out->group, &out->lmt, &out->t, &out->items, &out->added, &out->updated,
		           &out->removed) == 8 &&
		    strcmp(out->group, group) == 0 && out->lmt == lmt)
			return 0;
	}
}

static int setup(struct ctx *c, const char *dir, const char *plugin)
{
	if (bench_data_load(dir, &c->data) < 0)
		return -1;
	char groups[256] = "";
	for (size_t i = 0; i < c->data.n; i++) {
		int g = cfg_group_parse(c->data.g[i].name);
		if (g < 0) {
			fprintf(stderr, "bench_inproc: unknown group %s\n", c->data.g[i].name);
			return -1;
		}
		c->want[c->n_want++] = (enum gw_group)g;
		snprintf(groups + strlen(groups), sizeof groups - strlen(groups), "%s%s",
		         i ? ", " : "", c->data.g[i].name);
	}
	snprintf(c->sock, sizeof c->sock, "/tmp/gwsync-bench-inproc-%d.sock", (int)getpid());
	c->rfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un su = {.sun_family = AF_UNIX};
	snprintf(su.sun_path, sizeof su.sun_path, "%s", c->sock);
	unlink(c->sock);
	struct timeval tv = {30, 0};
	int big = 1 << 20;
	if (c->rfd < 0 || bind(c->rfd, (struct sockaddr *)&su, sizeof su) < 0 ||
	    setsockopt(c->rfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 ||
	    setsockopt(c->rfd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big) < 0) {
		perror("bench_inproc: report socket");
		return -1;
	}

	char yaml[2048];
	snprintf(yaml, sizeof yaml,
	         "admin:\n"
	         "  servers: [\"http://127.0.0.1:9\"]\n"
	         "  groups: [%s]\n"
	         "log:\n"
	         "  level: warn\n"
	         "subscribers:\n"
	         "  - name: noop\n"
	         "    library: %s\n"
	         "    config:\n"
	         "      report: %s\n",
	         groups, plugin, c->sock);
	struct gw_err err = {0};
	const struct cfg_section *bench_sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(bench_sections); /* as main hands them to the loader */
	if (cfg_parse("bench_inproc.yaml", yaml, strlen(yaml), bench_sections, &c->cfg, &err) < 0 ||
	    gw_log_open(&c->log, GW_LOG_WARN, GW_LOG_TEXT, NULL, &err) < 0 ||
	    subscribers_load(c->cfg, c->log, &c->subs, &err) < 0) {
		fprintf(stderr, "bench_inproc: %s\n", err.msg);
		return -1;
	}
	return 0;
}

/* Parse `body` and offer every wanted group to st. Returns the item count or -1. */
/* As the daemon's start-up fetch does: the versions may keep *body (then NULL). */
static long load_into(struct store *st, char **body, size_t len, const enum gw_group *want,
                      size_t n_want)
{
	struct group_data *out[GW_GROUP_COUNT];
	struct gw_err err = {0};
	if (reply_parse_fetch_adopt(body, len, want, n_want, "bench", NULL, out, &err) < 0) {
		fprintf(stderr, "bench_inproc: parse: %s\n", err.msg);
		return -1;
	}
	long items = 0;
	for (size_t i = 0; i < n_want; i++) {
		struct group_data *gd = out[want[i]];
		items += (long)gd->n_items;
		store_swap(st, gd, ingest_accept_polled, NULL);
		group_data_unref(gd);
	}
	return items;
}

static int full_sync(struct ctx *c, int rounds)
{
	size_t len;
	char *body = bench_fetch_reply(&c->data, NULL, 0, &len);
	if (!body)
		return -1;
	body = realloc(body, len + 1);
	body[len] = '\0';
	int64_t fig[16], flo[16], dec[16], freed[16];
	long items = 0;
	size_t arena_bytes = 0, json_bytes = 0;
	for (int r = 0; r < rounds; r++) {
		int64_t t0 = bench_now_ns();
		json_error_t je;
		json_t *j = json_loads(body, 0, &je);
		int64_t t1 = bench_now_ns();
		json_decref(j);
		int64_t t2 = bench_now_ns();
		if (!j) {
			fprintf(stderr, "bench_inproc: json_loads: %s\n", je.text);
			return -1;
		}
		flo[r] = t1 - t0;
		dec[r] = t2 - t1;

		struct store *st = store_new();
		char *copy = malloc(len + 1); /* the store may keep it, as the daemon's does */
		if (!copy)
			return -1;
		memcpy(copy, body, len + 1);
		t0 = bench_now_ns();
		items = load_into(st, &copy, len, c->want, c->n_want);
		free(copy);
		int failed = items < 0 ? 1 : dispatch_once(c->subs, st, c->cfg, c->log);
		t1 = bench_now_ns();
		arena_bytes = json_bytes = 0;
		size_t list_bytes = 0, typed_bytes = 0, text_bytes = 0;
		const struct gd_pool *seen[64]; /* groups share the reply's text: count it once */
		size_t n_seen = 0;
		for (size_t g = 0; g < c->n_want; g++) {
			struct group_data *gd = store_get(st, c->want[g]);
			if (gd) {
				list_bytes += gd->arena.total + gd->n_items * sizeof *gd->items;
				json_bytes += gd->json_bytes;
				for (size_t i = 0; i < gd->n_pools; i++) {
					const struct gd_pool *s = gd->pools[i], *t = s->text_of;
					typed_bytes += s->arena.total;
					text_bytes += s->text ? s->text_len : 0;
					size_t k = 0;
					while (t && k < n_seen && seen[k] != t)
						k++;
					if (t && k == n_seen && n_seen < 64) {
						seen[n_seen++] = t;
						text_bytes += t->text_len;
					}
				}
			}
			group_data_unref(gd);
		}
		arena_bytes = list_bytes + typed_bytes + text_bytes;
		if (items > 0)
			fprintf(stderr,
			        "store per item: %.0f bytes item list and index, %.0f typed fields "
			        "and strings, %.0f kept reply\n",
			        (double)list_bytes / (double)items,
			        (double)typed_bytes / (double)items,
			        (double)text_bytes / (double)items);
		store_free(st);
		t2 = bench_now_ns();
		if (items < 0 || failed) {
			fprintf(stderr, "bench_inproc: full sync failed\n");
			return -1;
		}
		fig[r] = t1 - t0;
		freed[r] = t2 - t1;
		/* every group reached the subscriber */
		for (size_t g = 0; g < c->data.n; g++) {
			struct report rep;
			if (wait_report(c, c->data.g[g].name, c->data.g[g].lmt, &rep) < 0)
				return -1;
		}
		fprintf(stderr,
		        "full sync round %d: %.1f ms (json_loads %.1f ms, json_decref %.1f ms, "
		        "store_free %.1f ms)\n",
		        r + 1, ms(fig[r]), ms(flo[r]), ms(dec[r]), ms(freed[r]));
	}
	int64_t f = median(fig, (size_t)rounds), fl = median(flo, (size_t)rounds);
	double ratio = (double)f / (double)fl;
	char v[96], fv[96];
	snprintf(v, sizeof v, "%.0f ms", ms(f));
	snprintf(fv, sizeof fv, "%.0f ms", ms(fl));
	char fig_name[160];
	snprintf(fig_name, sizeof fig_name, "2. full sync, %ld items, %.1f MB (median of %d)",
	         items, (double)len / 1e6, rounds);
	row(fig_name, v, fv, ratio, "<= 0.75x floor", ratio <= 0.75 ? "met" : "NOT met");
	snprintf(v, sizeof v, "%.0f items/s", (double)items / ((double)f / 1e9));
	snprintf(fv, sizeof fv, "%.0f items/s", (double)items / ((double)fl / 1e9));
	row("2. full sync throughput", v, fv, (double)fl / (double)f, "-", "-");
	/* the growth curve (issue 13 target 6): full sync time against the number of items */
	snprintf(fig_name, sizeof fig_name, "10. growth: full sync, %ld items (%.1f MB)", items,
	         (double)len / 1e6);
	snprintf(v, sizeof v, "%.0f ms (%.2f us per item)", ms(f), (double)f / 1e3 / (double)items);
	snprintf(fv, sizeof fv, "json_loads %.0f ms", ms(fl));
	row(fig_name, v, fv, ratio, "-", "-");
	/* what the store keeps (items, strings, raw JSON), for the memory figures */
	snprintf(v, sizeof v, "%.1f MiB (%.0f bytes per item, of which item JSON %.0f)",
	         (double)arena_bytes / 1048576.0, (double)arena_bytes / (double)items,
	         (double)json_bytes / (double)items);
	snprintf(fv, sizeof fv, "JSON %.1f MiB", (double)len / 1048576.0);
	row("3. store size after the full sync (items, typed fields, kept reply)", v, fv,
	    (double)arena_bytes / (double)len, "-", "-");
	free(body);
	return 0;
}

static int one_change(struct ctx *c, int changes)
{
	struct bench_group *rule = bench_data_group(&c->data, "RULE");
	char *digits = rule ? bench_mutable_digits(rule) : NULL;
	if (!digits) {
		fprintf(stderr, "bench_inproc: the dataset has no mutable RULE\n");
		return -1;
	}
	size_t len;
	char *body = bench_fetch_reply(&c->data, NULL, 0, &len);
	struct store *st = store_new();
	long items = load_into(st, &body, len, c->want, c->n_want);
	free(body);
	struct dispatcher *d = NULL;
	struct gw_err err = {0};
	if (items < 0 || dispatcher_start(&d, c->subs, st, c->cfg, c->log, &err) < 0) {
		fprintf(stderr, "bench_inproc: %s\n", err.msg);
		return -1;
	}
	for (size_t g = 0; g < c->data.n; g++) {
		struct report rep;
		if (wait_report(c, c->data.g[g].name, c->data.g[g].lmt, &rep) < 0)
			return -1;
	}

	int64_t base = rule->lmt;
	int64_t disp[64], cmp[64], total[64], loads[64];
	int exact = 1;
	size_t rule_items = 0;
	const enum gw_group want = GW_GROUP_RULE;
	const char *rule_name = "RULE";
	if (changes > 64)
		changes = 64;
	for (int k = 0; k < changes; k++) {
		bench_group_set_version(rule, digits, base, (unsigned long)k + 1);
		body = bench_fetch_reply(&c->data, &rule_name, 1, &len);
		body = realloc(body, len + 1);
		body[len] = '\0';

		int64_t t0 = bench_now_ns();
		json_t *j = json_loads(body, 0, NULL);
		loads[k] = bench_now_ns() - t0;
		json_decref(j);

		struct group_data *out[GW_GROUP_COUNT];
		struct group_data *prev = store_get(st, GW_GROUP_RULE);
		/* as the poller does: the held version lets unchanged items be carried over */
		struct group_data *held[GW_GROUP_COUNT] = {NULL};
		held[GW_GROUP_RULE] = prev;
		int64_t tp = bench_now_ns();
		if (reply_parse_fetch(body, len, &want, 1, "bench", held, out, &err) < 0) {
			fprintf(stderr, "bench_inproc: parse: %s\n", err.msg);
			return -1;
		}
		struct group_data *gd = out[GW_GROUP_RULE];
		rule_items = gd->n_items;
		int64_t ts = bench_now_ns();
		store_swap(st, gd, ingest_accept_polled, NULL);
		struct report rep;
		if (wait_report(c, "RULE", rule->lmt, &rep) < 0)
			return -1;
		disp[k] = rep.t - ts;
		total[k] = rep.t - tp;
		if (rep.added != 0 || rep.updated != 1 || rep.removed != 0)
			exact = 0;

		/* floor: read both versions' items byte by byte to find what differs */
		t0 = bench_now_ns();
		size_t differ = 0;
		for (size_t i = 0; i < gd->n_items && i < prev->n_items; i++)
			differ +=
			    gd->items[i].json_len != prev->items[i].json_len ||
			    memcmp(gd->items[i].json, prev->items[i].json, gd->items[i].json_len);
		cmp[k] = bench_now_ns() - t0;
		if (differ != 1)
			fprintf(stderr, "bench_inproc: %zu items differ (expected 1)\n", differ);
		fprintf(
		    stderr,
		    "one change %d: dispatch %.2f ms (memcmp floor %.2f ms), parse+store+dispatch "
		    "%.1f ms (json_loads %.1f ms), delta +%lu ~%lu -%lu\n",
		    k + 1, ms(disp[k]), ms(cmp[k]), ms(total[k]), ms(loads[k]), rep.added,
		    rep.updated, rep.removed);
		group_data_unref(gd);
		group_data_unref(prev);
		free(body);
	}
	dispatcher_free(d);
	store_free(st);

	size_t n = (size_t)changes;
	int64_t dmax = max_of(disp, n);
	int64_t dm = median(disp, n), cm = median(cmp, n), tm = median(total, n),
	        lm = median(loads, n);
	char v[96], fv[96], name[160];
	snprintf(name, sizeof name, "5. one rule changed among %zu: dispatch (median of %d)",
	         rule_items, changes);
	snprintf(v, sizeof v, "%.2f ms (max %.2f)", ms(dm), ms(dmax));
	snprintf(fv, sizeof fv, "%.2f ms", ms(cm));
	row(name, v, fv, (double)dm / (double)cm, "exactly 1 update",
	    exact ? "met (1 update)" : "NOT met");
	snprintf(v, sizeof v, "%.0f ms", ms(tm));
	snprintf(fv, sizeof fv, "%.0f ms", ms(lm));
	row("5. one change: parse+store+dispatch of RULE", v, fv, (double)tm / (double)lm, "-",
	    "-");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr,
		        "usage: bench_inproc DATASET_DIR BENCH_SUB.so [ROUNDS [CHANGES]]\n");
		return 2;
	}
	int rounds = argc > 3 ? atoi(argv[3]) : 3;
	int changes = argc > 4 ? atoi(argv[4]) : 10;
	if (rounds < 1 || rounds > 16)
		rounds = 3;
	struct ctx c = {0};
	c.rfd = -1;
	int rc = setup(&c, argv[1], argv[2]) < 0 || full_sync(&c, rounds) < 0 ||
	         one_change(&c, changes) < 0;
	subscribers_free(c.subs);
	cfg_free(c.cfg);
	gw_log_close(c.log);
	bench_data_free(&c.data);
	if (c.rfd >= 0)
		close(c.rfd);
	unlink(c.sock);
	return rc;
}
