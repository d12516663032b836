/* Benchmark datasets: loading and reply building (see benchdata.h). */
#include "benchdata.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "benchdata: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
			if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
				buf[n] = '\0';
				*len = (size_t)n;
			} else {
				free(buf);
				buf = NULL;
			}
		}
	}
	if (!buf)
		fprintf(stderr, "benchdata: %s: cannot read\n", path);
	fclose(f);
	return buf;
}

int bench_data_load(const char *dir, struct bench_data *d)
{
	memset(d, 0, sizeof *d);
	char path[4096];
	snprintf(path, sizeof path, "%s/manifest", dir);
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "benchdata: %s: %s (run bench/gendata.py)\n", path,
		        strerror(errno));
		return -1;
	}
	struct bench_group g;
	while (d->n < BENCH_MAX_GROUPS &&
	       fscanf(f, "%31s %64s %" SCNd64, g.name, g.md5, &g.lmt) == 3) {
		snprintf(path, sizeof path, "%s/%s.json", dir, g.name);
		g.items = read_file(path, &g.len);
		if (!g.items) {
			fclose(f);
			bench_data_free(d);
			return -1;
		}
		d->item_bytes += g.len;
		d->g[d->n++] = g;
	}
	fclose(f);
	if (d->n == 0) {
		fprintf(stderr, "benchdata: %s/manifest: no groups\n", dir);
		return -1;
	}
	return 0;
}

void bench_data_free(struct bench_data *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->g[i].items);
	d->n = 0;
}

struct bench_group *bench_data_group(struct bench_data *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->g[i].name, name) == 0)
			return &d->g[i];
	return NULL;
}

char *bench_mutable_digits(const struct bench_group *g)
{
	char *p = memmem(g->items, g->len, BENCH_MUTABLE, strlen(BENCH_MUTABLE));
	if (!p || (size_t)(p - g->items) + strlen(BENCH_MUTABLE) + BENCH_MUTABLE_DIGITS > g->len)
		return NULL;
	return p + strlen(BENCH_MUTABLE);
}

void bench_group_set_version(struct bench_group *g, char *digits, int64_t base_lmt,
                             unsigned long seq)
{
	char tmp[BENCH_MUTABLE_DIGITS + 1];
	snprintf(tmp, sizeof tmp, "%0*lu", BENCH_MUTABLE_DIGITS, seq % 1000000000UL);
	memcpy(digits, tmp, BENCH_MUTABLE_DIGITS);
	/* The admin's md5 is opaque to clients; any 32 hex digits unique per version do. */
	snprintf(g->md5, sizeof g->md5, "be7c%028lx", seq);
	g->lmt = base_lmt + (int64_t)seq;
}

size_t bench_group_prefix(const struct bench_group *g, int first, char *buf, size_t cap)
{
	int n =
	    snprintf(buf, cap, "%s\"%s\":{\"md5\":\"%s\",\"lastModifyTime\":%" PRId64 ",\"data\":",
	             first ? "" : ",", g->name, g->md5, g->lmt);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

char *bench_fetch_reply(const struct bench_data *d, const char *const *groups, size_t n,
                        size_t *len)
{
	const struct bench_group *sel[BENCH_MAX_GROUPS];
	size_t ns = 0;
	for (size_t i = 0; i < d->n; i++) {
		int want = n == 0;
		for (size_t j = 0; j < n && !want; j++)
			want = strcmp(groups[j], d->g[i].name) == 0;
		if (want)
			sel[ns++] = &d->g[i];
	}
	size_t cap = sizeof BENCH_FETCH_HEAD + sizeof BENCH_FETCH_TAIL + 1;
	for (size_t i = 0; i < ns; i++)
		cap += sel[i]->len + 256;
	char *out = malloc(cap), *p = out;
	if (!out)
		return NULL;
	p += sprintf(p, "%s", BENCH_FETCH_HEAD);
	for (size_t i = 0; i < ns; i++) {
		p += bench_group_prefix(sel[i], i == 0, p, 256);
		memcpy(p, sel[i]->items, sel[i]->len);
		p += sel[i]->len;
		p += sprintf(p, "%s", BENCH_GROUP_TAIL);
	}
	p += sprintf(p, "%s", BENCH_FETCH_TAIL);
	*len = (size_t)(p - out);
	return out;
}
