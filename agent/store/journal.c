/*
 * The snapshot's journal (see journal.h). A record is what the delta of the two versions
 * says (diff.h: the delta a version carries from its predecessor when the writer holds
 * that one, the merge of both key indexes otherwise), with each new item's position, so
 * replaying it gives the version itself, order included. Replay turns a record into
 * positional edits of the version before it (model/edit.h), tagged with the record's md5:
 * nothing is hashed or sorted per item.
 */
#include "store/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/atomic_file.h"
#include "core/jspan.h"
#include "core/readfile.h"
#include "shared/strbuf.h"
#include "model/diff.h"
#include "model/digest.h"
#include "model/edit.h"
#include "model/groups.h"
#include "model/patch.h"

#define MAGIC       "gwsync-journal 1 "
#define JOURNAL_MAX (SIZE_MAX / 2)

void journal_path(char *buf, size_t cap, const char *dir, enum gw_group group)
{
	snprintf(buf, cap, "%s/%s.journal", dir, gw_group_name(group));
}

/* 32 hex digits of the payload's digest. 0 or -1. */
static int payload_sum(const char *p, size_t n, char out[33])
{
	struct digester *dg = digester_new();
	struct item_digest d;
	int rc = dg && digest_item(dg, p, n, &d) == 0 ? 0 : -1;
	digester_free(dg);
	if (rc == 0)
		snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, d.hi, d.lo);
	return rc;
}

/* A key as a JSON string (keys are decoded text: quote, backslash and control characters
 * escaped, everything else as it is). */
static void add_string(struct strbuf *b, const char *s, size_t n)
{
	strbuf_add(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; p < (const unsigned char *)s + n;
	     p++) {
		if (*p == '"' || *p == '\\')
			strbuf_addf(b, "\\%c", *p);
		else if (*p < 0x20)
			strbuf_addf(b, "\\u%04x", *p);
		else
			strbuf_add(b, (const char *)p, 1);
	}
	strbuf_add(b, "\"", 1);
}

/* A new item and where it is in the new version. */
struct put {
	size_t at;
	const struct gd_item *it;
};

static int cmp_put(const void *a, const void *b)
{
	const struct put *x = a, *y = b;
	return (x->at > y->at) - (x->at < y->at);
}

/* The record's payload for the change c (from `from` to `to`; its items are theirs).
 * NULL on out of memory. */
static char *payload(const struct group_data *from, const struct group_data *to,
                     const struct diff *c, size_t *len)
{
	size_t np = c->n_added + c->n_updated, bytes = 256, klen;
	struct put *v = malloc((np ? np : 1) * sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < np; i++) {
		const struct gd_item *it =
		    i < c->n_added ? c->added[i] : c->updated[i - c->n_added].new_item;
		v[i] = (struct put){(size_t)(it - to->items), it};
		bytes += it->json_len + 24;
	}
	qsort(v, np, sizeof *v, cmp_put);
	for (size_t i = 0; i < c->n_removed; i++) {
		gd_key(c->removed[i], &klen);
		bytes += klen + 8;
	}
	struct strbuf b = {0};
	strbuf_reserve(&b, bytes);
	strbuf_addf(&b,
	            "{\"from\":\"%s\",\"md5\":\"%s\",\"lastModifyTime\":%" PRId64
	            ",\"count\":%zu,\"removed\":[",
	            from->md5, to->md5, to->last_modify_time, to->n_items);
	for (size_t i = 0; i < c->n_removed; i++) {
		if (i)
			strbuf_add(&b, ",", 1);
		const char *k = gd_key(c->removed[i], &klen);
		add_string(&b, k, klen);
	}
	strbuf_adds(&b, "],\"at\":[");
	for (size_t i = 0; i < np; i++)
		strbuf_addf(&b, "%s%zu", i ? "," : "", v[i].at);
	strbuf_adds(&b, "],\"items\":[");
	for (size_t i = 0; i < np; i++) {
		if (i)
			strbuf_add(&b, ",", 1);
		strbuf_add(&b, v[i].it->json, v[i].it->json_len);
	}
	strbuf_adds(&b, "]}");
	free(v);
	*len = b.len;
	return strbuf_finish(&b);
}

/* Where key is in gd, or -1. */
static long position(const struct group_data *gd, const char *key)
{
	int found;
	size_t r = group_data_rank(gd, key, &found);
	return found ? (long)group_data_at(gd, r) : -1;
}

/* The items both versions hold unchanged keep their relative order. Always so for a
 * version made from `from` by edits; a full list from an admin may reorder them, and a
 * record, which places only what changed, could not say so: the group file is then
 * written whole. Linear: for versions that carry no delta (their change was linear to
 * find). 1 kept, 0 not, -1 out of memory. */
static int order_kept(const struct group_data *from, const struct group_data *to,
                      const struct diff *c)
{
	size_t nf = from->n_items, nt = to->n_items;
	uint8_t *mf = calloc(nf + 1, 1), *mt = calloc(nt + 1, 1);
	int rc = -1;
	if (!mf || !mt)
		goto out;
	/* a delta's items are its versions' own: where one is, is its place in their list */
	for (size_t i = 0; i < c->n_removed; i++)
		mf[c->removed[i] - from->items] = 1;
	for (size_t i = 0; i < c->n_updated; i++) {
		mf[c->updated[i].old_item - from->items] = 1;
		mt[c->updated[i].new_item - to->items] = 1;
	}
	for (size_t i = 0; i < c->n_added; i++)
		mt[c->added[i] - to->items] = 1;
	size_t i = 0, j = 0;
	rc = 1;
	for (;;) {
		while (i < nf && mf[i])
			i++;
		while (j < nt && mt[j])
			j++;
		if (i == nf || j == nt)
			break;
		if (gd_keycmp(&from->items[i++], &to->items[j++]) != 0) {
			rc = 0;
			break;
		}
	}
out:
	free(mf);
	free(mt);
	return rc;
}

/* Write all of buf. 0 or -1 (errno). */
static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

int journal_append(const char *dir, struct journal *js, const struct group_data *from,
                   const struct group_data *to, struct gw_err *err)
{
	const char *gname = gw_group_name(to->group);
	if (js->broken || !js->base_md5[0] || js->records >= JOURNAL_MAX_RECORDS)
		return 1;
	struct diff d;
	if (diff_build(&d, to->group, from, to, err) != 0)
		return -1;
	int kept = d.carried ? 1 : order_kept(from, to, &d);
	if (kept <= 0) {
		diff_free(&d);
		return kept < 0 ? gw_errf(err, "journal of %s: out of memory", gname) : 1;
	}
	size_t plen = 0;
	char *pl = payload(from, to, &d, &plen);
	diff_free(&d);
	char sum[33];
	if (!pl || payload_sum(pl, plen, sum) != 0) {
		free(pl);
		return gw_errf(err, "journal of %s: out of memory", gname);
	}
	struct strbuf rec = {0};
	if (js->bytes == 0)
		strbuf_addf(&rec, MAGIC "%s %" PRId64 "\n", js->base_md5, js->base_lmt);
	strbuf_addf(&rec, "%zu %s\n", plen, sum);
	strbuf_add(&rec, pl, plen);
	strbuf_add(&rec, "\n", 1);
	free(pl);
	size_t n = rec.len;
	char *text = strbuf_finish(&rec);
	if (!text)
		return gw_errf(err, "journal of %s: out of memory", gname);
	if (js->bytes + n > js->base_bytes / 2) { /* as large as a rewrite: do that */
		free(text);
		return 1;
	}
	char path[4096];
	journal_path(path, sizeof path, dir, to->group);
	int created = js->bytes == 0;
	int fd =
	    open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (created ? O_TRUNC : 0), 0600);
	int rc = fd < 0 || write_all(fd, text, n) != 0 || fdatasync(fd) != 0 ? -1 : 0;
	int e = errno;
	struct gw_err dirr = {0};
	if (rc == 0 && created && atomic_file_sync_dir(dir, &dirr) != 0)
		rc = -1;
	if (rc != 0) {
		if (fd >= 0 && ftruncate(fd, (off_t)js->bytes) != 0)
			e = errno ? errno : e; /* the next write is whole anyway (broken) */
		js->broken = 1;
		gw_errf(err, "journal %s: %s", path, dirr.msg[0] ? dirr.msg : strerror(e));
	} else {
		js->bytes += n;
		js->records++;
	}
	if (fd >= 0)
		close(fd);
	free(text);
	return rc;
}

int journal_restart(const char *dir, struct journal *js, const struct group_data *gd,
                    size_t base_bytes, struct gw_err *err)
{
	memset(js, 0, sizeof *js);
	memcpy(js->base_md5, gd->md5, sizeof js->base_md5);
	js->base_lmt = gd->last_modify_time;
	js->base_bytes = base_bytes;
	char path[4096];
	journal_path(path, sizeof path, dir, gd->group);
	if (unlink(path) != 0 && errno != ENOENT)
		return gw_errf(err, "journal %s: %s", path, strerror(errno));
	return 0;
}

/* ---------------------------------------------------------------- replay */

/* One record's members. */
struct record {
	json_t *from, *md5, *lmt, *count, *removed, *at;
	const char *items;
	size_t items_len;
};

static void record_free(struct record *r)
{
	json_decref(r->from);
	json_decref(r->md5);
	json_decref(r->lmt);
	json_decref(r->count);
	json_decref(r->removed);
	json_decref(r->at);
}

/* The payload's members into r. 0, or -1 with why set. */
static int record_read(const char *p, size_t n, struct record *r, struct gw_err *why)
{
	struct jspan_iter it;
	struct jspan_member m;
	int k;
	memset(r, 0, sizeof *r);
	if (jspan_object_begin(&it, p, p + n) != 0)
		return gw_errf(why, "a record is not a JSON object");
	while ((k = jspan_object_next(&it, &m)) == 1) {
		json_t **slot = NULL;
		if (jspan_key_is(&m, "items") == 1) {
			r->items = m.value;
			r->items_len = m.value_len;
			continue;
		}
		if (jspan_key_is(&m, "from") == 1)
			slot = &r->from;
		else if (jspan_key_is(&m, "md5") == 1)
			slot = &r->md5;
		else if (jspan_key_is(&m, "lastModifyTime") == 1)
			slot = &r->lmt;
		else if (jspan_key_is(&m, "count") == 1)
			slot = &r->count;
		else if (jspan_key_is(&m, "removed") == 1)
			slot = &r->removed;
		else if (jspan_key_is(&m, "at") == 1)
			slot = &r->at;
		if (!slot || *slot)
			continue;
		if (!(*slot = json_loadb(m.value, m.value_len, JSON_DECODE_ANY, NULL)))
			return gw_errf(why, "a record holds invalid JSON");
	}
	if (k != 0 || !json_is_string(r->from) || !json_is_string(r->md5) ||
	    json_string_length(r->md5) == 0 || json_string_length(r->md5) > 64 ||
	    !json_is_integer(r->lmt) || !json_is_integer(r->count) ||
	    json_integer_value(r->count) < 0 || !json_is_array(r->removed) ||
	    !json_is_array(r->at) || !r->items)
		return gw_errf(why, "a record lacks a member or holds one of the wrong type");
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	return (x > y) - (x < y);
}

/*
 * Record r's edits of cur: the positions of the removed keys and of the keys its items
 * replace leave, in order; its items enter at their positions of the new list, each before
 * the held item that follows it there. 0 with *e (ne of them), or -1 with why set.
 */
static int record_edits(const struct group_data *cur, const struct group_data *ups,
                        const struct record *r, struct edit **e, size_t *ne, struct gw_err *why)
{
	size_t nr = json_array_size(r->removed), nu = ups->n_items, nd = 0;
	size_t n_prev = cur->n_items, count = (size_t)json_integer_value(r->count);
	size_t *gone = malloc((nr + nu + 1) * sizeof *gone);
	size_t *at = malloc((nu + 1) * sizeof *at);
	struct edit *v = malloc((nr + 2 * nu + 1) * sizeof *v);
	int rc = -1;
	*e = NULL;
	if (!gone || !at || !v) {
		gw_errf(why, "out of memory");
		goto out;
	}
	if (json_array_size(r->at) != nu) {
		gw_errf(why, "a record's positions do not match its items");
		goto out;
	}
	for (size_t i = 0; i < nu; i++) {
		json_t *a = json_array_get(r->at, i);
		if (!json_is_integer(a) || json_integer_value(a) < 0 ||
		    (size_t)json_integer_value(a) >= count ||
		    (i && (size_t)json_integer_value(a) <= at[i - 1])) {
			gw_errf(why, "a record's positions are not ascending within the list");
			goto out;
		}
		at[i] = (size_t)json_integer_value(a);
	}
	for (size_t i = 0; i < nr; i++) {
		json_t *k = json_array_get(r->removed, i);
		long p = json_is_string(k) ? position(cur, json_string_value(k)) : -1;
		if (p < 0) {
			gw_errf(why, "a record removes a key the version before it does not hold");
			goto out;
		}
		gone[nd++] = (size_t)p;
	}
	for (size_t i = 0; i < nu; i++) {
		int found;
		size_t rank = group_data_rank_item(cur, &ups->items[i], &found);
		long p = found ? (long)group_data_at(cur, rank) : -1;
		if (p >= 0)
			gone[nd++] = (size_t)p;
	}
	qsort(gone, nd, sizeof *gone, cmp_size);
	for (size_t i = 1; i < nd; i++)
		if (gone[i] == gone[i - 1]) {
			gw_errf(why, "a record removes and replaces one key");
			goto out;
		}
	if (n_prev - nd + nu != count) {
		gw_errf(why, "a record's count does not match the version before it");
		goto out;
	}
	size_t p = 0, g = 0, u = 0, k = 0;
	for (size_t f = 0; f < count; f++) {
		while (p < n_prev && g < nd && gone[g] == p) {
			v[k++] = (struct edit){p++, EDIT_REMOVE, NULL};
			g++;
		}
		if (u < nu && at[u] == f) { /* before the held item at p (or at the end) */
			v[k++] = (struct edit){p, EDIT_INSERT, &ups->items[u++]};
			continue;
		}
		p++; /* a held item keeps its place */
	}
	for (; g < nd; g++)
		v[k++] = (struct edit){gone[g], EDIT_REMOVE, NULL};
	*e = v;
	*ne = k;
	v = NULL;
	rc = 0;
out:
	free(gone);
	free(at);
	free(v);
	return rc;
}

/* cur with record r applied: 0 and *out, or -1 with why set. */
static int record_apply(const struct group_data *cur, const char *p, size_t n,
                        struct group_data **out, struct gw_err *why)
{
	struct record r;
	struct group_data *ups = NULL;
	struct edit *e = NULL;
	size_t ne = 0;
	int rc = -1;
	*out = NULL;
	if (record_read(p, n, &r, why) != 0)
		goto out;
	if (strcmp(json_string_value(r.from), cur->md5) != 0) {
		gw_errf(why, "a record follows version %.64s, not %s", json_string_value(r.from),
		        cur->md5);
		goto out;
	}
	if (model_parse_items(cur->group, r.items, r.items_len, "snapshot", cur, &ups, why) != 0 ||
	    record_edits(cur, ups, &r, &e, &ne, why) != 0 ||
	    model_edit_as(cur, ups, e, ne, json_string_value(r.md5), out, why) != 0)
		goto out;
	(*out)->last_modify_time = json_integer_value(r.lmt);
	snprintf((*out)->server, sizeof(*out)->server, "snapshot");
	(*out)->provisional = 1;
	rc = 0;
out:
	record_free(&r);
	group_data_unref(ups);
	free(e);
	return rc;
}

/* The header at *p names base: 1 (and *p past it), 0 another version (why says), -1 not a
 * header (cut short, or not a journal). */
static int header(const char **p, const char *end, const struct group_data *base,
                  struct gw_err *why)
{
	size_t ml = strlen(MAGIC);
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	if (!nl || (size_t)(nl - *p) < ml || memcmp(*p, MAGIC, ml) != 0) {
		gw_errf(why, "its header is cut short or not a journal's");
		return -1;
	}
	char md5[65];
	long long lmt;
	char line[128];
	size_t ll = (size_t)(nl - *p) - ml;
	if (ll >= sizeof line) {
		gw_errf(why, "its header is not a journal's");
		return -1;
	}
	memcpy(line, *p + ml, ll);
	line[ll] = '\0';
	if (sscanf(line, "%64s %lld", md5, &lmt) != 2) {
		gw_errf(why, "its header is not a journal's");
		return -1;
	}
	if (strcmp(md5, base->md5) != 0 || lmt != base->last_modify_time) {
		gw_errf(
		    why,
		    "it follows version %s (lastModifyTime %lld), not the group file's %s: left by "
		    "an interrupted rewrite",
		    md5, lmt, base->md5);
		return 0;
	}
	*p = nl + 1;
	return 1;
}

/* The record at *p: its payload, *p past it. NULL with why set if it is cut short or its
 * digest differs. */
static const char *record_at(const char **p, const char *end, size_t *n, struct gw_err *why)
{
	const char *q = *p, *nl = memchr(q, '\n', (size_t)(end - q));
	size_t len = 0, digits = 0;
	char sum[33], want[33];
	if (!nl) {
		gw_errf(why, "a record is cut short (a write the stop interrupted)");
		return NULL;
	}
	for (; q < nl && *q >= '0' && *q <= '9' && digits < 19; q++, digits++)
		len = len * 10 + (size_t)(*q - '0');
	if (!digits || *q != ' ' || nl - q - 1 != 32 || len + 1 > (size_t)(end - nl - 1) ||
	    nl[1 + len] != '\n') {
		gw_errf(why, "a record is cut short (a write the stop interrupted)");
		return NULL;
	}
	memcpy(want, q + 1, 32);
	want[32] = '\0';
	const char *pl = nl + 1;
	if (payload_sum(pl, len, sum) != 0 || strcmp(sum, want) != 0) {
		gw_errf(why, "a record's digest differs (a write the stop interrupted)");
		return NULL;
	}
	*p = pl + len + 1;
	*n = len;
	return pl;
}

int journal_replay(const char *dir, struct group_data *base, struct group_data **out,
                   size_t *replayed, struct gw_err *tail, struct gw_err *err)
{
	char path[4096];
	journal_path(path, sizeof path, dir, base->group);
	*out = NULL;
	*replayed = 0;
	tail->msg[0] = '\0';
	char *buf;
	size_t len;
	struct gw_err ferr;
	if (readfile(path, JOURNAL_MAX, &buf, &len, &ferr) < 0) {
		if (errno == ENOENT) {
			*out = group_data_ref(base);
			return 0;
		}
		if (errno == ENOMEM)
			return gw_errf(err, "journal %s: out of memory", path);
		gw_errf(tail, "journal %s: %s", path, ferr.msg); /* unreadable: the base alone */
		*out = group_data_ref(base);
		return 0;
	}
	const char *p = buf, *end = buf + len;
	struct group_data *cur = group_data_ref(base);
	if (len && header(&p, end, base, tail) == 1) {
		while (p < end) {
			size_t n;
			const char *pl = record_at(&p, end, &n, tail);
			struct group_data *next = NULL;
			if (!pl || record_apply(cur, pl, n, &next, tail) != 0)
				break;
			group_data_unref(cur);
			cur = next;
			(*replayed)++;
		}
	}
	free(buf);
	*out = cur;
	return 0;
}
