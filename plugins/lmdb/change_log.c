/*
 * The change log's writer. Invariant after every commit with the log on: meta changes_from
 * = F and the `changes` database holds exactly the entries F .. generation, one per
 * generation, so a reader can trust a contiguous walk (docs/lmdb-cache.md, "Reading only
 * what changed"). A commit costs what it changed: its entry, the deletion of the entries
 * that fell out of the window (one, in the steady state), and a few O(log n) cursor
 * positions and an O(1) count to check the invariant, never a walk of the log. When the
 * check fails (the first log in an old environment, a writer without a log committed in
 * between, a hand edit), the log starts again at this commit: readers behind it then do
 * one full read, which is always correct.
 *
 * Keys are 20 zero-padded digits, so byte order (LMDB's) is generation order.
 */
#include "change_log.h"

#include <gwsync/cache.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_DIGITS 20

void change_entry_init(struct change_entry *e, int on)
{
	memset(e, 0, sizeof *e);
	e->on = on;
}

int json_add_string(struct strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	strbuf_add(b, "\"", 1);
	size_t run = 0; /* bytes copied as they are, added in one go */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		if (i > run)
			strbuf_add(b, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			strbuf_add(b, esc, 2);
		} else {
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			strbuf_add(b, esc, 6);
		}
	}
	if (n > run)
		strbuf_add(b, s + run, n - run);
	return strbuf_add(b, "\"", 1);
}

static int add_key(struct strbuf *list, size_t *n, const MDB_val *key)
{
	if (*n)
		strbuf_add(list, ",", 1);
	(*n)++;
	return json_add_string(list, key->mv_data, key->mv_size);
}

int change_entry_put(struct change_entry *e, const MDB_val *key)
{
	return e->on && !e->replace ? add_key(&e->put, &e->n_put, key) : 0;
}

int change_entry_del(struct change_entry *e, const MDB_val *key)
{
	return e->on && !e->replace ? add_key(&e->del, &e->n_del, key) : 0;
}

void change_entry_replace(struct change_entry *e)
{
	e->replace = 1;
	strbuf_reset(&e->put);
	strbuf_reset(&e->del);
	e->n_put = e->n_del = 0;
}

void change_entry_free(struct change_entry *e)
{
	strbuf_reset(&e->put);
	strbuf_reset(&e->del);
}

char *change_entry_json(const struct change_entry *e, const char *group, size_t *len)
{
	/* an out of memory in a list would leave it short: refuse rather than write an entry
	 * that misses keys */
	if (e->put.oom || e->del.oom)
		return NULL;
	struct strbuf b = {0};
	strbuf_reserve(&b, e->put.len + e->del.len + strlen(group) + 48);
	strbuf_adds(&b, "{\"group\":");
	json_add_string(&b, group, strlen(group));
	if (e->replace) {
		strbuf_adds(&b, ",\"replace\":true}");
	} else {
		strbuf_adds(&b, ",\"put\":[");
		if (e->put.len)
			strbuf_add(&b, e->put.p, e->put.len);
		strbuf_adds(&b, "],\"del\":[");
		if (e->del.len)
			strbuf_add(&b, e->del.p, e->del.len);
		strbuf_adds(&b, "]}");
	}
	*len = b.len;
	return strbuf_finish(&b);
}

static void gen_key(char out[GEN_DIGITS + 1], unsigned long long g)
{
	snprintf(out, GEN_DIGITS + 1, "%020llu", g);
}

/* A log key back to its generation; -1 if it is not 20 digits. */
static int parse_gen(const MDB_val *k, unsigned long long *g)
{
	if (k->mv_size != GEN_DIGITS)
		return -1;
	unsigned long long v = 0;
	for (size_t i = 0; i < GEN_DIGITS; i++) {
		char c = ((const char *)k->mv_data)[i];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (unsigned long long)(c - '0');
	}
	*g = v;
	return 0;
}

/* meta changes_from: 1 and *from when present and a number, else 0. */
static int read_from(MDB_txn *txn, MDB_dbi meta, unsigned long long *from)
{
	MDB_val k = {strlen(GW_CACHE_KEY_CHANGES_FROM), GW_CACHE_KEY_CHANGES_FROM}, v;
	if (mdb_get(txn, meta, &k, &v) != 0 || v.mv_size == 0 || v.mv_size > GEN_DIGITS)
		return 0;
	unsigned long long f = 0;
	for (size_t i = 0; i < v.mv_size; i++) {
		char c = ((const char *)v.mv_data)[i];
		if (c < '0' || c > '9')
			return 0;
		f = f * 10 + (unsigned long long)(c - '0');
	}
	*from = f;
	return 1;
}

/* The generation of the first or last entry (op MDB_FIRST / MDB_LAST): *found = 1 and *g,
 * or *found = 0 when the log is empty or that key is not a generation. 0 or an LMDB error. */
static int edge(MDB_txn *txn, MDB_dbi log, MDB_cursor_op op, unsigned long long *g, int *found)
{
	*found = 0;
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn, log, &c);
	if (rc)
		return rc;
	MDB_val k, v;
	rc = mdb_cursor_get(c, &k, &v, op);
	mdb_cursor_close(c);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc == 0)
		*found = parse_gen(&k, g) == 0;
	return rc;
}

/* Deletes the entries whose keys sort before generation `from` (what fell out of the
 * window, and any key that is not a generation but sorts there). */
static int trim(MDB_txn *txn, MDB_dbi log, unsigned long long from)
{
	char lo[GEN_DIGITS + 1];
	gen_key(lo, from);
	MDB_cursor *c;
	int rc = mdb_cursor_open(txn, log, &c);
	if (rc)
		return rc;
	MDB_val k, v;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_FIRST)) == 0) {
		size_t n = k.mv_size < GEN_DIGITS ? k.mv_size : GEN_DIGITS;
		int cmp = memcmp(k.mv_data, lo, n);
		if (cmp > 0 || (cmp == 0 && k.mv_size >= GEN_DIGITS))
			break;
		if ((rc = mdb_cursor_del(c, 0)))
			break;
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int put_entry(MDB_txn *txn, MDB_dbi log, unsigned long long gen, const char *entry,
                     size_t len)
{
	char key[GEN_DIGITS + 1];
	gen_key(key, gen);
	MDB_val k = {GEN_DIGITS, key}, v = {len, (void *)entry};
	return mdb_put(txn, log, &k, &v, 0);
}

/* Is the log exactly the entries from .. gen? (first, then the count: with distinct keys
 * between from and gen, a count of gen - from + 1 leaves no room for a hole) */
static int contiguous(MDB_txn *txn, MDB_dbi log, unsigned long long from, unsigned long long gen,
                      int *ok)
{
	unsigned long long first = 0, last = 0;
	int has_first, has_last;
	MDB_stat st;
	int rc;
	*ok = 0;
	if ((rc = edge(txn, log, MDB_FIRST, &first, &has_first)) ||
	    (rc = edge(txn, log, MDB_LAST, &last, &has_last)) || (rc = mdb_stat(txn, log, &st)))
		return rc;
	*ok = has_first && has_last && first == from && last == gen &&
	      st.ms_entries == gen - from + 1;
	return 0;
}

static int off(MDB_txn *txn, MDB_dbi meta, const char **what)
{
	MDB_dbi log;
	int rc = mdb_dbi_open(txn, GW_CACHE_CHANGES_DB, 0, &log);
	if (rc == 0) {
		MDB_stat st;
		*what = "cannot empty the change log";
		if ((rc = mdb_stat(txn, log, &st)) == 0 && st.ms_entries)
			rc = mdb_drop(txn, log, 0);
	} else if (rc == MDB_NOTFOUND) {
		rc = 0;
	} else {
		*what = "cannot open the change log";
	}
	if (rc)
		return rc;
	MDB_val k = {strlen(GW_CACHE_KEY_CHANGES_FROM), GW_CACHE_KEY_CHANGES_FROM};
	rc = mdb_del(txn, meta, &k, NULL);
	*what = "cannot delete changes_from";
	return rc == MDB_NOTFOUND ? 0 : rc;
}

int change_log_commit(MDB_txn *txn, MDB_dbi meta, unsigned long long gen, unsigned long long keep,
                      const char *entry, size_t len, const char **what)
{
	if (keep == 0)
		return off(txn, meta, what);
	MDB_dbi log;
	int rc = mdb_dbi_open(txn, GW_CACHE_CHANGES_DB, MDB_CREATE, &log);
	if (rc) {
		*what = "cannot open the change log";
		return rc;
	}
	*what = "cannot write the change log";
	unsigned long long from = 0, last = 0;
	int fresh = !read_from(txn, meta, &from) || from > gen;
	if (!fresh) {
		/* this entry continues the log only if the log ends at the previous commit */
		int found;
		if ((rc = edge(txn, log, MDB_LAST, &last, &found)))
			return rc;
		fresh = !found || last + 1 != gen;
	}
	if (fresh) {
		if ((rc = mdb_drop(txn, log, 0)))
			return rc;
		from = gen;
	}
	if ((rc = put_entry(txn, log, gen, entry, len)))
		return rc;
	if (gen >= keep && gen - keep + 1 > from) {
		from = gen - keep + 1;
		*what = "cannot trim the change log";
		if ((rc = trim(txn, log, from)))
			return rc;
	}
	int ok = 0;
	if ((rc = contiguous(txn, log, from, gen, &ok)))
		return rc;
	if (!ok) {
		/* a hole or a stray key inside the window: start again here */
		if ((rc = mdb_drop(txn, log, 0)) || (rc = put_entry(txn, log, gen, entry, len)))
			return rc;
		from = gen;
	}
	char val[GEN_DIGITS + 1];
	int n = snprintf(val, sizeof val, "%llu", from);
	MDB_val k = {strlen(GW_CACHE_KEY_CHANGES_FROM), GW_CACHE_KEY_CHANGES_FROM};
	MDB_val v = {(size_t)n, val};
	*what = "cannot write changes_from";
	return mdb_put(txn, meta, &k, &v, 0);
}
