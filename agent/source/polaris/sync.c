/*
 * One session of the Polaris source on one server (see polaris.h): read, then watch.
 *
 * What is read and watched is what the node map wants (source/node/node.h): the root list
 * files, the lists they name, every member's item file. A full read reads them round by
 * round (a list read makes its members wanted) until none is left unread. The watches are
 * WatchConfigFile requests naming every wanted file with the release version held
 * (versions.h), POLARIS_WATCH_FILES per request (watch.h): Polaris answers one at once
 * when one of its files has a newer release, naming that one file, else after its 30 s
 * hold with "no change". Each answer costs one read of the file it names, plus the files a
 * list read made wanted, then that watch's body, patched, is sent again;
 * a burst of admin writes is a run of immediate answers, settled by the mirror into one
 * version per group. No state is lost between watches: the versions sent are those held,
 * so a release made while no watch was held is named by the next one.
 *
 * The anti-entropy resync is a full read (Polaris's client API has no bulk read):
 * every difference from what the map holds is a repair, logged and counted by the mirror.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "shared/strbuf.h"
#include "source/polaris/polaris.h"
#include "source/polaris/wire.h"

#define SHOWN(len) (int)((len) > 200 ? 200 : (len))
/* Rounds of a walk: the layout is three lists deep (plugin, selector, rule), so more
 * rounds than this mean the map keeps wanting what it was given. */
#define MAX_ROUNDS 16
/* Watch answers in a row naming a file whose read brings no newer release before the
 * session is given up (a server whose watch and reads disagree would be a busy loop). */
#define MAX_IDLE_ANSWERS 3
/* Polaris holds a watch 30 s: a "no change" sooner than this is a server (or a proxy) that
 * does not hold, and the next watch waits out the rest of it, so such a server costs one
 * watch a second, not a busy loop. */
#define MIN_NO_CHANGE_MS 1000

static const char *kind_name(enum kv_full_kind kind)
{
	return kind == KV_FULL_START ? "start-up" : kind == KV_FULL_RECOVER ? "recovery" : "resync";
}

/* ---------------------------------------------------------------- keys to read */

struct keylist {
	char **keys;
	size_t *lens;
	size_t n, cap;
	int oom;
};

static void collect(void *ctx, const char *key, size_t klen, const char *tag, int present, int read)
{
	(void)tag, (void)present, (void)read;
	struct keylist *kl = ctx;
	if (kl->oom)
		return;
	if (kl->n == kl->cap) {
		size_t cap = kl->cap ? kl->cap * 2 : 64;
		char **k = realloc(kl->keys, cap * sizeof *k);
		if (k)
			kl->keys = k;
		size_t *l = k ? realloc(kl->lens, cap * sizeof *l) : NULL;
		if (!k || !l) {
			kl->oom = 1;
			return;
		}
		kl->lens = l;
		kl->cap = cap;
	}
	if (!(kl->keys[kl->n] = malloc(klen + 1))) {
		kl->oom = 1;
		return;
	}
	memcpy(kl->keys[kl->n], key, klen);
	kl->keys[kl->n][klen] = '\0';
	kl->lens[kl->n++] = klen;
}

static void keylist_free(struct keylist *kl)
{
	for (size_t i = 0; i < kl->n; i++)
		free(kl->keys[i]);
	free(kl->keys);
	free(kl->lens);
	memset(kl, 0, sizeof *kl);
}

static int stopped(struct source *s, struct gw_err *err)
{
	if (!atomic_load(&s->sh.stop))
		return 0;
	gw_errf(err, "stopped");
	err->kind = SYNC_STOPPED;
	return 1;
}

static int append_file(struct source *s, const char *key, size_t klen, uint64_t version);

/* Read one file and hand it to the map (full: as part of a full read). 1 if the release
 * read is newer than the version held, 0 if not, -1 with err. */
static int read_one(struct source *s, size_t srv, const char *key, size_t klen, int full,
                    struct gw_err *err)
{
	struct polaris_file f;
	if (polaris_read(s, srv, key, klen, &f, err) != 0)
		return -1;
	uint64_t held = polaris_versions_get(&s->versions, key, klen);
	int rc = polaris_versions_set(&s->versions, key, klen, f.version);
	uint32_t slot;
	size_t at = polaris_versions_at(&s->versions, key, klen, s->body_gen, &slot);
	if (at != (size_t)-1 && f.version != held) {
		if (!s->bodies[slot].inflight)
			polaris_watch_patch(s->bodies[slot].b.p, at, f.version);
		else /* lent out (a file its own watch did not name): build them all again */
			s->body_gen = 0;
	}
	if (rc == 0) {
		const char *v = f.present ? f.content : NULL;
		rc = full ? node_full_put(s->map, key, klen, v, f.len, NULL)
		          : node_put(s->map, key, klen, v, f.len, NULL, gw_mono_ms());
	}
	/* a file newly wanted (a list named it) joins a watch body that is not lent out */
	if (rc >= 0 && !full && s->body_gen && at == (size_t)-1 &&
	    node_is_wanted(s->map, key, klen) && append_file(s, key, klen, f.version) != 0)
		s->body_gen = 0; /* no room, or out of memory: build them all again */
	int newer = f.version > held;
	polaris_file_free(&f);
	if (rc < 0) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "polaris: out of memory");
	}
	return newer;
}

/* Read what the map wants and has not read, round by round until nothing is left. */
static int read_unread(struct source *s, size_t srv, int full, size_t *files, struct gw_err *err)
{
	/* a key becomes unread only by becoming wanted, which moves the generation: while it
	 * has not moved, nothing is unread and the walk over every key is saved */
	if (!full && s->unread_checked && s->unread_checked == node_wanted_gen(s->map))
		return 0;
	for (int round = 0;; round++) {
		struct keylist kl = {0};
		node_unread(s->map, collect, &kl);
		if (kl.oom) {
			keylist_free(&kl);
			err->kind = SYNC_FAIL_FETCH;
			return gw_errf(err, "polaris: out of memory");
		}
		if (kl.n == 0) {
			s->unread_checked = node_wanted_gen(s->map);
			return 0;
		}
		if (round == MAX_ROUNDS) {
			keylist_free(&kl);
			err->kind = SYNC_FAIL_FETCH;
			return gw_errf(err,
			               "polaris: %s: the layout's walk did not end after %d rounds",
			               s->where, MAX_ROUNDS);
		}
		for (size_t i = 0; i < kl.n; i++) {
			if (stopped(s, err) ||
			    read_one(s, srv, kl.keys[i], kl.lens[i], full, err) < 0) {
				keylist_free(&kl);
				return -1;
			}
			(*files)++;
		}
		keylist_free(&kl);
	}
}

int polaris_full_read(struct source *s, size_t srv, enum kv_full_kind kind, struct gw_err *err)
{
	int64_t t0 = gw_mono_ms();
	if (node_full_begin(s->map) != 0) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "polaris: out of memory");
	}
	polaris_versions_mark(&s->versions);
	s->unread_checked = 0;
	s->body_gen = 0; /* every version may change: the next watch builds its body again */
	size_t files = 0;
	if (read_unread(s, srv, 1, &files, err) != 0) {
		node_full_abort(s->map, gw_mono_ms());
		return -1;
	}
	polaris_versions_prune(&s->versions);
	int n = node_full_end(s->map, kind, gw_mono_ms());
	if (n < 0) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "polaris: out of memory");
	}
	LOG_I(s->log, "polaris",
	      "%s: %s read of %zu file(s) of %s from %s in %lld ms: %d group "
	      "version(s) accepted",
	      s->pc->kv.label, kind_name(kind), files, s->where, s->pc->kv.servers[srv],
	      (long long)(gw_mono_ms() - t0), n);
	return 0;
}

/* ---------------------------------------------------------------- the watch */

struct build {
	struct source *s;
	size_t n;
	int oom;
};

static void add_file(void *ctx, const char *key, size_t klen, const char *tag, int present,
                     int read)
{
	(void)tag, (void)present, (void)read;
	struct build *c = ctx;
	struct source *s = c->s;
	size_t slot = c->n++ / POLARIS_WATCH_FILES;
	if (slot >= POLARIS_WATCH_SLOTS) {
		c->oom = 1;
		return;
	}
	struct polaris_body *b = &s->bodies[slot];
	if (!b->b.len)
		polaris_watch_begin(&b->b);
	size_t at;
	polaris_watch_add(&b->b, s->pc->namespace, s->pc->file_group, key, klen,
	                  polaris_versions_get(&s->versions, key, klen), &at);
	if (polaris_versions_place(&s->versions, key, klen, s->body_gen, (uint32_t)slot, at) != 0)
		c->oom = 1;
	b->files++;
}

/* The bodies naming every wanted file with its version, POLARIS_WATCH_FILES per watch:
 * built after a full read (which may change every version), else grown by append_file()
 * and patched by read_one(). None may be lent out (drop_inflight() first). */
static int build_bodies(struct source *s, struct gw_err *err)
{
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++) {
		strbuf_reset(&s->bodies[i].b);
		s->bodies[i].files = 0;
	}
	s->body_gen = ++s->body_builds; /* never reused: an old place never matches */
	struct build c = {.s = s};
	node_wanted(s->map, add_file, &c);
	s->n_bodies = (c.n + POLARIS_WATCH_FILES - 1) / POLARIS_WATCH_FILES;
	int oom = c.oom;
	for (size_t i = 0; i < s->n_bodies && i < POLARIS_WATCH_SLOTS; i++) {
		polaris_watch_end(&s->bodies[i].b);
		oom |= s->bodies[i].b.oom || !s->bodies[i].b.p;
	}
	s->body_files = c.n;
	if (oom) {
		s->body_gen = 0;
		err->kind = SYNC_FAIL_FETCH;
		if (c.n > (size_t)POLARIS_WATCH_FILES * POLARIS_WATCH_SLOTS)
			return gw_errf(
			    err, "polaris: %s: %zu files to watch, more than %d watches of %d",
			    s->where, c.n, POLARIS_WATCH_SLOTS, POLARIS_WATCH_FILES);
		return gw_errf(err, "polaris: out of memory");
	}
	polaris_count(s, 0, 0, 0, c.n);
	return 0;
}

/* Add one file to the first body that is neither lent out nor full, or to a new one (its
 * entry goes before the closing "]}", so the places already given stay). A file that left
 * the wanted set stays in its body until the next build (after a full read): watching it
 * costs its bytes, and an answer naming it is read and ignored by the map. 0, or -1 when
 * no body can take it or out of memory. */
static int append_file(struct source *s, const char *key, size_t klen, uint64_t version)
{
	size_t i = 0;
	while (i < s->n_bodies &&
	       (s->bodies[i].inflight || s->bodies[i].files >= POLARIS_WATCH_FILES))
		i++;
	if (i == s->n_bodies) {
		if (i >= POLARIS_WATCH_SLOTS)
			return -1;
		struct polaris_body *b = &s->bodies[i];
		strbuf_reset(&b->b);
		b->files = 0;
		b->not_before = 0;
		polaris_watch_begin(&b->b);
		polaris_watch_end(&b->b);
		s->n_bodies++;
	}
	struct polaris_body *b = &s->bodies[i];
	if (b->b.oom || b->b.len < 2)
		return -1;
	b->b.len -= 2; /* "]}" */
	size_t at;
	polaris_watch_add(&b->b, s->pc->namespace, s->pc->file_group, key, klen, version, &at);
	polaris_watch_end(&b->b);
	if (b->b.oom ||
	    polaris_versions_place(&s->versions, key, klen, s->body_gen, (uint32_t)i, at) != 0)
		return -1;
	b->files++;
	s->body_files++;
	polaris_count(s, 0, 0, 0, s->body_files);
	return 0;
}

/* End every held watch and drop its answer. */
static void drop_inflight(struct source *s)
{
	polaris_watch_cancel(s->watch);
	while (polaris_watch_pending(s->watch) > 0) {
		struct polaris_watch_result res;
		if (polaris_watch_wait(s->watch, -1, &res))
			http_reply_free(&res.reply);
	}
	for (size_t i = 0; i < POLARIS_WATCH_SLOTS; i++)
		s->bodies[i].inflight = 0;
}

/* Send every idle watch whose pacing allows it; the earliest time a paced one may go
 * (monotonic ms), or -1 if none waits. */
static int64_t send_watches(struct source *s, int64_t now, struct gw_err *err)
{
	if (!s->body_gen) {
		drop_inflight(s);
		if (build_bodies(s, err) != 0)
			return -2;
	}
	int64_t next = -1;
	for (size_t i = 0; i < s->n_bodies; i++) {
		struct polaris_body *b = &s->bodies[i];
		if (b->inflight)
			continue;
		if (now < b->not_before) {
			if (next < 0 || b->not_before < next)
				next = b->not_before;
			continue;
		}
		/* lent to its watch thread: read_one() patches it only once the answer is back */
		if (polaris_watch_send(s->watch, i, s->srv, b->b.p, b->b.len, err) != 0)
			return -2;
		b->inflight = 1;
		b->sent_ms = now;
	}
	return next;
}

/* The watch named `name` at `version`: read it, then what its read made wanted. */
static int apply_answer(struct source *s, const char *name, size_t nl, uint64_t version,
                        struct gw_err *err)
{
	LOG_D(s->log, "polaris", "%s: %.*s released at version %llu", s->pc->kv.label, SHOWN(nl),
	      name, (unsigned long long)version);
	int newer = read_one(s, s->srv, name, nl, 0, err);
	if (newer < 0)
		return -1;
	if (newer) {
		s->idle_answers = 0;
	} else if (++s->idle_answers >= MAX_IDLE_ANSWERS) {
		s->idle_answers = 0;
		err->kind = SYNC_FAIL_CODE;
		return gw_errf(err,
		               "%s: WatchConfigFile of %s named %.*s at version %llu %d times, but "
		               "GetConfigFile serves version %llu",
		               s->pc->kv.servers[s->srv], s->where, SHOWN(nl), name,
		               (unsigned long long)version, MAX_IDLE_ANSWERS,
		               (unsigned long long)polaris_versions_get(&s->versions, name, nl));
	}
	size_t files = 0;
	return read_unread(s, s->srv, 0, &files, err);
}

static void schedule_resync(struct source *s)
{
	int64_t every = s->pc->kv.resync_interval_ms;
	s->resync_at = every > 0 ? gw_mono_ms() + every : -1;
}

int polaris_session(struct source *s, struct gw_err *err)
{
	s->exchanged = 0;
	if (s->need_full != POLARIS_NO_FULL_READ) {
		if (polaris_full_read(s, s->srv, (enum kv_full_kind)s->need_full, err) != 0)
			return -1;
		s->need_full = POLARIS_NO_FULL_READ;
		schedule_resync(s);
	} else if (s->resync_at < 0) {
		schedule_resync(s);
	}
	conn_mark_success(&s->sh.status, SOURCE_CONN_POLLING, s->pc->kv.servers[s->srv]);
	/* what a list read of a session that failed half way made wanted and left unread */
	size_t files = 0;
	if (read_unread(s, s->srv, 0, &files, err) != 0)
		goto out;
	for (;;) {
		if (stopped(s, err))
			break;
		int64_t now = gw_mono_ms();
		node_flush(s->map, now, 0);
		if (s->resync_at >= 0 && now >= s->resync_at) {
			drop_inflight(s);
			if (polaris_full_read(s, s->srv, KV_FULL_RESYNC, err) != 0)
				break;
			schedule_resync(s);
			continue;
		}
		int64_t paced = send_watches(s, now, err);
		if (paced == -2)
			break;
		int64_t wake = s->resync_at;
		int64_t dl = node_deadline(s->map);
		if (dl >= 0 && (wake < 0 || dl < wake))
			wake = dl;
		if (paced >= 0 && (wake < 0 || paced < wake))
			wake = paced;
		int64_t timeout = wake < 0 ? -1 : wake > now ? wake - now : 0;
		struct polaris_watch_result res;
		if (!polaris_watch_wait(s->watch, timeout, &res))
			continue;
		struct polaris_body *b = &s->bodies[res.slot];
		b->inflight = 0;
		char *name;
		size_t nl;
		uint64_t version;
		int rc = polaris_watch_answer(s, &res, &name, &nl, &version, err);
		http_reply_free(&res.reply);
		if (rc < 0)
			break;
		s->exchanged = 1;
		conn_mark_success(&s->sh.status, SOURCE_CONN_POLLING, s->pc->kv.servers[s->srv]);
		if (rc == 0 && gw_mono_ms() - b->sent_ms < MIN_NO_CHANGE_MS)
			b->not_before = b->sent_ms + MIN_NO_CHANGE_MS;
		if (rc == 1) {
			rc = apply_answer(s, name, nl, version, err);
			free(name);
			if (rc < 0)
				break;
		}
	}
out:
	drop_inflight(s);
	return -1;
}
