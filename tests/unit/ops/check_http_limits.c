/*
 * The status endpoint's connection table and descriptor budget (ops/http_limits.h), without
 * a socket: which connection makes room for a new one (the least recently active of the
 * same address at the per-address bound, of all at the global bound, one with a request
 * waiting last), the accounting of connections leaving and gone, addresses (an IPv4-mapped
 * IPv6 address is the IPv4 peer), and the open-files limit raised or the bound lowered.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ops/http_limits.h"

static struct http_peer peer4(const char *ip)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
	struct http_peer p;
	http_peer_from(&p, (struct sockaddr *)&sa, sizeof sa);
	return p;
}

/* a fixed pool of connections; busy marks "a request is waiting in its socket" */
#define POOL 32
static struct http_conn pool[POOL];
static int busy_flag[POOL];

static int busy(struct http_conn *c, void *arg)
{
	(void)arg;
	return busy_flag[c - pool];
}

static struct http_conn *add(struct http_conns *t, int i, const char *ip, int64_t when)
{
	memset(&pool[i], 0, sizeof pool[i]);
	pool[i].peer = peer4(ip);
	http_conns_add(t, &pool[i], when);
	return &pool[i];
}

START_TEST(room_is_made_by_the_least_recently_active_of_the_same_address)
{
	memset(busy_flag, 0, sizeof busy_flag);
	struct http_conns t;
	http_conns_init(&t, 10, 3);
	struct http_peer a = peer4("10.0.0.1"), b = peer4("10.0.0.2");
	ck_assert_ptr_null(http_conns_victim(&t, &a, busy, NULL));
	add(&t, 0, "10.0.0.1", 1);
	add(&t, 1, "10.0.0.2", 2);
	add(&t, 2, "10.0.0.1", 3);
	add(&t, 3, "10.0.0.1", 4);
	/* a holds 3: its oldest goes for a fourth, b still has room */
	ck_assert_ptr_eq(http_conns_victim(&t, &a, busy, NULL), &pool[0]);
	ck_assert_ptr_null(http_conns_victim(&t, &b, busy, NULL));
	/* a request on the oldest makes it the most recent */
	http_conns_touch(&t, &pool[0], 5);
	ck_assert_ptr_eq(http_conns_victim(&t, &a, busy, NULL), &pool[2]);
	/* one with a request waiting goes last */
	busy_flag[2] = 1;
	ck_assert_ptr_eq(http_conns_victim(&t, &a, busy, NULL), &pool[3]);
	busy_flag[3] = busy_flag[0] = 1;
	ck_assert_ptr_eq(http_conns_victim(&t, &a, busy, NULL), &pool[2]); /* all busy: oldest */
	/* a leaving one no longer counts */
	busy_flag[0] = busy_flag[2] = busy_flag[3] = 0;
	http_conns_leave(&t, &pool[2]);
	ck_assert_uint_eq(t.count, 3);
	ck_assert_uint_eq(t.leaving, 1);
	ck_assert_ptr_null(http_conns_victim(&t, &a, busy, NULL));
	http_conns_remove(&t, &pool[2]);
	ck_assert_uint_eq(t.leaving, 0);
	ck_assert_uint_eq(t.count, 3);
	http_conns_remove(&t, &pool[1]);
	ck_assert_uint_eq(t.count, 2);
	ck_assert_ptr_eq(t.head, &pool[3]);
	ck_assert_ptr_eq(t.tail, &pool[0]);
}
END_TEST

START_TEST(room_is_made_by_the_least_recently_active_of_all_at_the_bound)
{
	memset(busy_flag, 0, sizeof busy_flag);
	struct http_conns t;
	http_conns_init(&t, 4, 64);
	char ip[32];
	for (int i = 0; i < 4; i++) {
		snprintf(ip, sizeof ip, "10.0.1.%d", i + 1);
		add(&t, i, ip, i + 1);
	}
	struct http_peer newcomer = peer4("10.0.2.1");
	ck_assert_ptr_eq(http_conns_victim(&t, &newcomer, busy, NULL), &pool[0]);
	http_conns_touch(&t, &pool[0], 10);
	http_conns_touch(&t, &pool[1], 11);
	ck_assert_ptr_eq(http_conns_victim(&t, &newcomer, busy, NULL), &pool[2]);
	busy_flag[2] = 1;
	ck_assert_ptr_eq(http_conns_victim(&t, &newcomer, busy, NULL), &pool[3]);
	/* out of descriptors: the least recently active of all, whatever the bound */
	http_conns_remove(&t, &pool[3]);
	ck_assert_ptr_null(http_conns_victim(&t, &newcomer, busy, NULL));
	ck_assert_ptr_eq(http_conns_victim(&t, NULL, busy, NULL), &pool[0]);
	ck_assert_ptr_eq(http_conns_victim(&t, NULL, NULL, NULL), &pool[2]);
	/* nothing held: nothing to close */
	http_conns_remove(&t, &pool[0]);
	http_conns_remove(&t, &pool[1]);
	http_conns_remove(&t, &pool[2]);
	ck_assert_ptr_null(http_conns_victim(&t, NULL, busy, NULL));
	ck_assert_ptr_null(t.head);
	ck_assert_ptr_null(t.tail);
}
END_TEST

START_TEST(addresses)
{
	char text[64];
	struct http_peer a = peer4("192.0.2.7");
	http_peer_text(&a, text, sizeof text);
	ck_assert_str_eq(text, "192.0.2.7");
	/* the same client over an IPv6 socket (::ffff:192.0.2.7) is the same peer */
	struct sockaddr_in6 s6;
	memset(&s6, 0, sizeof s6);
	s6.sin6_family = AF_INET6;
	ck_assert_int_eq(inet_pton(AF_INET6, "::ffff:192.0.2.7", &s6.sin6_addr), 1);
	struct http_peer m;
	http_peer_from(&m, (struct sockaddr *)&s6, sizeof s6);
	ck_assert_int_eq(m.family, AF_INET);
	ck_assert_int_eq(memcmp(m.addr, a.addr, 4), 0);
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8::1", &s6.sin6_addr), 1);
	http_peer_from(&m, (struct sockaddr *)&s6, sizeof s6);
	http_peer_text(&m, text, sizeof text);
	ck_assert_str_eq(text, "2001:db8::1");
	/* an unknown family is never counted with another */
	struct sockaddr un = {.sa_family = AF_UNIX};
	struct http_peer u;
	http_peer_from(&u, &un, sizeof un);
	ck_assert_int_eq(u.family, 0);
	http_peer_text(&u, text, sizeof text);
	ck_assert_str_eq(text, "?");
	struct http_conns t;
	http_conns_init(&t, 10, 1);
	pool[0].peer = u;
	http_conns_add(&t, &pool[0], 1);
	ck_assert_ptr_null(http_conns_victim(&t, &u, NULL, NULL));
}
END_TEST

START_TEST(the_open_files_limit_is_raised_when_too_low)
{
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2000)
		return; /* cannot lower then raise it here */
	char note[512], want[256];
	const size_t need = HTTP_MAX_CONNECTIONS + HTTP_ACCEPT_BURST + HTTP_FD_RESERVE;
	/* enough already: nothing changes */
	rl.rlim_cur = need;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_uint_eq(http_fd_budget(HTTP_MAX_CONNECTIONS, HTTP_FD_RESERVE, note, sizeof note),
	                  HTTP_MAX_CONNECTIONS);
	ck_assert_str_eq(note, "");
	/* too low: raised to what is needed, not to the hard limit */
	rl.rlim_cur = need - 100;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_uint_eq(http_fd_budget(HTTP_MAX_CONNECTIONS, HTTP_FD_RESERVE, note, sizeof note),
	                  HTTP_MAX_CONNECTIONS);
	snprintf(want, sizeof want, "raised the open files limit (RLIMIT_NOFILE) from %zu to %zu",
	         need - 100, need);
	ck_assert_str_eq(note, strcat(want, " for the status endpoint's connections"));
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_uint_eq(rl.rlim_cur, need);
}
END_TEST

START_TEST(fewer_connections_when_the_hard_limit_is_too_low)
{
	struct rlimit rl = {600, 600};
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0); /* this test's process only */
	char note[512], want[256];
	size_t fit = 600 - 256 - HTTP_ACCEPT_BURST;
	ck_assert_uint_eq(http_fd_budget(1024, 256, note, sizeof note), fit);
	snprintf(want, sizeof want,
	         "the open files limit (RLIMIT_NOFILE) is 600 (hard 600): the status endpoint "
	         "holds at most %zu connections instead of 1024",
	         fit);
	ck_assert_str_eq(note, want);
	rl.rlim_cur = rl.rlim_max = 200;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_uint_eq(http_fd_budget(1024, 256, note, sizeof note), HTTP_MIN_CONNECTIONS);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("http_limits");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, room_is_made_by_the_least_recently_active_of_the_same_address);
	tcase_add_test(tc, room_is_made_by_the_least_recently_active_of_all_at_the_bound);
	tcase_add_test(tc, addresses);
	tcase_add_test(tc, the_open_files_limit_is_raised_when_too_low);
	tcase_add_test(tc, fewer_connections_when_the_hard_limit_is_too_low);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	/* the limit tests change this process's RLIMIT_NOFILE: each test in its own process */
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
