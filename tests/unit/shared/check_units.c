/*
 * Unit tests for agent/shared/units.c and agent/config/suggest.c: every accepted form, the
 * refusals that catch typos (bare numbers, unknown or repeated units, "MB", modes without
 * their 0) and the overflow edges.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "config/suggest.h"
#include "shared/units.h"

static int64_t dur(const char *s)
{
	int64_t v = -12345;
	ck_assert_msg(units_duration_ms(s, &v) == 0, "'%s' should parse", s);
	return v;
}

static void dur_bad(const char *s)
{
	int64_t v = -12345;
	ck_assert_msg(units_duration_ms(s, &v) == -1, "'%s' should be refused", s);
	ck_assert_int_eq(v, -12345);
}

START_TEST(duration_units)
{
	ck_assert_int_eq(dur("200ms"), 200);
	ck_assert_int_eq(dur("5s"), 5000);
	ck_assert_int_eq(dur("2m"), 120000);
	ck_assert_int_eq(dur("1h"), 3600000);
	ck_assert_int_eq(dur("0"), 0);
	ck_assert_int_eq(dur("0s"), 0);
	ck_assert_int_eq(dur("90s"), 90000);
	ck_assert_int_eq(dur("1m30s"), 90000);
	ck_assert_int_eq(dur("1h2m3s4ms"), 3723004);
	ck_assert_int_eq(dur("2s500ms"), 2500);
	ck_assert_int_eq(dur("007s"), 7000);
}
END_TEST

START_TEST(duration_refusals)
{
	dur_bad("");
	dur_bad("90"); /* bare: ambiguous */
	dur_bad("00");
	dur_bad("5");
	dur_bad("s");
	dur_bad("5sec");
	dur_bad("5S");
	dur_bad("5 s");
	dur_bad(" 5s");
	dur_bad("5s ");
	dur_bad("-5s");
	dur_bad("+5s");
	dur_bad("1.5s");
	dur_bad("5d");
	dur_bad("30s1m"); /* out of order */
	dur_bad("1s1s");  /* repeated */
	dur_bad("1m30");  /* trailing bare number */
	dur_bad("ms");
	dur_bad("1us");
	dur_bad("9223372036854775808ms"); /* > INT64_MAX */
	dur_bad("9223372036854776s");     /* fits as seconds, overflows in ms */
	dur_bad("2562047788016h");        /* the same in hours */
}
END_TEST

START_TEST(duration_edges)
{
	ck_assert_int_eq(dur("9223372036854775807ms"), INT64_MAX);
	ck_assert_int_eq(dur("9223372036854775s"), INT64_C(9223372036854775000));
	ck_assert_int_eq(dur("2562047788015h12m55s807ms"), INT64_MAX);
	/* every part fits, the sum does not */
	dur_bad("2562047788015h12m55s808ms");
	dur_bad("2562047788015h13m");
}
END_TEST

/* A fraction is refused by the parser, but its meaning is known so the message can name
 * the form to write instead (issue 21: "1.5m" was reported as a missing unit). */
START_TEST(duration_fractions_are_refused_with_their_whole_form)
{
	const char *fractions[] = {"1.5m", "0.5s", "1m2.5s", "1.25h", "2.0s", "0.001s"};
	const int64_t whole[] = {90000, 500, 62500, 4500000, 2000, 1};
	for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
		int64_t v = -1;
		dur_bad(fractions[i]);
		ck_assert_msg(units_duration_fraction_ms(fractions[i], &v) == 0, "%s",
		              fractions[i]);
		ck_assert_int_eq(v, whole[i]);
	}
	const char *not_fractions[] = {"90s",     "1.5",    "1.m",      ".5s",           "1.5d",
	                               "0.0005s", "1.5s1m", "1.5s.5ms", "1.1234567891s", ""};
	for (size_t i = 0; i < sizeof not_fractions / sizeof not_fractions[0]; i++) {
		int64_t v = -12345;
		ck_assert_msg(units_duration_fraction_ms(not_fractions[i], &v) == -1, "%s",
		              not_fractions[i]);
		ck_assert_int_eq(v, -12345);
	}
}
END_TEST

START_TEST(sizes)
{
	int64_t v;
	ck_assert_int_eq(units_size("0", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(units_size("65536", &v), 0);
	ck_assert_int_eq(v, 65536);
	ck_assert_int_eq(units_size("512KiB", &v), 0);
	ck_assert_int_eq(v, 512 * 1024);
	ck_assert_int_eq(units_size("64MiB", &v), 0);
	ck_assert_int_eq(v, 64 * 1024 * 1024);
	ck_assert_int_eq(units_size("2GiB", &v), 0);
	ck_assert_int_eq(v, INT64_C(2) * 1024 * 1024 * 1024);
	ck_assert_int_eq(units_size("9223372036854775807", &v), 0);
	ck_assert_int_eq(v, INT64_MAX);
	const char *bad[] = {"",
	                     "MiB",
	                     "64MB",
	                     "64mib",
	                     "64 MiB",
	                     "-1",
	                     "1.5MiB",
	                     "64M",
	                     "64KB",
	                     "64B",
	                     "0x10",
	                     "8589934592GiB",
	                     "9223372036854775808"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		v = -7;
		ck_assert_msg(units_size(bad[i], &v) == -1, "'%s' should be refused", bad[i]);
		ck_assert_int_eq(v, -7);
	}
}
END_TEST

START_TEST(modes)
{
	unsigned m;
	ck_assert_int_eq(units_mode("0640", &m), 0);
	ck_assert_uint_eq(m, 0640);
	ck_assert_int_eq(units_mode("00", &m), 0);
	ck_assert_uint_eq(m, 0);
	ck_assert_int_eq(units_mode("0755", &m), 0);
	ck_assert_uint_eq(m, 0755);
	ck_assert_int_eq(units_mode("07777", &m), 0);
	ck_assert_uint_eq(m, 07777);
	ck_assert_int_eq(units_mode("00644", &m), 0);
	ck_assert_uint_eq(m, 0644);
	const char *bad[] = {"",      "0",     "640",   "420",   "0648",  "010000", "017777",
	                     "0o640", "0x1a4", "-0640", " 0640", "0640 ", "000644"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		m = 99;
		ck_assert_msg(units_mode(bad[i], &m) == -1, "'%s' should be refused", bad[i]);
		ck_assert_uint_eq(m, 99);
	}
}
END_TEST

START_TEST(ints_and_bools)
{
	int64_t v;
	ck_assert_int_eq(units_int("0", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(units_int("-17", &v), 0);
	ck_assert_int_eq(v, -17);
	ck_assert_int_eq(units_int("+17", &v), 0);
	ck_assert_int_eq(v, 17);
	ck_assert_int_eq(units_int("9223372036854775807", &v), 0);
	ck_assert_int_eq(v, INT64_MAX);
	ck_assert_int_eq(units_int("-9223372036854775808", &v), 0);
	ck_assert_int_eq(v, INT64_MIN);
	const char *bad[] = {"",
	                     "-",
	                     "+",
	                     "1.0",
	                     "1e3",
	                     " 1",
	                     "1 ",
	                     "0x10",
	                     "three",
	                     "9223372036854775808",
	                     "-9223372036854775809"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(units_int(bad[i], &v) == -1, "'%s' should be refused", bad[i]);

	int b = 7;
	const char *yes[] = {"true", "True", "TRUE", "yes", "on", "On"};
	const char *no[] = {"false", "False", "no", "NO", "off"};
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
		ck_assert_int_eq(units_bool(yes[i], &b), 0);
		ck_assert_int_eq(b, 1);
	}
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
		ck_assert_int_eq(units_bool(no[i], &b), 0);
		ck_assert_int_eq(b, 0);
	}
	b = 7;
	ck_assert_int_eq(units_bool("1", &b), -1);
	ck_assert_int_eq(units_bool("y", &b), -1);
	ck_assert_int_eq(units_bool("", &b), -1);
	ck_assert_int_eq(units_bool("truee", &b), -1);
	ck_assert_int_eq(b, 7);
}
END_TEST

START_TEST(suggestions)
{
	const char *keys[] = {"servers",         "username", "password", "read_timeout",
	                      "connect_timeout", "retry",    "tls"};
	size_t n = sizeof keys / sizeof keys[0];
	ck_assert_str_eq(suggest_closest("read_timout", keys, n), "read_timeout");
	ck_assert_str_eq(suggest_closest("sevrers", keys, n), "servers");
	ck_assert_str_eq(suggest_closest("server", keys, n), "servers");
	ck_assert_str_eq(suggest_closest("UserName", keys, n), "username");
	ck_assert_str_eq(suggest_closest("tsl", keys, n), "tls");
	ck_assert_ptr_null(suggest_closest("foo", keys, n));
	ck_assert_ptr_null(suggest_closest("completely_different", keys, n));
	ck_assert_uint_eq(suggest_distance("abc", "abc"), 0);
	ck_assert_uint_eq(suggest_distance("abc", "acb"), 1);
	ck_assert_uint_eq(suggest_distance("", "abc"), 3);
	ck_assert_uint_eq(suggest_distance("kitten", "sitting"), 3);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("units");
	TCase *tc = tcase_create("units");
	tcase_add_test(tc, duration_units);
	tcase_add_test(tc, duration_refusals);
	tcase_add_test(tc, duration_edges);
	tcase_add_test(tc, duration_fractions_are_refused_with_their_whole_form);
	tcase_add_test(tc, sizes);
	tcase_add_test(tc, modes);
	tcase_add_test(tc, ints_and_bools);
	tcase_add_test(tc, suggestions);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
