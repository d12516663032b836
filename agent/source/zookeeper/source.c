/*
 * ZooKeeper behind the source table (see source.h): one connection (conn.h), so
 * conns() is 1 and status row 0 is the whole ensemble, named by its label. initial_sync is the
 * first try at a session and a full read, made in main's thread before any source thread runs; if
 * it fails, main loads the snapshot first and only then start() begins the source thread, so
 * nothing the thread reads can race the snapshot into the store.
 */
#include <stdlib.h>
#include <string.h>

#include "source/source.h"
#include "source/zookeeper/config.h"
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

static int zk_selects(const struct cfg *cfg)
{
	return cfg->section && strcmp(cfg->section, "zookeeper") == 0;
}

static void zk_summary(const struct cfg *cfg, char *buf, size_t cap)
{
	const struct zk_config *zc = zk_config(cfg);
	kv_config_summary(zc ? &zc->kv : NULL, "zookeeper", buf, cap);
}

static size_t zk_conns(const struct cfg *cfg)
{
	return zk_config(cfg) ? 1 : 0;
}

static const char *zk_conn_name(const struct cfg *cfg, size_t i)
{
	const struct zk_config *zc = zk_config(cfg);
	return zc && i == 0 && zc->kv.label ? zc->kv.label : "";
}

const struct source_ops zookeeper_source_ops = {
    .type = "zookeeper",
    .section = "zookeeper",
    .config = &zookeeper_config_section,
    .selects = zk_selects,
    .summary = zk_summary,
    .running = "path store session(s)",
    .conns = zk_conns,
    .conn_name = zk_conn_name,
    .open = zk_open,
    .initial_sync = zk_initial_sync,
    .start = zk_start,
    .stop = zk_stop,
    .free = zk_free,
    .status = zk_status,
};
