/*
 * The ZooKeeper handle and its reads (see session.h). Each read is an asynchronous call
 * whose completion (on the library's completion thread) copies what it was given into the
 * session's reply, since the library frees its buffers when the completion returns, and
 * then marks the reply done on the event queue. The source thread waits for that or for
 * stop. After a stop no read is started again, so a reply still in flight can only be
 * completed by zookeeper_close(), before the session is freed.
 *
 * Thread names: zookeeper_init() starts the library's two threads (network I/O and
 * completions) and the library offers no hook that runs on them at their start. Linux gives
 * a new thread its creator's name, so the handle is made on a short-lived thread named
 * "zk-client" and both library threads start with that name (and, through
 * gw_thread_start(), with every asynchronous signal blocked). The completion thread then
 * names itself "zk-events" in the first callback it runs. No callback of ours ever runs on
 * the I/O thread: it only queues replies and events for the completion thread, and its one
 * hook, the log callback, is never called with the library's log off (zk_quiet_library);
 * so it keeps "zk-client".
 */
#include "source/zookeeper/session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"

#define CLIENT_THREAD "zk-client" /* the library's threads, as they start */
#define EVENTS_THREAD "zk-events" /* the completion thread, once it ran a callback */

/* The first callback on the completion thread names it. Only a thread still named as the
 * library's threads start is renamed: a callback that zookeeper_close() completes on the
 * closing thread (the source's, or main at exit) leaves that thread's name alone. */
static void name_events_thread(struct zk_session *s)
{
	if (s->events_named)
		return;
	char name[16];
	if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 ||
	    strcmp(name, CLIENT_THREAD) != 0)
		return;
	pthread_setname_np(pthread_self(), EVENTS_THREAD); /* a courtesy: ignore failure */
	s->events_named = 1;
}

/* Runs on the library's completion thread: queue, wake, return. */
static void on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh;
	struct zk_session *s = ctx;
	name_events_thread(s);
	zk_events_push(s->q, type, state, path);
}

void zk_quiet_library(void)
{
	/* level 0 turns the library's log off altogether */
	zoo_set_debug_level((ZooLogLevel)0);
}

/* What the short-lived thread that makes the handle is given and hands back. */
struct opener {
	struct zk_session *s;
	const char *hosts;
	int timeout_ms;
	zhandle_t *zh;
	int err;
};

static void *open_handle(void *arg)
{
	struct opener *o = arg;
	errno = 0;
	o->zh = zookeeper_init(o->hosts, on_watch, o->timeout_ms, NULL, o->s, 0);
	o->err = errno;
	return NULL;
}

int zk_session_open(struct zk_session *s, const char *hosts, int timeout_ms, struct zk_events *q)
{
	s->q = q;
	s->self = s;
	s->events_named = 0; /* a new completion thread; the old one was joined at close */
	struct opener o = {s, hosts, timeout_ms, NULL, 0};
	pthread_t t;
	int rc = gw_thread_start(&t, CLIENT_THREAD, open_handle, &o);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_join(t, NULL);
	s->zh = o.zh;
	if (!s->zh)
		errno = o.err ? o.err : EINVAL;
	return s->zh ? 0 : -1;
}

static void reply_reset(struct zk_reply *r)
{
	free(r->data);
	if (r->kids.data)
		deallocate_String_vector(&r->kids);
	memset(r, 0, sizeof *r);
}

void zk_session_close(struct zk_session *s)
{
	if (s->zh)
		zookeeper_close(s->zh);
	s->zh = NULL;
}

void zk_session_free(struct zk_session *s)
{
	zk_session_close(s);
	reply_reset(&s->reply);
}

int zk_session_state(const struct zk_session *s)
{
	return s->zh ? zoo_state(s->zh) : 0;
}

int64_t zk_session_id(const struct zk_session *s)
{
	if (!s->zh || zoo_state(s->zh) != ZOO_CONNECTED_STATE)
		return 0;
	const clientid_t *id = zoo_client_id(s->zh);
	return id ? id->client_id : 0;
}

/* ---------------------------------------------------------------- completions */

static void finish(struct zk_session *s, int rc, const struct Stat *st)
{
	s->reply.rc = rc;
	if (st)
		s->reply.st = *st;
	zk_events_mark_done(s->q, &s->reply.done);
}

static void on_data(int rc, const char *value, int value_len, const struct Stat *st,
                    const void *data)
{
	struct zk_session *s = *(struct zk_session *const *)data;
	name_events_thread(s);
	if (rc == ZOK && value && value_len > 0) {
		s->reply.data = malloc((size_t)value_len);
		if (s->reply.data) {
			memcpy(s->reply.data, value, (size_t)value_len);
			s->reply.len = (size_t)value_len;
		} else {
			rc = ZSYSTEMERROR;
		}
	}
	finish(s, rc, rc == ZOK ? st : NULL);
}

static void on_kids(int rc, const struct String_vector *kids, const struct Stat *st,
                    const void *data)
{
	struct zk_session *s = *(struct zk_session *const *)data;
	name_events_thread(s);
	if (rc == ZOK && kids && kids->count > 0) {
		struct String_vector *v = &s->reply.kids;
		if (allocate_String_vector(v, kids->count) != 0 || !v->data) {
			rc = ZSYSTEMERROR;
		} else {
			for (int32_t i = 0; i < kids->count; i++) {
				v->data[i] = strdup(kids->data[i]);
				if (!v->data[i])
					rc = ZSYSTEMERROR; /* the rest stay NULL: freed alike */
			}
		}
	}
	finish(s, rc, rc == ZOK ? st : NULL);
}

static void on_stat(int rc, const struct Stat *st, const void *data)
{
	struct zk_session *s = *(struct zk_session *const *)data;
	name_events_thread(s);
	finish(s, rc, rc == ZOK ? st : NULL);
}

/* ---------------------------------------------------------------- reads */

static void saw(struct zk_session *s, const struct Stat *st)
{
	int64_t z = st->czxid;
	if (st->mzxid > z)
		z = st->mzxid;
	if (st->pzxid > z)
		z = st->pzxid;
	if (z > s->max_zxid)
		s->max_zxid = z;
}

/* Before a read: none while stopping (a reply in flight may still be written), a fresh
 * reply otherwise. */
static int begin(struct zk_session *s)
{
	if (!s->zh)
		return ZINVALIDSTATE;
	if (zk_events_stopping(s->q))
		return ZCLOSING;
	reply_reset(&s->reply);
	return ZOK;
}

/* After submitting: the reply's code, or ZCLOSING if stop came first. */
static int await(struct zk_session *s, int submitted)
{
	if (submitted != ZOK)
		return submitted;
	if (zk_events_wait_done(s->q, &s->reply.done) != 0)
		return ZCLOSING;
	if (s->reply.rc == ZOK)
		saw(s, &s->reply.st);
	return s->reply.rc;
}

int zk_read_data(struct zk_session *s, const char *path, const char **val, size_t *len)
{
	int rc = begin(s);
	if (rc == ZOK)
		rc = await(s, zoo_awget(s->zh, path, on_watch, s, on_data, &s->self));
	if (rc == ZOK) {
		*val = s->reply.data ? s->reply.data : "";
		*len = s->reply.len;
	}
	return rc;
}

int zk_read_kids(struct zk_session *s, const char *path, struct String_vector *kids)
{
	memset(kids, 0, sizeof *kids);
	int rc = begin(s);
	if (rc == ZOK)
		rc = await(s, zoo_awget_children2(s->zh, path, on_watch, s, on_kids, &s->self));
	if (rc == ZOK) {
		*kids = s->reply.kids; /* handed over */
		memset(&s->reply.kids, 0, sizeof s->reply.kids);
	}
	return rc;
}

int zk_watch_exists(struct zk_session *s, const char *path)
{
	int rc = begin(s);
	if (rc == ZOK)
		rc = await(s, zoo_awexists(s->zh, path, on_watch, s, on_stat, &s->self));
	return rc;
}

enum sync_fail zk_fail_reason(int rc)
{
	if (rc == ZOPERATIONTIMEOUT)
		return SYNC_FAIL_TIMEOUT;
	if (rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZSESSIONMOVED)
		return SYNC_FAIL_SESSION;
	if (rc == ZNOAUTH || rc == ZAUTHFAILED)
		return SYNC_FAIL_AUTH;
	return SYNC_FAIL_CONNECT;
}

int zk_rc_ends_session(int rc)
{
	return rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE || rc == ZAUTHFAILED ||
	       rc == ZSESSIONMOVED;
}
