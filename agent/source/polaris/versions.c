/*
 * File versions (see versions.h): an htab of small entries keyed by the file name.
 */
#include "source/polaris/versions.h"

#include <stdlib.h>
#include <string.h>

struct ver {
	struct htab_link link; /* first */
	uint64_t version;
	uint64_t epoch;
	size_t len;
	char key[]; /* not NUL-terminated */
};

static int eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct ver *v = (const struct ver *)e;
	return v->len == len && memcmp(v->key, key, len) == 0;
}

uint64_t polaris_versions_get(const struct polaris_versions *v, const char *key, size_t len)
{
	struct htab_link **at = htab_find(&v->t, htab_hash(key, len), eq, key, len);
	return at && *at ? ((const struct ver *)*at)->version : 0;
}

int polaris_versions_set(struct polaris_versions *v, const char *key, size_t len, uint64_t version)
{
	uint64_t h = htab_hash(key, len);
	struct htab_link **at = htab_find(&v->t, h, eq, key, len);
	if (at && *at) {
		struct ver *e = (struct ver *)*at;
		if (version == 0) {
			htab_remove(&v->t, at);
			free(e);
			return 0;
		}
		e->version = version;
		e->epoch = v->epoch;
		return 0;
	}
	if (version == 0)
		return 0;
	struct ver *e = malloc(sizeof *e + len);
	if (!e || htab_reserve(&v->t) != 0) {
		free(e);
		return -1;
	}
	e->version = version;
	e->epoch = v->epoch;
	e->len = len;
	memcpy(e->key, key, len);
	at = htab_find(&v->t, h, eq, key, len);
	htab_insert(&v->t, at, &e->link, h);
	return 0;
}

void polaris_versions_mark(struct polaris_versions *v)
{
	v->epoch++;
}

static int stale(struct htab_link *e, void *arg)
{
	const struct polaris_versions *v = arg;
	if (((struct ver *)e)->epoch == v->epoch)
		return 0;
	free(e);
	return 1;
}

void polaris_versions_prune(struct polaris_versions *v)
{
	htab_remove_if(&v->t, stale, v);
}

size_t polaris_versions_count(const struct polaris_versions *v)
{
	return v->t.n;
}

static int all(struct htab_link *e, void *arg)
{
	(void)arg;
	free(e);
	return 1;
}

void polaris_versions_free(struct polaris_versions *v)
{
	htab_remove_if(&v->t, all, NULL);
	htab_free(&v->t);
}
