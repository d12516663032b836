/*
 * Unit tests of core/memory.c: releasing GnuTLS's implicit initialisation gives its heap
 * back, a plugin that reaches GnuTLS gets it initialised again (and one that does not,
 * nothing). The test binary links the
 * agent's library, so it loads libcurl and, on Debian, GnuTLS with it; where GnuTLS is not
 * in the process the release says so and the byte counts are not asserted. Where glibc's
 * malloc is not the one counting (a sanitizer's or valgrind's allocator replaces it), only
 * the calls' answers are.
 */
#include <check.h>
#include <dlfcn.h>
#include <malloc.h>
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

int main(void)
{
	Suite *s = suite_create("memory");
	TCase *tc = tcase_create("memory");
	tcase_add_test(tc, releasing_gnutls_gives_its_heap_back_and_a_plugin_gets_it_again);
	tcase_add_test(tc, a_plugin_that_does_not_reach_gnutls_holds_nothing);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
