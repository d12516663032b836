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
 */
#include "cache_write.h"

#include <gwsync/cache.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends a JSON string literal of `s` (or null). The md5 tags gwsync accepts are
 * alphanumeric, but the meta entry must be valid JSON whatever a source puts there. */
static int put_json_string(char *out, size_t cap, size_t *len, const char *s)
{
	if (!s) {
		int n = snprintf(out + *len, cap - *len, "null");
		if (n < 0 || (size_t)n >= cap - *len)
			return -1;
		*len += (size_t)n;
		return 0;
	}
	if (*len + 1 >= cap)
		return -1;
	out[(*len)++] = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];
		size_t n = 0;
		if (*p == '"' || *p == '\\') {
			esc[n++] = '\\';
			esc[n++] = (char)*p;
		} else if (*p < 0x20) {
			n = (size_t)snprintf(esc, sizeof esc, "\\u%04x", *p);
		} else {
			esc[n++] = (char)*p;
		}
		if (*len + n + 1 >= cap)
			return -1;
		memcpy(out + *len, esc, n);
		*len += n;
	}
	out[(*len)++] = '"';
	out[*len] = '\0';
	return 0;
}

int cache_meta_json(char *out, size_t cap, const struct gw_version *v, size_t count, int stale)
{
	size_t len = 0;
	int n = snprintf(out, cap, "{\"md5\":");
	if (n < 0 || (size_t)n >= cap)
		return -1;
	len = (size_t)n;
	if (put_json_string(out, cap, &len, v->md5) < 0)
		return -1;
	n = snprintf(out + len, cap - len,
	             ",\"lastModifyTime\":%" PRId64 ",\"count\":%zu,\"stale\":%s}",
	             v->last_modify_time, count, stale ? "true" : "false");
	if (n < 0 || (size_t)n >= cap - len)
		return -1;
	return (int)(len + (size_t)n);
}

static MDB_val text(const char *s)
{
	MDB_val v = {strlen(s), (void *)s};
	return v;
}

static MDB_val item_value(const struct gw_item *it)
{
	MDB_val v = {it->json_len, (void *)it->json};
	return v;
}

static int fail(int rc, char *why, size_t cap, const char *group, const char *what, const char *key)
{
	/* an AI proxy API key's own part (after "::") is a credential: its first 4 characters */
	const char *sep = key && strcmp(group, "AI_PROXY_API_KEY") == 0 ? strstr(key, "::") : NULL;
	if (sep)
		snprintf(why, cap, "%s: %s key \"%.*s%.4s...\": %s", group, what,
		         (int)(sep - key + 2) > 200 ? 200 : (int)(sep - key + 2), key, sep + 2,
		         mdb_strerror(rc));
	else if (key)
		snprintf(why, cap, "%s: %s key \"%.200s\": %s", group, what, key, mdb_strerror(rc));
	else
		snprintf(why, cap, "%s: %s: %s", group, what, mdb_strerror(rc));
	return rc;
}

static int put_item(MDB_txn *txn, MDB_dbi dbi, const struct gw_item *it, const char *group,
                    char *why, size_t cap)
{
	MDB_val k = text(it->key), v = item_value(it);
	int rc = mdb_put(txn, dbi, &k, &v, 0);
	return rc ? fail(rc, why, cap, group, "cannot write", it->key) : 0;
}

static int write_whole(MDB_txn *txn, MDB_dbi dbi, const struct gw_change *ch, char *why, size_t cap)
{
	int rc = mdb_drop(txn, dbi, 0);
	if (rc)
		return fail(rc, why, cap, ch->group_name, "cannot empty the database", NULL);
	for (size_t i = 0; i < ch->n_items; i++)
		if ((rc = put_item(txn, dbi, ch->items[i], ch->group_name, why, cap)))
			return rc;
	return 0;
}

static int write_delta(MDB_txn *txn, MDB_dbi dbi, const struct gw_change *ch, char *why, size_t cap)
{
	int rc;
	for (size_t i = 0; i < ch->n_removed; i++) {
		MDB_val k = text(ch->removed[i]->key);
		rc = mdb_del(txn, dbi, &k, NULL);
		/* absent already: the count check below notices if the database had drifted */
		if (rc && rc != MDB_NOTFOUND)
			return fail(rc, why, cap, ch->group_name, "cannot delete",
			            ch->removed[i]->key);
	}
	for (size_t i = 0; i < ch->n_added; i++)
		if ((rc = put_item(txn, dbi, ch->added[i], ch->group_name, why, cap)))
			return rc;
	for (size_t i = 0; i < ch->n_updated; i++)
		if ((rc = put_item(txn, dbi, ch->updated[i].new_item, ch->group_name, why, cap)))
			return rc;
	return 0;
}

static int entries(MDB_txn *txn, MDB_dbi dbi, size_t *n)
{
	MDB_stat st;
	int rc = mdb_stat(txn, dbi, &st);
	if (rc == 0)
		*n = st.ms_entries;
	return rc;
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

static int write_meta(MDB_txn *txn, MDB_dbi meta, const struct gw_change *ch, size_t count,
                      unsigned long long *gen, char *why, size_t cap)
{
	char json[512];
	int n = cache_meta_json(json, sizeof json, &ch->version, count, ch->stale);
	if (n < 0) {
		snprintf(why, cap, "%s: version tag too long for the meta entry", ch->group_name);
		return MDB_BAD_VALSIZE;
	}
	MDB_val k = text(ch->group_name), v = {(size_t)n, json};
	int rc = mdb_put(txn, meta, &k, &v, 0);
	if (rc)
		return fail(rc, why, cap, ch->group_name, "cannot write the meta entry", NULL);
	char fmt[8];
	int fn = snprintf(fmt, sizeof fmt, "%d", GW_CACHE_FORMAT);
	MDB_val fk = text(GW_CACHE_KEY_FORMAT), fv = {(size_t)fn, fmt};
	if ((rc = mdb_put(txn, meta, &fk, &fv, 0)))
		return fail(rc, why, cap, ch->group_name, "cannot write the format", NULL);
	if ((rc = bump_generation(txn, meta, gen)))
		return fail(rc, why, cap, ch->group_name, "cannot write the generation", NULL);
	return 0;
}

int cache_write_change(MDB_env *env, const struct gw_change *ch, struct cache_write_result *res,
                       char *why, size_t cap)
{
	memset(res, 0, sizeof *res);
	MDB_txn *txn;
	MDB_dbi dbi, meta;
	int rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (rc)
		return fail(rc, why, cap, ch->group_name, "cannot begin a write transaction", NULL);
	if ((rc = mdb_dbi_open(txn, ch->group_name, MDB_CREATE, &dbi))) {
		fail(rc, why, cap, ch->group_name, "cannot open the group's database", NULL);
		goto abort;
	}
	if ((rc = mdb_dbi_open(txn, GW_CACHE_META_DB, MDB_CREATE, &meta))) {
		fail(rc, why, cap, ch->group_name, "cannot open the meta database", NULL);
		goto abort;
	}

	res->replaced = ch->previous.md5 == NULL;
	rc = res->replaced ? write_whole(txn, dbi, ch, why, cap)
	                   : write_delta(txn, dbi, ch, why, cap);
	if (rc)
		goto abort;
	if ((rc = entries(txn, dbi, &res->count))) {
		fail(rc, why, cap, ch->group_name, "cannot count the items", NULL);
		goto abort;
	}
	if (res->count != ch->n_items) {
		res->repaired = 1;
		if ((rc = write_whole(txn, dbi, ch, why, cap)))
			goto abort;
		if ((rc = entries(txn, dbi, &res->count))) {
			fail(rc, why, cap, ch->group_name, "cannot count the items", NULL);
			goto abort;
		}
	}
	if ((rc = write_meta(txn, meta, ch, res->count, &res->generation, why, cap)))
		goto abort;
	rc = mdb_txn_commit(txn); /* frees the transaction whatever it returns */
	if (rc)
		return fail(rc, why, cap, ch->group_name, "cannot commit", NULL);
	return 0;
abort:
	mdb_txn_abort(txn);
	return rc;
}
