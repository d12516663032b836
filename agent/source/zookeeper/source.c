/*
 * ZooKeeper behind the source table (see source.h): one connection (conn.h), so
 * cfg->n_servers is 1 and status row 0 is the whole ensemble. initial_sync is the first
 * try at a session and a full read, made in main's thread before any source thread runs;
 * if it fails, main loads the snapshot first and only then start() begins the source
 * thread, so nothing the thread reads can race the snapshot into the store.
 */
#include <stdlib.h>

#include "source/source.h"
#include "source/zookeeper/conn.h"

struct source {
	struct zk_conn *conn;
};

static int zk_open(struct source **out, const struct source_args *args, struct gw_err *err)
{
	struct source *s = calloc(1, sizeof *s);
	if (!s)
		return gw_errf(err, "zookeeper source: out of memory");
	if (zk_conn_new(&s->conn, args, err) != 0) {
		free(s);
		return -1;
	}
	*out = s;
	return 0;
}

static int zk_initial_sync(struct source *s, struct gw_err *err)
{
	return zk_conn_sync(s->conn, err);
}

static int zk_start(struct source *s, struct gw_err *err)
{
	return zk_conn_start(s->conn, err);
}

static void zk_stop(struct source *s)
{
	if (s)
		zk_conn_stop(s->conn);
}

static void zk_free(struct source *s)
{
	if (!s)
		return;
	zk_conn_free(s->conn);
	free(s);
}

static int zk_status(struct source *s, size_t i, struct source_conn_status *out)
{
	return s && i == 0 ? zk_conn_status(s->conn, out) : 0;
}

const struct source_ops zookeeper_source_ops = {
    .type = "zookeeper",
    .section = "zookeeper",
    .open = zk_open,
    .initial_sync = zk_initial_sync,
    .start = zk_start,
    .stop = zk_stop,
    .free = zk_free,
    .status = zk_status,
};
