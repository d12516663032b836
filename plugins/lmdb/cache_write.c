/*
 * Writing one change into the cache (layout: docs/lmdb-cache.md, names: gwsync/cache.h).
 *
 * The transaction is the unit of truth: every put and delete of a change, the group's meta
 * entry and the generation go into one write transaction, so readers see the old version or
 * the new one, never a mix, and a failure anywhere aborts all of it (LMDB rolls back; the
 * dispatcher retries the change later from what the cache last committed).
 *
 * Two ways to write a group:
 *  - replace: when the subscriber has delivered nothing for the group yet
 *    (previous.md5 == NULL: the first change after every start), empty its database and
 *    put every item, so items an older run left behind never survive;
 *  - delta: put added and updated items, delete removed ones. The result's entry count is
 *    then compared with the version's item count; if they differ the database did not hold
 *    what we last committed (edited by hand, or restored from a copy), and the group is
 *    rewritten whole in the same transaction rather than left wrong.
 *
 * Items are stored under cache_key_stored()'s key (long keys derived, cache_key.c), and the
 * commit's change-log entry (change_log.c) names those stored keys: what the delta put and
 * deleted, or "replace" when the group was written whole.
 */
#include "cache_write.h"

#include <errno.h>
#include <gwsync/cache.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache_key.h"
#include "change_log.h"
#include "shared/strbuf.h"

int cache_meta_json(char *out, size_t cap, const struct gw_version *v, size_t count, int stale)
{
	/* The md5 tags gwsync accepts are alphanumeric, but the meta entry must be valid JSON
	 * whatever a source puts there. */
	struct strbuf b = {0};
	strbuf_adds(&b, "{\"md5\":");
	if (v->md5)
		json_add_string(&b, v->md5, strlen(v->md5));
	else
		strbuf_adds(&b, "null");
	strbuf_addf(&b, ",\"lastModifyTime\":%" PRId64 ",\"count\":%zu,\"stale\":%s}",
	            v->last_modify_time, count, stale ? "true" : "false");
	int n = -1;
	if (!b.oom && b.len < cap) {
		memcpy(out, b.p, b.len + 1);
		n = (int)b.len;
	}
	strbuf_reset(&b);
	return n;
}

/* One commit in the making. */
struct wctx {
	const struct cache_writer *w;
	const struct gw_change *ch;
	MDB_txn *txn;
	MDB_dbi dbi, meta;
	struct change_entry log;
	struct gw_err *err;
};

static MDB_val text(const char *s)
{
	MDB_val v = {strlen(s), (void *)s};
	return v;
}

static int fail(struct wctx *x, int rc, const char *what, const char *key)
{
	if (x->w->cause)
		rc = x->w->cause(x->w->cause_arg, rc);
	const char *group = x->ch->group_name;
	struct gw_err *err = x->err;
	/* an AI proxy API key's own part (after "::") is a credential: its first 4 characters */
	const char *sep = key && strcmp(group, "AI_PROXY_API_KEY") == 0 ? strstr(key, "::") : NULL;
	if (sep)
		gw_errf(err, "%s: %s key \"%.*s%.4s...\": %s", group, what,
		        (int)(sep - key + 2) > 200 ? 200 : (int)(sep - key + 2), key, sep + 2,
		        mdb_strerror(rc));
	else if (key)
		gw_errf(err, "%s: %s key \"%.200s\": %s", group, what, key, mdb_strerror(rc));
	else
		gw_errf(err, "%s: %s: %s", group, what, mdb_strerror(rc));
	return rc;
}

static int stored(struct wctx *x, const char *key, struct cache_key *k)
{
	return cache_key_stored(key, k) == 0 ? 0 : fail(x, ENOMEM, "cannot hash the long", key);
}

/* Entry i of a list of the change (NULL only when the agent is out of memory). */
static const struct gw_item *entry(const struct wctx *x, enum gw_list list, size_t i)
{
	return gw_change_entry(x->w->host, x->ch, list, i);
}

static int put_item(struct wctx *x, const struct gw_item *it)
{
	if (!it)
		return fail(x, ENOMEM, "cannot read the change", NULL);
	struct cache_key k;
	int rc = stored(x, it->key, &k);
	if (rc)
		return rc;
	MDB_val v = {it->json_len, (void *)it->json};
	if ((rc = mdb_put(x->txn, x->dbi, &k.val, &v, 0)))
		return fail(x, rc, "cannot write", it->key);
	if (change_entry_put(&x->log, &k.val))
		return fail(x, ENOMEM, "cannot log", it->key);
	return 0;
}

static int write_whole(struct wctx *x)
{
	change_entry_replace(&x->log);
	int rc = mdb_drop(x->txn, x->dbi, 0);
	if (rc)
		return fail(x, rc, "cannot empty the database", NULL);
	for (size_t i = 0; i < x->ch->n_items; i++)
		if ((rc = put_item(x, entry(x, GW_LIST_ITEMS, i))))
			return rc;
	return 0;
}

static int write_delta(struct wctx *x)
{
	const struct gw_change *ch = x->ch;
	int rc;
	for (size_t i = 0; i < ch->n_removed; i++) {
		const struct gw_item *it = entry(x, GW_LIST_REMOVED, i);
		if (!it)
			return fail(x, ENOMEM, "cannot read the change", NULL);
		const char *key = it->key;
		struct cache_key k;
		if ((rc = stored(x, key, &k)))
			return rc;
		rc = mdb_del(x->txn, x->dbi, &k.val, NULL);
		/* absent already: the count check below notices if the database had drifted */
		if (rc && rc != MDB_NOTFOUND)
			return fail(x, rc, "cannot delete", key);
		if (change_entry_del(&x->log, &k.val))
			return fail(x, ENOMEM, "cannot log", key);
	}
	for (size_t i = 0; i < ch->n_added; i++)
		if ((rc = put_item(x, entry(x, GW_LIST_ADDED, i))))
			return rc;
	for (size_t i = 0; i < ch->n_updated; i++)
		if ((rc = put_item(x, entry(x, GW_LIST_UPDATED_NEW, i))))
			return rc;
	return 0;
}

static int entries(struct wctx *x, size_t *n)
{
	MDB_stat st;
	int rc = mdb_stat(x->txn, x->dbi, &st);
	if (rc)
		return fail(x, rc, "cannot count the items", NULL);
	*n = st.ms_entries;
	return 0;
}

/* generation + 1 (a missing or unreadable counter restarts at 1). */
static int bump_generation(MDB_txn *txn, MDB_dbi meta, unsigned long long *gen)
{
	MDB_val k = text(GW_CACHE_KEY_GENERATION), v;
	unsigned long long g = 0;
	if (mdb_get(txn, meta, &k, &v) == 0 && v.mv_size < 24) {
		char buf[24];
		memcpy(buf, v.mv_data, v.mv_size);
		buf[v.mv_size] = '\0';
		g = strtoull(buf, NULL, 10);
	}
	g++;
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%llu", g);
	MDB_val nv = {(size_t)n, buf};
	int rc = mdb_put(txn, meta, &k, &nv, 0);
	if (rc == 0)
		*gen = g;
	return rc;
}

static int write_meta(struct wctx *x, size_t count, unsigned long long *gen)
{
	char json[512];
	int n = cache_meta_json(json, sizeof json, &x->ch->version, count, x->ch->stale);
	if (n < 0) {
		gw_errf(x->err, "%s: version tag too long for the meta entry", x->ch->group_name);
		return MDB_BAD_VALSIZE;
	}
	MDB_val k = text(x->ch->group_name), v = {(size_t)n, json};
	int rc = mdb_put(x->txn, x->meta, &k, &v, 0);
	if (rc)
		return fail(x, rc, "cannot write the meta entry", NULL);
	char fmt[8];
	int fn = snprintf(fmt, sizeof fmt, "%d", GW_CACHE_FORMAT);
	MDB_val fk = text(GW_CACHE_KEY_FORMAT), fv = {(size_t)fn, fmt};
	if ((rc = mdb_put(x->txn, x->meta, &fk, &fv, 0)))
		return fail(x, rc, "cannot write the format", NULL);
	if ((rc = bump_generation(x->txn, x->meta, gen)))
		return fail(x, rc, "cannot write the generation", NULL);
	return 0;
}

static int write_log(struct wctx *x, unsigned long long gen)
{
	const char *what = "cannot write the change log";
	size_t len = 0;
	char *entry = NULL;
	if (x->w->change_log) {
		entry = change_entry_json(&x->log, x->ch->group_name, &len);
		if (!entry)
			return fail(x, ENOMEM, what, NULL);
	}
	int rc = change_log_commit(x->txn, x->meta, gen, x->w->change_log, entry, len, &what);
	free(entry);
	return rc ? fail(x, rc, what, NULL) : 0;
}

static int write_change(struct wctx *x, struct cache_write_result *res)
{
	const struct gw_change *ch = x->ch;
	int rc;
	if ((rc = mdb_dbi_open(x->txn, ch->group_name, MDB_CREATE, &x->dbi)))
		return fail(x, rc, "cannot open the group's database", NULL);
	if ((rc = mdb_dbi_open(x->txn, GW_CACHE_META_DB, MDB_CREATE, &x->meta)))
		return fail(x, rc, "cannot open the meta database", NULL);

	res->replaced = ch->previous.md5 == NULL;
	if ((rc = res->replaced ? write_whole(x) : write_delta(x)) ||
	    (rc = entries(x, &res->count)))
		return rc;
	if (res->count != ch->n_items) {
		res->repaired = 1;
		if ((rc = write_whole(x)) || (rc = entries(x, &res->count)))
			return rc;
	}
	if ((rc = write_meta(x, res->count, &res->generation)))
		return rc;
	return write_log(x, res->generation);
}

int cache_write_change(const struct cache_writer *w, const struct gw_change *ch,
                       struct cache_write_result *res, struct gw_err *err)
{
	memset(res, 0, sizeof *res);
	struct wctx x = {.w = w, .ch = ch, .err = err};
	change_entry_init(&x.log, w->change_log > 0);
	int rc = mdb_txn_begin(w->env, NULL, 0, &x.txn);
	if (rc) {
		change_entry_free(&x.log);
		return fail(&x, rc, "cannot begin a write transaction", NULL);
	}
	rc = write_change(&x, res);
	change_entry_free(&x.log);
	if (rc) {
		mdb_txn_abort(x.txn);
		return rc;
	}
	rc = mdb_txn_commit(x.txn); /* frees the transaction whatever it returns */
	return rc ? fail(&x, rc, "cannot commit", NULL) : 0;
}
