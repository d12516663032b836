/*
 * Unit tests of the retry/backoff schedule (retry.h): rounds of `attempts` tries spaced by
 * `interval`, a `backoff` after each whole failed round, and a reset on success.
 */
#include <check.h>
#include <stdlib.h>

#include "source/retry.h"

START_TEST(success_polls_at_once)
{
	struct retry_policy p = {3, 5000, 300000, 0};
	int64_t d = -1;
	ck_assert_int_eq(retry_next(&p, 0, &d), RETRY_NOW);
	ck_assert_int_eq(d, 0);
	ck_assert_int_eq(retry_try_in_round(&p, 0), 0);
}
END_TEST

START_TEST(startup_backoff_caps_the_backoff_only_while_starting)
{
	struct retry_policy p = {3, 5000, 300000, 10000};
	int64_t d = -1;
	/* no data held yet: a failed round waits 10 s, not 5 min */
	ck_assert_int_eq(retry_next_starting(&p, 3, 1, &d), RETRY_BACKOFF);
	ck_assert_int_eq(d, 10000);
	/* the interval between tries is not touched */
	ck_assert_int_eq(retry_next_starting(&p, 1, 1, &d), RETRY_INTERVAL);
	ck_assert_int_eq(d, 5000);
	/* data held: the configured backoff again */
	ck_assert_int_eq(retry_next_starting(&p, 3, 0, &d), RETRY_BACKOFF);
	ck_assert_int_eq(d, 300000);
	/* a backoff shorter than the cap stays as it is; a cap of 0 is none */
	struct retry_policy short_backoff = {3, 5000, 2000, 10000}, no_cap = {3, 5000, 300000, 0};
	ck_assert_int_eq(retry_next_starting(&short_backoff, 3, 1, &d), RETRY_BACKOFF);
	ck_assert_int_eq(d, 2000);
	ck_assert_int_eq(retry_next_starting(&no_cap, 3, 1, &d), RETRY_BACKOFF);
	ck_assert_int_eq(d, 300000);
}
END_TEST

START_TEST(rounds_of_three)
{
	struct retry_policy p = {3, 5000, 300000, 0};
	/* failures:       1         2         3        4         5         6        7 */
	const int steps[] = {RETRY_INTERVAL, RETRY_INTERVAL, RETRY_BACKOFF, RETRY_INTERVAL,
	                     RETRY_INTERVAL, RETRY_BACKOFF,  RETRY_INTERVAL};
	const int64_t waits[] = {5000, 5000, 300000, 5000, 5000, 300000, 5000};
	const int tries[] = {1, 2, 3, 1, 2, 3, 1};
	for (int i = 0; i < 7; i++) {
		int64_t d = -1;
		ck_assert_int_eq(retry_next(&p, (uint64_t)i + 1, &d), steps[i]);
		ck_assert_int_eq(d, waits[i]);
		ck_assert_int_eq(retry_try_in_round(&p, (uint64_t)i + 1), tries[i]);
	}
}
END_TEST

START_TEST(single_attempt_rounds_always_back_off)
{
	struct retry_policy p = {1, 100, 2000, 0};
	for (uint64_t f = 1; f < 5; f++) {
		int64_t d;
		ck_assert_int_eq(retry_next(&p, f, &d), RETRY_BACKOFF);
		ck_assert_int_eq(d, 2000);
		ck_assert_int_eq(retry_try_in_round(&p, f), 1);
	}
	/* A nonsensical attempts value behaves as one try per round, never a division by 0. */
	struct retry_policy z = {0, 100, 2000, 0};
	int64_t d;
	ck_assert_int_eq(retry_next(&z, 1, &d), RETRY_BACKOFF);
	ck_assert_int_eq(retry_next(&z, 2, &d), RETRY_BACKOFF);
}
END_TEST

START_TEST(ten_attempts_like_newer_shenyu)
{
	struct retry_policy p = {10, 1000, 60000, 0};
	int backoffs = 0, intervals = 0;
	for (uint64_t f = 1; f <= 30; f++) {
		int64_t d;
		enum retry_step s = retry_next(&p, f, &d);
		if (s == RETRY_BACKOFF) {
			backoffs++;
			ck_assert_uint_eq(f % 10, 0);
		} else {
			ck_assert_int_eq(s, RETRY_INTERVAL);
			ck_assert_int_eq(d, 1000);
			intervals++;
		}
	}
	ck_assert_int_eq(backoffs, 3);
	ck_assert_int_eq(intervals, 27);
}
END_TEST

START_TEST(huge_failure_counts)
{
	struct retry_policy p = {3, 5, 7, 0};
	int64_t d;
	ck_assert_int_eq(retry_next(&p, UINT64_MAX - 1, &d), RETRY_INTERVAL); /* (2^64-2)%3 = 2 */
	ck_assert_int_eq(retry_try_in_round(&p, UINT64_MAX - 1), 2);
	ck_assert_int_eq(retry_next(&p, UINT64_MAX, &d), RETRY_BACKOFF); /* 2^64-1 = 0 mod 3 */
}
END_TEST

START_TEST(negative_durations_wait_nothing)
{
	struct retry_policy p = {2, -5, -1, 0};
	int64_t d;
	ck_assert_int_eq(retry_next(&p, 1, &d), RETRY_INTERVAL);
	ck_assert_int_eq(d, 0);
	ck_assert_int_eq(retry_next(&p, 2, &d), RETRY_BACKOFF);
	ck_assert_int_eq(d, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("retry");
	TCase *tc = tcase_create("schedule");
	tcase_add_test(tc, success_polls_at_once);
	tcase_add_test(tc, rounds_of_three);
	tcase_add_test(tc, single_attempt_rounds_always_back_off);
	tcase_add_test(tc, ten_attempts_like_newer_shenyu);
	tcase_add_test(tc, huge_failure_counts);
	tcase_add_test(tc, negative_durations_wait_nothing);
	tcase_add_test(tc, startup_backoff_caps_the_backoff_only_while_starting);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
