/*
 * What the Nacos source's main thread does with the store (see nacos.h): full reads as the
 * node map asks for them (the root lists, then what they name, round by round, until no
 * wanted key is unread), re-reads of the keys a listener named followed by the keys they
 * made wanted, and the listeners' bodies: every wanted key with the md5 of what was read
 * ("" for an absent key, which Nacos then does not report until it appears), split in
 * bodies of at most 10,000 keys, the most one listener request may carry; a key stays with
 * its listener, so a change rebuilds that listener's body only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/thread.h"
#include "source/nacos/listen.h"
#include "source/nacos/nacos.h"

/* ---- the keys to read ---- */

struct keys {
	char **v;
	size_t n, cap;
	int oom;
};

static void collect(void *ctx, const char *key, size_t klen, const char *tag, int present, int read)
{
	(void)tag, (void)present, (void)read;
	struct keys *k = ctx;
	if (k->oom)
		return;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		char **v = realloc(k->v, cap * sizeof *v);
		if (!v) {
			k->oom = 1;
			return;
		}
		k->v = v;
		k->cap = cap;
	}
	if (!(k->v[k->n] = strndup(key, klen)))
		k->oom = 1;
	else
		k->n++;
}

static void keys_free(struct keys *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
	memset(k, 0, sizeof *k);
}

/* Read one key from ep and hand it to the map (full: as part of a full read). */
static int read_key(struct source *s, size_t ep, const char *key, int full, struct gw_err *err)
{
	char *v;
	size_t len;
	int rc = nacos_client_get(s->client, ep, key, &v, &len, err);
	if (rc < 0)
		return -1;
	char md5[NACOS_MD5_HEX] = "";
	if (rc == 1)
		nacos_md5_hex(v, len, md5);
	pthread_mutex_lock(&s->sh.status.mu);
	s->sh.status.st.fetches++;
	s->sh.status.st.bytes_fetched += len;
	pthread_mutex_unlock(&s->sh.status.mu);
	int put =
	    full ? node_full_put(s->map, key, strlen(key), rc == 1 ? v : NULL, len, md5)
	         : node_put(s->map, key, strlen(key), rc == 1 ? v : "", len, md5, gw_mono_ms());
	free(v);
	if (put < 0) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "server %s: read of %s: out of memory", s->nc->kv.servers[ep],
		               key);
	}
	nacos_chunk_dirty(s, key);
	return 0;
}

/* Read every wanted key not read yet, round by round. */
static int read_unread(struct source *s, size_t ep, int full, struct gw_err *err)
{
	for (;;) {
		struct keys k = {0};
		node_unread(s->map, collect, &k);
		if (k.oom) {
			keys_free(&k);
			err->kind = SYNC_FAIL_FETCH;
			return gw_errf(err, "out of memory listing the keys to read");
		}
		if (!k.n)
			return 0;
		for (size_t i = 0; i < k.n; i++) {
			if (atomic_load(&s->sh.stop)) {
				keys_free(&k);
				err->kind = SYNC_STOPPED;
				return gw_errf(err, "stopped");
			}
			if (read_key(s, ep, k.v[i], full, err) != 0) {
				keys_free(&k);
				return -1;
			}
		}
		keys_free(&k);
	}
}

int nacos_full_read(struct source *s, size_t ep, enum kv_full_kind kind, struct gw_err *err)
{
	int64_t t0 = gw_mono_ms();
	if (s->cfg->username && nacos_client_token_due(s->client) < 0 &&
	    nacos_client_login(s->client, ep, err) != 0)
		return -1;
	node_full_begin(s->map);
	if (read_unread(s, ep, 1, err) != 0) {
		node_full_abort(s->map, gw_mono_ms());
		return -1;
	}
	int n = node_full_end(s->map, kind, gw_mono_ms());
	if (n < 0) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "server %s: full read: out of memory", s->nc->kv.servers[ep]);
	}
	struct node_stats st;
	node_stats(s->map, &st);
	LOG_I(s->log, "nacos", "%s: read %zu key(s) from %s in %lld ms (%d version(s) accepted)",
	      s->nc->kv.label, st.wanted, s->nc->kv.servers[ep], (long long)(gw_mono_ms() - t0), n);
	return 0;
}

int nacos_reread(struct source *s, char **keys, size_t n, struct gw_err *err)
{
	for (size_t i = 0; i < n; i++) {
		if (atomic_load(&s->sh.stop)) {
			err->kind = SYNC_STOPPED;
			return gw_errf(err, "stopped");
		}
		/* a key a list dropped since the listener named it is not read: its item
		 * would be held aside without a watch keeping it fresh */
		if (node_is_wanted(s->map, keys[i], strlen(keys[i])) &&
		    read_key(s, s->ep, keys[i], 0, err) != 0)
			return -1;
	}
	return read_unread(s, s->ep, 0, err);
}

/* ---- the listeners' bodies ---- */

/* Each key keeps the listener that watches it (its node slot, 1-based), and each listener
 * the keys it watches (pointers into the map, valid until the wanted set changes), so a
 * changed tag costs the body of its own listener: at most 10,000 keys, whatever the total.
 * A key new to the wanted set goes to the first listener with room. */
struct place {
	struct source *s;
	size_t count[NACOS_WATCHERS_MAX];
	size_t n_keys, over;
	int pass; /* 0: count the placed keys; 1: place the others, list every key */
	int oom;
};

static int chunk_add(struct nacos_chunk *c, const char *key, size_t klen, const char *tag)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 256;
		struct nacos_chunk_key *k = realloc(c->keys, cap * sizeof *k);
		if (!k)
			return -1;
		c->keys = k;
		c->cap = cap;
	}
	c->keys[c->n++] = (struct nacos_chunk_key){key, klen, tag};
	return 0;
}

static void place_key(void *ctx, const char *key, size_t klen, const char *tag, int present,
                      uint32_t *slot)
{
	(void)present;
	struct place *pl = ctx;
	if (pl->pass == 0) {
		pl->n_keys++;
		if (*slot >= 1 && *slot <= NACOS_WATCHERS_MAX)
			pl->count[*slot - 1]++;
		return;
	}
	if (*slot < 1 || *slot > NACOS_WATCHERS_MAX) {
		size_t i = 0;
		while (i < NACOS_WATCHERS_MAX && pl->count[i] >= NACOS_LISTEN_MAX)
			i++;
		if (i == NACOS_WATCHERS_MAX) {
			pl->over++;
			return;
		}
		pl->count[i]++;
		*slot = (uint32_t)i + 1;
	}
	if (chunk_add(&pl->s->chunks[*slot - 1], key, klen, tag) != 0)
		pl->oom = 1;
}

/* Every key placed again in its listener's list (the wanted set changed). */
static int place_all(struct source *s)
{
	struct place pl = {.s = s};
	for (size_t i = 0; i < NACOS_WATCHERS_MAX; i++)
		s->chunks[i].n = 0;
	node_wanted_slots(s->map, place_key, &pl);
	pl.pass = 1;
	node_wanted_slots(s->map, place_key, &pl);
	if (pl.over)
		LOG_E(s->log, "nacos",
		      "%s: %zu keys are wanted, more than %d listeners of %d keys watch; %zu are "
		      "read at each resync only",
		      s->nc->kv.label, pl.n_keys, NACOS_WATCHERS_MAX, NACOS_LISTEN_MAX, pl.over);
	return pl.oom ? -1 : 0;
}

/* The body of listener i, or NULL when it has no key. */
static char *chunk_body(struct source *s, size_t i, int *oom)
{
	const struct nacos_chunk *c = &s->chunks[i];
	*oom = 0;
	if (!c->n)
		return NULL;
	struct strbuf b = {0};
	nacos_listen_begin(&b);
	for (size_t k = 0; k < c->n; k++)
		nacos_listen_add(&b, c->keys[k].key, c->keys[k].klen, s->nc->group, c->keys[k].tag,
		                 s->nc->tenant);
	char *body = strbuf_finish(&b);
	*oom = !body;
	return body;
}

void nacos_chunk_dirty(struct source *s, const char *key)
{
	uint32_t *slot = node_slot(s->map, key, strlen(key));
	if (slot && *slot >= 1 && *slot <= NACOS_WATCHERS_MAX)
		s->chunk_dirty[*slot - 1] = 1;
	else
		s->bodies_dirty = 1;
}

static int start_watcher(struct source *s, size_t i, struct gw_err *err)
{
	struct nacos_watcher *w = &s->w[i];
	w->s = s;
	w->idx = i;
	char name[16];
	snprintf(name, sizeof name, "nacos-w%zu", i);
	int rc = gw_thread_start(&w->thread, name, nacos_watch_run, w);
	if (rc != 0) {
		err->kind = SYNC_FAIL_CONNECT;
		return gw_errf(err, "nacos: cannot start a listener thread: %s", strerror(rc));
	}
	w->started = 1;
	s->n_w = i + 1;
	return 0;
}

int nacos_publish_bodies(struct source *s, int all, struct gw_err *err)
{
	all = all || s->bodies_dirty || s->built_gen != node_wanted_gen(s->map);
	if (all && place_all(s) != 0) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "nacos: out of memory");
	}
	size_t chunks = 0, used = 0;
	for (size_t i = 0; i < NACOS_WATCHERS_MAX; i++)
		if (s->chunks[i].n) {
			chunks = i + 1;
			used++;
		}
	int rc = 0;
	pthread_mutex_lock(&s->sh.status.mu);
	for (size_t i = 0; i < NACOS_WATCHERS_MAX && (i < chunks || i < s->n_w); i++) {
		struct nacos_watcher *w = &s->w[i];
		if (!all && !s->chunk_dirty[i]) {
			if (w->answered) { /* the same body releases it */
				w->body_gen++;
				w->answered = 0;
			}
			continue;
		}
		int oom;
		char *body = chunk_body(s, i, &oom);
		if (oom) {
			rc = gw_errf(err, "nacos: out of memory");
			err->kind = SYNC_FAIL_FETCH;
			continue;
		}
		int same = body && w->body && strcmp(body, w->body) == 0;
		if (same && !w->answered) {
			free(body);
			continue;
		}
		free(w->body);
		w->body = body;
		w->body_len = body ? strlen(body) : 0;
		w->body_gen++;
		w->answered = 0;
		if (w->holding && !same) {
			w->interrupt = 1;
			if (w->h)
				http_interrupt(w->h);
		}
		if (i >= s->n_w && body && start_watcher(s, i, err) != 0)
			rc = -1;
	}
	s->n_use = used;
	s->sh.status.st.watches = used;
	pthread_cond_broadcast(&s->wcv);
	pthread_mutex_unlock(&s->sh.status.mu);
	s->built_gen = node_wanted_gen(s->map);
	s->bodies_dirty = 0;
	memset(s->chunk_dirty, 0, sizeof s->chunk_dirty);
	return rc;
}
