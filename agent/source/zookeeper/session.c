/*
 * The ZooKeeper handle and its reads (see session.h). Data is read into one buffer kept by
 * the session: zoo_wget copies at most the buffer's size and reports the node's real size
 * in the Stat, so a node larger than the buffer (ShenYu's PluginData carries a Base64 jar:
 * up to jute.maxbuffer, 1 MiB by default, and more where the server allows it) is read
 * again with a buffer of that size. The watch is the same (path, watcher, context) on both
 * reads, which the library keeps once.
 */
#include "source/zookeeper/session.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define ZK_BUF_START (64 * 1024)

/* Runs on the library's completion thread: queue, wake, return. */
static void on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	(void)zh;
	zk_events_push(ctx, type, state, path);
}

void zk_quiet_library(void)
{
	/* level 0 turns the library's log off altogether */
	zoo_set_debug_level((ZooLogLevel)0);
}

int zk_session_open(struct zk_session *s, const char *hosts, int timeout_ms, struct zk_events *q)
{
	s->q = q;
	errno = 0;
	s->zh = zookeeper_init(hosts, on_watch, timeout_ms, NULL, q, 0);
	if (!s->zh && errno == 0)
		errno = EINVAL;
	return s->zh ? 0 : -1;
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
	free(s->buf);
	s->buf = NULL;
	s->cap = 0;
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

static int reserve(struct zk_session *s, size_t want)
{
	if (want <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : ZK_BUF_START;
	while (cap < want)
		cap *= 2;
	char *b = realloc(s->buf, cap);
	if (!b)
		return -1;
	s->buf = b;
	s->cap = cap;
	return 0;
}

int zk_read_data(struct zk_session *s, const char *path, const char **val, size_t *len)
{
	if (!s->zh)
		return ZINVALIDSTATE;
	if (reserve(s, ZK_BUF_START) != 0)
		return ZSYSTEMERROR;
	for (;;) {
		struct Stat st;
		int n = s->cap > INT_MAX ? INT_MAX : (int)s->cap;
		int rc = zoo_wget(s->zh, path, on_watch, s->q, s->buf, &n, &st);
		if (rc != ZOK)
			return rc;
		saw(s, &st);
		if (st.dataLength > n) { /* larger than the buffer: read it again whole */
			if (reserve(s, (size_t)st.dataLength) != 0)
				return ZSYSTEMERROR;
			continue;
		}
		*val = s->buf;
		*len = n > 0 ? (size_t)n : 0; /* -1: no data at all */
		return ZOK;
	}
}

int zk_read_kids(struct zk_session *s, const char *path, struct String_vector *kids)
{
	if (!s->zh)
		return ZINVALIDSTATE;
	struct Stat st;
	memset(kids, 0, sizeof *kids);
	int rc = zoo_wget_children2(s->zh, path, on_watch, s->q, kids, &st);
	if (rc == ZOK)
		saw(s, &st);
	return rc;
}

int zk_watch_exists(struct zk_session *s, const char *path)
{
	if (!s->zh)
		return ZINVALIDSTATE;
	struct Stat st;
	int rc = zoo_wexists(s->zh, path, on_watch, s->q, &st);
	if (rc == ZOK)
		saw(s, &st);
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
