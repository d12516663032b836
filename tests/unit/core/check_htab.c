/*
 * Unit tests of the agent's hash table (core/htab.c): entries found by key across the
 * doublings, removed one at a time or by a predicate, and every entry listed exactly once.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/htab.h"

struct entry {
	struct htab_link link;
	int seen;
	char key[16];
};

static int eq(const struct htab_link *e, const void *key, size_t len)
{
	const struct entry *x = (const struct entry *)e;
	return strlen(x->key) == len && memcmp(x->key, key, len) == 0;
}

static struct entry *find(struct htab *t, const char *key)
{
	struct htab_link **at = htab_find(t, htab_hash(key, strlen(key)), eq, key, strlen(key));
	return at ? (struct entry *)*at : NULL;
}

static void put(struct htab *t, const char *key)
{
	struct entry *e = calloc(1, sizeof *e);
	snprintf(e->key, sizeof e->key, "%s", key);
	ck_assert_int_eq(htab_reserve(t), 0);
	uint64_t h = htab_hash(key, strlen(key));
	struct htab_link **at = htab_find(t, h, eq, key, strlen(key));
	ck_assert_ptr_null(*at); /* not there yet: the empty link where it goes */
	htab_insert(t, at, &e->link, h);
}

static int drop_odd(struct htab_link *l, void *arg)
{
	struct entry *e = (struct entry *)l;
	(void)arg;
	if (atoi(e->key + 1) % 2 == 0)
		return 0;
	free(e);
	return 1;
}

static int drop_all(struct htab_link *l, void *arg)
{
	(void)arg;
	free(l);
	return 1;
}

START_TEST(entries_are_found_listed_and_removed_across_growth)
{
	struct htab t = {0};
	ck_assert_ptr_null(find(&t, "k0")); /* no slots yet */
	char key[16];
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof key, "k%d", i);
		put(&t, key);
	}
	ck_assert_uint_eq(t.n, 1000);
	ck_assert_uint_ge(t.n_slots, 1000);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof key, "k%d", i);
		struct entry *e = find(&t, key);
		ck_assert_ptr_nonnull(e);
		ck_assert_str_eq(e->key, key);
	}
	ck_assert_ptr_null(find(&t, "k1000"));

	size_t slot = 0, listed = 0;
	for (struct htab_link *l = htab_next(&t, &slot, NULL); l; l = htab_next(&t, &slot, l)) {
		ck_assert_int_eq(((struct entry *)l)->seen++, 0);
		listed++;
	}
	ck_assert_uint_eq(listed, 1000);

	struct htab_link **at = htab_find(&t, htab_hash("k7", 2), eq, "k7", 2);
	struct htab_link *gone = *at;
	htab_remove(&t, at);
	free(gone);
	ck_assert_ptr_null(find(&t, "k7"));
	ck_assert_uint_eq(t.n, 999);

	ck_assert_uint_eq(htab_remove_if(&t, drop_odd, NULL), 499);
	ck_assert_uint_eq(t.n, 500);
	ck_assert_ptr_null(find(&t, "k9"));
	ck_assert_ptr_nonnull(find(&t, "k998"));

	ck_assert_uint_eq(htab_remove_if(&t, drop_all, NULL), 500);
	htab_free(&t);
	ck_assert_uint_eq(t.n, 0);
	ck_assert_ptr_null(find(&t, "k998"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("htab");
	TCase *tc = tcase_create("htab");
	tcase_add_test(tc, entries_are_found_listed_and_removed_across_growth);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
