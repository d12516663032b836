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
	uint64_t body_gen; /* the watch body generation `at` belongs to; 0: none */
	size_t at;
	uint32_t slot;
	size_t len;
	char key[]; /* not NUL-terminated */
};

static int eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct ver *v = (const struct ver *)e;
	return v->len == len && memcmp(v->key, key, len) == 0;
}

static struct ver *find(const struct polaris_versions *v, const char *key, size_t len)
{
	struct htab_link **at = htab_find(&v->t, htab_hash(key, len), eq, key, len);
	return at ? (struct ver *)*at : NULL;
}

/* The entry of key, made (version 0, in no body) if there is none; NULL on out of memory. */
static struct ver *get_or_add(struct polaris_versions *v, const char *key, size_t len)
{
	struct ver *e = find(v, key, len);
	if (e)
		return e;
	if (!(e = calloc(1, sizeof *e + len)) || htab_reserve(&v->t) != 0) {
		free(e);
		return NULL;
	}
	e->len = len;
	memcpy(e->key, key, len);
	uint64_t h = htab_hash(key, len);
	htab_insert(&v->t, htab_find(&v->t, h, eq, key, len), &e->link, h);
	return e;
}

uint64_t polaris_versions_get(const struct polaris_versions *v, const char *key, size_t len)
{
	const struct ver *e = find(v, key, len);
	return e ? e->version : 0;
}

int polaris_versions_set(struct polaris_versions *v, const char *key, size_t len, uint64_t version)
{
	struct ver *e = get_or_add(v, key, len);
	if (!e)
		return -1;
	e->version = version;
	e->epoch = v->epoch;
	return 0;
}

int polaris_versions_place(struct polaris_versions *v, const char *key, size_t len, uint64_t gen,
                           uint32_t slot, size_t at)
{
	struct ver *e = get_or_add(v, key, len);
	if (!e)
		return -1;
	e->body_gen = gen;
	e->slot = slot;
	e->at = at;
	return 0;
}

size_t polaris_versions_at(const struct polaris_versions *v, const char *key, size_t len,
                           uint64_t gen, uint32_t *slot)
{
	const struct ver *e = find(v, key, len);
	if (!e || !gen || e->body_gen != gen)
		return (size_t)-1;
	*slot = e->slot;
	return e->at;
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
