/*
 * Unit tests of the snapshot's journal: a cold start (the group file read, the journal
 * replayed) gives exactly the last version written, order included, over random sequences
 * of edits, full lists and reorders; a record cut short or damaged is ignored with what
 * follows it, never the group; a journal that follows another version of the group file
 * is ignored; it is started over when it grows past its bounds.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/strbuf.h"
#include "model/edit.h"
#include "model/model.h"
#include "model/patch.h"
#include "store/ingest.h"
#include "store/journal.h"
#include "store/snapshot.h"

static char dir[256];

static void setup(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/gwsync-journal-XXXXXX", t && *t ? t : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void rule_json(char *buf, size_t cap, unsigned key, unsigned version)
{
	snprintf(buf, cap,
	         "{\"id\":\"r%03u\",\"name\":\"rule %u v%u\",\"pluginName\":\"divide\","
	         "\"selectorId\":\"s%u\",\"sort\":%u,\"handle\":\"{\\\"x\\\":%u}\"}",
	         key, key, version, key % 7, version % 100, version);
}

/* A list of rules as the admin's reply would have it: {md5, lastModifyTime, data}, parsed
 * with prev (may be NULL) to share from, as a long-polling version is. */
static struct group_data *polled(const unsigned *ids, const unsigned *vers, size_t n,
                                 const struct group_data *prev, long lmt)
{
	struct strbuf b = {0};
	char json[256];
	strbuf_addf(&b, "{\"md5\":\"p%ld\",\"lastModifyTime\":%ld,\"data\":[", lmt, lmt);
	for (size_t i = 0; i < n; i++) {
		rule_json(json, sizeof json, ids[i], vers[i]);
		strbuf_addf(&b, "%s%s", i ? "," : "", json);
	}
	strbuf_adds(&b, "]}");
	char *text = strbuf_finish(&b);
	struct group_data *out[GW_GROUP_COUNT] = {0};
	struct group_data *prevs[GW_GROUP_COUNT] = {0};
	prevs[GW_GROUP_RULE] = (struct group_data *)prev;
	enum gw_group want = GW_GROUP_RULE;
	char *doc = malloc(strlen(text) + 16);
	sprintf(doc, "{\"RULE\":%s}", text);
	int syntax;
	struct gw_err err = {0};
	ck_assert_msg(model_parse_groups(doc, strlen(doc), &want, 1, "http://a", prevs, out,
	                                 &syntax, &err) == 0,
	              "%s", err.msg);
	free(doc);
	free(text);
	return out[GW_GROUP_RULE];
}

/* Same items in the same order, same tag and time. */
static void assert_same(const struct group_data *a, const struct group_data *b)
{
	ck_assert_str_eq(a->md5, b->md5);
	ck_assert_int_eq(a->last_modify_time, b->last_modify_time);
	ck_assert_uint_eq(a->n_items, b->n_items);
	for (size_t i = 0; i < a->n_items; i++) {
		ck_assert_int_eq(gd_keycmp(&a->items[i], &b->items[i]), 0);
		ck_assert_uint_eq(a->items[i].json_len, b->items[i].json_len);
		ck_assert_str_eq(a->items[i].json, b->items[i].json);
	}
}

static void assert_cold_start_is(const struct group_data *want)
{
	struct group_data *back = NULL;
	struct gw_err err = {0}, tail = {0};
	size_t replayed;
	ck_assert_msg(snapshot_read_journal(dir, GW_GROUP_RULE, &back, &replayed, &tail, &err) == 0,
	              "%s", err.msg);
	ck_assert_msg(tail.msg[0] == '\0', "%s", tail.msg);
	ck_assert_int_eq(back->provisional, 1);
	assert_same(back, want);
	group_data_unref(back);
}

/* What the snapshot writer does with a version: append it, or write the file whole. */
static int save(struct journal *js, struct group_data **written, struct group_data *gd)
{
	struct gw_err err = {0};
	int rc = *written ? journal_append(dir, js, *written, gd, &err) : 1;
	ck_assert_msg(rc >= 0, "%s", err.msg);
	if (rc == 1) {
		ck_assert_msg(snapshot_write(dir, gd, &err) == 0, "%s", err.msg);
		char path[512];
		struct stat sb;
		snprintf(path, sizeof path, "%s/RULE.json", dir);
		ck_assert_int_eq(stat(path, &sb), 0);
		ck_assert_int_eq(journal_restart(dir, js, gd, (size_t)sb.st_size, &err), 0);
	}
	group_data_unref(*written);
	*written = gd;
	return rc;
}

/* 400 versions at random: positional edits (inserts in the middle, removals, replaces that
 * change the key), one-item events, full lists with items reordered or not, each written
 * as the writer writes it; the cold start gives the last one every time. */
START_TEST(cold_start_is_the_last_version_written)
{
	srand(4242);
	unsigned ids[2000], vers[2000], version = 0;
	size_t n = 0;
	for (; n < 150; n++) {
		ids[n] = (unsigned)n * 2;
		vers[n] = 0;
	}
	struct journal js = {0};
	struct group_data *cur = polled(ids, vers, n, NULL, 1), *written = NULL;
	save(&js, &written, group_data_ref(cur));
	assert_cold_start_is(cur);
	int appended = 0, whole = 0;
	for (long round = 2; round < 400; round++) {
		struct group_data *next = NULL;
		int kind = rand() % 4;
		if (kind < 2) { /* positional edits, as the path stores make them */
			struct edit e[6];
			unsigned nid[6];
			size_t ne = 0, at = 0, nu = 0;
			struct strbuf b = {0};
			char json[256];
			strbuf_add(&b, "[", 1);
			for (int k = 0; k < 1 + rand() % 5 && at < n; k++) {
				at += (size_t)(rand() % 40);
				if (at >= n)
					break;
				int op = rand() % 3;
				e[ne] = (struct edit){at, (enum edit_op)op, NULL};
				if (op != EDIT_REMOVE) {
					nid[nu] =
					    1 + 2 * (unsigned)(rand() % 300); /* odd: new keys */
					for (size_t q = 0; q < nu; q++)
						if (nid[q] == nid[nu])
							nid[nu] += 2000;
					rule_json(json, sizeof json, nid[nu], ++version);
					strbuf_addf(&b, "%s%s", nu ? "," : "", json);
					nu++;
				}
				ne++;
				if (op != EDIT_INSERT)
					at++;
			}
			strbuf_add(&b, "]", 1);
			char *text = strbuf_finish(&b);
			struct group_data *up = NULL;
			struct gw_err err = {0};
			ck_assert_int_eq(model_parse_items(GW_GROUP_RULE, text, strlen(text), "kv",
			                                   cur, &up, &err),
			                 0);
			free(text);
			for (size_t k = 0, j = 0; k < ne; k++)
				if (e[k].op != EDIT_REMOVE)
					e[k].item = &up->items[j++];
			int rc = model_edit(cur, up, e, ne, &next, &err);
			group_data_unref(up);
			if (rc != 0) { /* a new key already held: not an edit */
				ck_assert_ptr_nonnull(strstr(err.msg, "duplicate key"));
				continue;
			}
			model_stamp(next, cur, "kv", round * 1000);
		} else { /* a full list from the admin: one item changed, maybe two swapped */
			size_t m = 0;
			char key[64];
			for (size_t i = 0; i < cur->n_items; i++) {
				sscanf(gd_key_str(&cur->items[i], key, sizeof key), "r%u", &ids[m]);
				const char *v = strstr(cur->items[i].json, "\\\"x\\\":");
				vers[m++] = v ? (unsigned)atoi(v + 6) : 0;
			}
			if (m)
				vers[rand() % m] = ++version;
			if (kind == 3 && m > 2) {
				size_t a = (size_t)rand() % m, c = (size_t)rand() % m;
				unsigned t = ids[a], tv = vers[a];
				ids[a] = ids[c];
				vers[a] = vers[c];
				ids[c] = t;
				vers[c] = tv;
			}
			next = polled(ids, vers, m, cur, round);
		}
		group_data_unref(cur);
		cur = next;
		n = cur->n_items;
		if (save(&js, &written, group_data_ref(cur)) == 0)
			appended++;
		else
			whole++;
		assert_cold_start_is(cur);
	}
	ck_assert_int_gt(appended, 200); /* most versions were appended */
	ck_assert_int_gt(whole, 2);      /* some were written whole (reorders, bounds) */
	group_data_unref(cur);
	group_data_unref(written);
}
END_TEST

/* Three one-item versions appended after the group file. */
static struct group_data *three_appended(struct group_data *v[4])
{
	unsigned ids[50], vers[50];
	for (unsigned i = 0; i < 50; i++) {
		ids[i] = i;
		vers[i] = 0;
	}
	struct journal js = {0};
	struct group_data *written = NULL;
	v[0] = polled(ids, vers, 50, NULL, 10);
	ck_assert_int_eq(save(&js, &written, group_data_ref(v[0])), 1);
	for (int k = 1; k < 4; k++) {
		vers[10 * k] = (unsigned)k;
		v[k] = polled(ids, vers, 50, v[k - 1], 10 + k);
		ck_assert_int_eq(save(&js, &written, group_data_ref(v[k])), 0);
	}
	ck_assert_uint_eq(js.records, 3);
	return written;
}

static size_t file_size(const char *path)
{
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	return (size_t)sb.st_size;
}

static void read_expect(const struct group_data *want, size_t n_replayed, const char *why)
{
	struct group_data *back = NULL;
	struct gw_err err = {0}, tail = {0};
	size_t replayed;
	ck_assert_int_eq(snapshot_read_journal(dir, GW_GROUP_RULE, &back, &replayed, &tail, &err),
	                 0);
	assert_same(back, want);
	ck_assert_uint_eq(replayed, n_replayed);
	if (why)
		ck_assert_msg(strstr(tail.msg, why), "%s", tail.msg);
	else
		ck_assert_msg(!tail.msg[0], "%s", tail.msg);
	group_data_unref(back);
}

/* A crash in the middle of an append: every cut of the last record gives the version before
 * it; a damaged record gives the one before that; garbage after whole records is ignored. */
START_TEST(a_torn_tail_is_ignored_never_the_group)
{
	struct group_data *v[4];
	group_data_unref(three_appended(v));
	char path[512];
	journal_path(path, sizeof path, dir, GW_GROUP_RULE);
	size_t full = file_size(path);
	char *whole = malloc(full);
	FILE *f = fopen(path, "rb");
	ck_assert_uint_eq(fread(whole, 1, full, f), full);
	fclose(f);
	read_expect(v[3], 3, NULL);
	/* where the last record starts: after the third-to-last newline */
	size_t last = full - 1;
	for (int nl = 0; last > 0; last--)
		if (whole[last - 1] == '\n' && ++nl == 2)
			break;
	for (size_t cut = last; cut < full; cut++) {
		ck_assert_int_eq(truncate(path, (off_t)cut), 0);
		read_expect(v[2], 2, cut == last ? NULL : "cut short");
	}
	/* one byte of the second record's payload changed */
	f = fopen(path, "wb");
	fwrite(whole, 1, full, f);
	fclose(f);
	char *rec2 = strstr(strstr(whole, "\"from\"") + 1, "\"from\"");
	int fd = open(path, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "X", 1, (off_t)(rec2 - whole + 2)), 1);
	close(fd);
	read_expect(v[1], 1, "digest differs");
	/* garbage after the whole records */
	f = fopen(path, "wb");
	fwrite(whole, 1, full, f);
	fputs("17 0123", f);
	fclose(f);
	read_expect(v[3], 3, "cut short");
	free(whole);
	for (int k = 0; k < 4; k++)
		group_data_unref(v[k]);
}
END_TEST

/* A crash between a rewrite of the group file and the journal's removal leaves a journal
 * that follows the old file: it is ignored. */
START_TEST(a_journal_of_another_group_file_is_ignored)
{
	struct group_data *v[4];
	struct group_data *written = three_appended(v);
	char path[512], keep[600];
	journal_path(path, sizeof path, dir, GW_GROUP_RULE);
	snprintf(keep, sizeof keep, "%s.keep", path);
	ck_assert_int_eq(link(path, keep), 0);
	struct gw_err err = {0};
	ck_assert_int_eq(snapshot_write(dir, v[1], &err), 0); /* an older version, whole */
	ck_assert_int_ne(access(path, F_OK), 0);              /* the journal went with it */
	ck_assert_int_eq(rename(keep, path), 0);              /* ... as if the crash kept it */
	read_expect(v[1], 0, "interrupted rewrite");
	group_data_unref(written);
	for (int k = 0; k < 4; k++)
		group_data_unref(v[k]);
}
END_TEST

/* The writer thread appends one record per change and starts over with the group file when
 * the journal passes half of it; the cold start follows every step. */
START_TEST(the_writer_appends_and_compacts)
{
	struct store *st = store_new();
	struct gw_log *log;
	struct gw_err err = {0};
	gw_log_open(&log, GW_LOG_ERROR, GW_LOG_TEXT, "/dev/null", &err);
	struct snapshot_writer *w;
	ck_assert_int_eq(snapshot_writer_start(&w, dir, st, log, &err), 0);
	unsigned ids[40], vers[40];
	for (unsigned i = 0; i < 40; i++) {
		ids[i] = i;
		vers[i] = 0;
	}
	struct group_data *cur = polled(ids, vers, 40, NULL, 1);
	ck_assert_int_eq(store_swap(st, cur, ingest_accept_polled, NULL), INGEST_ACCEPTED);
	char jpath[512], bpath[512];
	journal_path(jpath, sizeof jpath, dir, GW_GROUP_RULE);
	snprintf(bpath, sizeof bpath, "%s/RULE.json", dir);
	int restarted = 0;
	size_t last_journal = 0;
	for (long k = 2; k < 60; k++) {
		vers[k % 40] = (unsigned)k;
		struct group_data *next = polled(ids, vers, 40, cur, k);
		ck_assert_int_eq(store_swap(st, next, ingest_accept_polled, NULL), INGEST_ACCEPTED);
		group_data_unref(cur);
		cur = next;
		/* written: the cold start gives it */
		struct group_data *back = NULL;
		for (int i = 0; i < 500; i++) {
			group_data_unref(back);
			back = NULL;
			if (snapshot_read(dir, GW_GROUP_RULE, &back, &err) == 0 &&
			    strcmp(back->md5, cur->md5) == 0)
				break;
			usleep(10000);
		}
		ck_assert_ptr_nonnull(back);
		assert_same(back, cur);
		group_data_unref(back);
		struct stat sb;
		size_t now = stat(jpath, &sb) == 0 ? (size_t)sb.st_size : 0;
		restarted += now < last_journal;
		last_journal = now;
		ck_assert_uint_le(now,
		                  file_size(bpath) / 2 + 256); /* about half the file at most */
	}
	ck_assert_int_gt(restarted, 0);
	snapshot_writer_free(w);
	group_data_unref(cur);
	store_free(st);
	gw_log_close(log);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("journal");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cold_start_is_the_last_version_written);
	tcase_add_test(tc, a_torn_tail_is_ignored_never_the_group);
	tcase_add_test(tc, a_journal_of_another_group_file_is_ignored);
	tcase_add_test(tc, the_writer_appends_and_compacts);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
