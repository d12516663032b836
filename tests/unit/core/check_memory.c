/*
 * Unit tests of core/memory.c: releasing GnuTLS's implicit initialisation gives its heap
 * back, a plugin that reaches GnuTLS gets it initialised again (and one that does not,
 * nothing), and threads share one malloc arena per connection. The test binary links the
 * agent's library, so it loads libcurl and, on Debian, GnuTLS with it; where GnuTLS is not
 * in the process the release says so and the byte counts are not asserted. Where glibc's
 * malloc is not the one counting (a sanitizer's or valgrind's allocator replaces it), only
 * the calls' answers are.
 */
#include <check.h>
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

static size_t in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks;
}

/* glibc's malloc serves this process (mallinfo2() counts a block while it lives). */
static int glibc_malloc(void)
{
	char *p = malloc(4000);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 4000);
	size_t held = in_use();
	free(p);
	return held >= in_use() + 4000;
}

static int gnutls_loaded(void)
{
	return dlsym(RTLD_DEFAULT, "gnutls_global_deinit") != NULL;
}

START_TEST(releasing_gnutls_gives_its_heap_back_and_a_plugin_gets_it_again)
{
	const int glibc = glibc_malloc();
	size_t before = in_use();
	int released = gw_memory_release_gnutls();
	ck_assert_int_eq(released, gnutls_loaded());
	if (!released)
		return;
	size_t after = in_use();
	if (glibc) /* its ASN.1 trees alone are ~100 KiB */
		ck_assert_msg(before > after + 32 * 1024, "in use %zu -> %zu", before, after);
	/* a "plugin" whose scope reaches GnuTLS: the process's global scope */
	void *self = dlopen(NULL, RTLD_NOW);
	ck_assert_ptr_nonnull(self);
	ck_assert_int_eq(gw_memory_gnutls_hold(self), 1);
	if (glibc)
		ck_assert_msg(in_use() > after + 32 * 1024, "in use %zu after the hold", in_use());
	size_t held = in_use();
	gw_memory_gnutls_drop();
	if (glibc)
		ck_assert_msg(held > in_use() + 32 * 1024, "in use %zu after the drop", in_use());
	dlclose(self);
}
END_TEST

START_TEST(a_plugin_that_does_not_reach_gnutls_holds_nothing)
{
	/* libc's own scope is libc and the loader: no GnuTLS there */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(libc);
	ck_assert_int_eq(gw_memory_gnutls_hold(libc), 0);
	ck_assert_int_eq(gw_memory_gnutls_hold(NULL), 0);
	dlclose(libc);
}
END_TEST

static pthread_barrier_t all_allocated;

static void *allocate(void *arg)
{
	void *p = malloc(256);
	memset(p, 1, 256);
	pthread_barrier_wait(&all_allocated); /* each thread alive, holding memory, at once */
	free(p);
	return arg;
}

/* How many arenas ("<heap nr=") glibc's malloc_info() lists. */
static int arenas(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (const char *p = text; (p = strstr(p, "<heap nr=")); p++)
		n++;
	free(text);
	return n;
}

START_TEST(threads_share_one_arena_per_connection)
{
	if (!glibc_malloc())
		return;
	gw_memory_arenas(1); /* one connection: the main heap and one arena */
	enum { THREADS = 6 };
	pthread_t t[THREADS];
	pthread_barrier_init(&all_allocated, NULL, THREADS);
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, allocate, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&all_allocated);
	int n = arenas();
	ck_assert_msg(n >= 1 && n <= 2, "%d arenas for 6 threads and one connection", n);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("memory");
	tcase_add_test(tc, releasing_gnutls_gives_its_heap_back_and_a_plugin_gets_it_again);
	tcase_add_test(tc, a_plugin_that_does_not_reach_gnutls_holds_nothing);
	tcase_add_test(tc, threads_share_one_arena_per_connection);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
