/*
 * Unit tests of core/thread.c: a started thread has the asynchronous signals blocked even
 * when its creator has none blocked (fault signals stay open), it carries its name (cut
 * to the kernel's 15 bytes), a monotonic condition variable's timed wait ends at a
 * gw_mono_deadline(), and shedding gives back the stack pages below the caller's frame
 * and nothing above it.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/thread.h"

static void *report_mask(void *arg)
{
	pthread_sigmask(SIG_SETMASK, NULL, arg);
	return NULL;
}

/* Resident pages of the calling thread's stack (mincore), for the shedding test. */
static size_t stack_pages(void)
{
	pthread_attr_t at;
	void *lo;
	size_t size;
	ck_assert_int_eq(pthread_getattr_np(pthread_self(), &at), 0);
	ck_assert_int_eq(pthread_attr_getstack(&at, &lo, &size), 0);
	pthread_attr_destroy(&at);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)lo + page - 1) & ~(uintptr_t)(page - 1);
	size_t n = ((uintptr_t)lo + size - from) / page;
	unsigned char *vec = malloc(n);
	ck_assert_int_eq(mincore((void *)from, n * page, vec), 0);
	size_t resident = 0;
	for (size_t i = 0; i < n; i++)
		resident += vec[i] & 1;
	free(vec);
	return resident;
}

/* 64 KiB of stack written, as a fetch and its parse would. */
__attribute__((noinline)) static int go_deep(int seed)
{
	volatile char deep[64 * 1024];
	for (size_t i = 0; i < sizeof deep; i += 512)
		deep[i] = (char)(seed + (int)i);
	return deep[sizeof deep - 512] + deep[0];
}

struct shed {
	size_t deep, shed, again;
	int intact, same;
};

static void *shed_stack(void *arg)
{
	struct shed *r = arg;
	char mine[256]; /* this frame's data must survive */
	memset(mine, 'x', sizeof mine);
	int first = go_deep(1);
	r->deep = stack_pages();
	gw_thread_shed_stack();
	r->shed = stack_pages();
	r->intact = mine[0] == 'x' && mine[sizeof mine - 1] == 'x';
	r->same = go_deep(1) == first; /* and the thread goes deep again as before */
	r->again = stack_pages();
	return NULL;
}

START_TEST(shedding_gives_back_the_stack_below_the_frame)
{
	struct shed r = {0};
	pthread_t t;
	ck_assert_int_eq(gw_thread_start(&t, "shed", shed_stack, &r), 0);
	pthread_join(t, NULL);
	ck_assert_msg(r.shed + 14 <= r.deep, "resident stack pages: %zu deep, %zu after", r.deep,
	              r.shed);
	ck_assert_int_eq(r.intact, 1);
	ck_assert_int_eq(r.same, 1);
	ck_assert_uint_ge(r.again, r.shed + 14);
}
END_TEST

struct own_seen {
	char name[16];
	uintptr_t frame; /* an address on the thread's stack */
	sigset_t mask;
};

static void *report_own(void *arg)
{
	struct own_seen *o = arg;
	char here[64];
	memset(here, 'x', sizeof here);
	o->frame = (uintptr_t)here;
	pthread_getname_np(pthread_self(), o->name, sizeof o->name);
	pthread_sigmask(SIG_SETMASK, NULL, &o->mask);
	return NULL;
}

START_TEST(a_thread_on_its_own_stack_gives_it_back_when_joined)
{
	struct own_seen o = {0};
	struct gw_thread_own t;
	ck_assert_int_eq(gw_thread_start_own(&t, GW_THREAD_OWN_STACK, "own", report_own, &o), 0);
	uintptr_t lo = (uintptr_t)t.map, hi = lo + t.map_size;
	gw_thread_join_unmap(&t);
	/* it ran on the mapping, named and masked as every other thread */
	ck_assert_msg(o.frame > lo && o.frame < hi, "frame %#lx outside %#lx-%#lx",
	              (unsigned long)o.frame, (unsigned long)lo, (unsigned long)hi);
	ck_assert_str_eq(o.name, "own");
	ck_assert_int_eq(sigismember(&o.mask, SIGTERM), 1);
	/* and the mapping is gone: mincore() refuses unmapped addresses */
	unsigned char vec[32];
	ck_assert_int_eq(mincore((void *)lo, 4096, vec), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_ptr_null(t.map);
	gw_thread_join_unmap(&t); /* a second call changes nothing */
}
END_TEST

START_TEST(started_threads_block_async_signals)
{
	sigset_t none, before, seen;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, &before);
	pthread_t t;
	ck_assert_int_eq(gw_thread_start(&t, "test", report_mask, &seen), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(sigismember(&seen, SIGTERM), 1);
	ck_assert_int_eq(sigismember(&seen, SIGINT), 1);
	ck_assert_int_eq(sigismember(&seen, SIGHUP), 1);
	ck_assert_int_eq(sigismember(&seen, SIGSEGV), 0);
	ck_assert_int_eq(sigismember(&seen, SIGABRT), 0);
	/* the creator's own mask is untouched */
	sigset_t after;
	pthread_sigmask(SIG_SETMASK, &before, &after);
	ck_assert_int_eq(sigismember(&after, SIGTERM), 0);
}
END_TEST

static void *report_name(void *arg)
{
	pthread_getname_np(pthread_self(), arg, 16);
	return NULL;
}

START_TEST(started_threads_carry_their_name)
{
	char seen[16] = "";
	pthread_t t;
	ck_assert_int_eq(gw_thread_start(&t, "poll-3", report_name, seen), 0);
	pthread_join(t, NULL);
	ck_assert_str_eq(seen, "poll-3");
	ck_assert_int_eq(gw_thread_start(&t, "a-name-longer-than-fifteen", report_name, seen), 0);
	pthread_join(t, NULL);
	ck_assert_str_eq(seen, "a-name-longer-t");
}
END_TEST

START_TEST(monotonic_wait_ends_at_its_deadline)
{
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv;
	ck_assert_int_eq(gw_cond_init_mono(&cv), 0);
	int64_t t0 = gw_mono_ms();
	struct timespec dl = gw_mono_deadline(50);
	int rc = 0;
	pthread_mutex_lock(&mu);
	while (rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&cv, &mu, &dl);
	pthread_mutex_unlock(&mu);
	int64_t waited = gw_mono_ms() - t0;
	ck_assert_int_ge(waited, 49);
	ck_assert_int_lt(waited, 2000);
	pthread_cond_destroy(&cv);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("thread");
	TCase *tc = tcase_create("thread");
	tcase_add_test(tc, started_threads_block_async_signals);
	tcase_add_test(tc, started_threads_carry_their_name);
	tcase_add_test(tc, monotonic_wait_ends_at_its_deadline);
	tcase_add_test(tc, shedding_gives_back_the_stack_below_the_frame);
	tcase_add_test(tc, a_thread_on_its_own_stack_gives_it_back_when_joined);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
