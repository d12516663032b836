/*
 * systemd notification without systemd: the test plays systemd's part with its own
 * AF_UNIX datagram socket (by path and abstract) and checks what the agent sends: nothing
 * "ready" before every group holds data, READY=1 once it does, WATCHDOG=1 at half of
 * WATCHDOG_USEC (and none when the dispatcher is missing), STATUS= lines, STOPPING=1.
 */
#include <check.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.h"
#include "deliver/dispatch.h"
#include "ops/notify.h"
#include "store/store.h"
#include "subtest.h"

static char *dir;
static char sock_path[4300];
static int sock = -1;
static struct gw_log *lg;

static int bind_dgram(const char *name, size_t len)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_un sa;
	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	ck_assert_uint_lt(len, sizeof sa.sun_path);
	memcpy(sa.sun_path, name, len);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa,
	                      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)),
	                 0);
	return fd;
}

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(sock_path, sizeof sock_path, "%s/notify.sock", dir);
	sock = bind_dgram(sock_path, strlen(sock_path));
	lg = test_log(NULL);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

static void teardown(void)
{
	close(sock);
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

/* One datagram within timeout_ms into buf ("" if none). */
static int recv_msg(int fd, char *buf, size_t cap, int timeout_ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	buf[0] = '\0';
	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	ssize_t n = recv(fd, buf, cap - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return 1;
}

/* Collect datagrams for ms; count those containing `needle`. */
struct tally {
	int ready, watchdog, stopping, status;
	char last_status[512];
};

static void collect(int fd, int64_t ms, struct tally *t)
{
	int64_t until = gw_mono_ms() + ms;
	char buf[1024];
	for (int64_t left; (left = until - gw_mono_ms()) > 0;) {
		if (!recv_msg(fd, buf, sizeof buf, (int)left))
			break;
		t->ready += strstr(buf, "READY=1") != NULL;
		t->watchdog += strstr(buf, "WATCHDOG=1") != NULL;
		t->stopping += strstr(buf, "STOPPING=1") != NULL;
		const char *s = strstr(buf, "STATUS=");
		if (s) {
			t->status++;
			snprintf(t->last_status, sizeof t->last_status, "%s", s + 7);
		}
	}
}

START_TEST(send_to_path_and_abstract_sockets)
{
	struct gw_err err = {0};
	char buf[256];
	ck_assert_msg(notify_send(sock_path, "READY=1", &err) == 0, "%s", err.msg);
	ck_assert(recv_msg(sock, buf, sizeof buf, 1000));
	ck_assert_str_eq(buf, "READY=1");

	char abstract[64];
	int n = snprintf(abstract, sizeof abstract, "@gwsync-check-notify-%d", (int)getpid());
	char raw[64];
	memcpy(raw, abstract, (size_t)n);
	raw[0] = '\0';
	int afd = bind_dgram(raw, (size_t)n);
	ck_assert_msg(notify_send(abstract, "WATCHDOG=1", &err) == 0, "%s", err.msg);
	ck_assert(recv_msg(afd, buf, sizeof buf, 1000));
	ck_assert_str_eq(buf, "WATCHDOG=1");
	close(afd);

	ck_assert_int_eq(notify_send("relative/path", "X=1", &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "relative/path"));
	ck_assert_int_eq(notify_send("", "X=1", &err), -1);
	char missing[4400];
	snprintf(missing, sizeof missing, "%s/nobody.sock", dir);
	ck_assert_int_eq(notify_send(missing, "X=1", &err), -1);
}
END_TEST

START_TEST(watchdog_interval)
{
	pid_t me = getpid();
	char mine[32];
	snprintf(mine, sizeof mine, "%d", (int)me);
	ck_assert_int_eq(notify_watchdog_interval_ms(NULL, NULL, me), -1);
	ck_assert_int_eq(notify_watchdog_interval_ms("", NULL, me), -1);
	ck_assert_int_eq(notify_watchdog_interval_ms("30000000", NULL, me), 15000);
	ck_assert_int_eq(notify_watchdog_interval_ms("30000000", mine, me), 15000);
	ck_assert_int_eq(notify_watchdog_interval_ms("30000000", "1", me), -1); /* not us */
	ck_assert_int_eq(notify_watchdog_interval_ms("30000000", "x", me), -1);
	ck_assert_int_eq(notify_watchdog_interval_ms("0", NULL, me), -1);
	ck_assert_int_eq(notify_watchdog_interval_ms("-5", NULL, me), -1);
	ck_assert_int_eq(notify_watchdog_interval_ms("12abc", NULL, me), -1);
	ck_assert_int_eq(notify_watchdog_interval_ms("1500", NULL, me), 1);
}
END_TEST

static void hold_all(struct store *st, const struct cfg *cfg)
{
	const char *kv[] = {"k1", "{\"id\":\"k1\"}", NULL};
	for (size_t k = 0; k < cfg->n_groups; k++) {
		struct group_data *gd = gd_make(cfg->groups[k], "m", 1, kv);
		store_swap(st, gd, ingest_accept_polled, NULL);
		group_data_unref(gd);
	}
}

static void count_end(void *arg)
{
	atomic_fetch_add((atomic_int *)arg, 1);
}

/* What the notifier watches: a configuration, a store, a dispatcher with no subscriber,
 * and the notifier started over them (started_wall_ms as given). */
struct rig {
	struct tcfg t;
	struct subscribers none; /* the dispatcher's: lives as long as it */
	struct store *st;
	struct dispatcher *d;
	struct status_sources src;
	struct notifier *n;
};

static void rig_start(struct rig *r, int64_t started_wall_ms)
{
	memset(r, 0, sizeof *r);
	tcfg_init(&r->t);
	r->st = store_new();
	struct gw_err err = {0};
	ck_assert_msg(dispatcher_start(&r->d, &r->none, r->st, &r->t.cfg, lg, &err) == 0, "%s",
	              err.msg);
	r->src.cfg = &r->t.cfg;
	r->src.store = r->st;
	r->src.dispatcher = r->d;
	r->src.log = lg;
	r->src.started_wall_ms = started_wall_ms;
	ck_assert_msg(notify_start(&r->n, &r->src, &err) == 0, "%s", err.msg);
}

START_TEST(ready_watchdog_status_stopping)
{
	setenv("NOTIFY_SOCKET", sock_path, 1);
	setenv("WATCHDOG_USEC", "200000", 1); /* ping every 100 ms */
	struct rig r;
	rig_start(&r, gw_wall_ms());
	struct store *st = r.st;
	struct dispatcher *d = r.d;
	struct notifier *n = r.n;
	atomic_int ended = 0;
	notify_on_end(n, count_end, &ended);

	struct tally a = {0};
	collect(sock, 600, &a);
	ck_assert_int_eq(a.ready, 0);
	ck_assert_int_eq(notify_is_ready(n), 0);
	ck_assert_int_ge(a.watchdog, 3); /* pings do not wait for readiness */
	ck_assert_int_ge(a.status, 1);
	ck_assert_ptr_nonnull(strstr(a.last_status, "waiting for data"));

	hold_all(st, &r.t.cfg);
	struct tally b = {0};
	collect(sock, 1500, &b);
	ck_assert_int_eq(b.ready, 1); /* exactly once */
	ck_assert_int_eq(notify_is_ready(n), 1);
	ck_assert_ptr_nonnull(strstr(b.last_status, "5 groups held"));
	ck_assert_int_ge(b.watchdog, 5);
	ck_assert_int_eq(atomic_load(&ended), 0); /* under systemd it stays */

	notify_stop(n); /* stop is asynchronous and idempotent: STOPPING=1 goes once */
	notify_stop(n);
	notify_free(n);
	struct tally c = {0};
	collect(sock, 300, &c);
	ck_assert_int_eq(c.stopping, 1);
	ck_assert_int_eq(atomic_load(&ended), 0); /* a stop is not an end to report */
	dispatcher_stop(d);
	dispatcher_stop(d);
	dispatcher_free(d);
	store_free(st);
	tcfg_free(&r.t);
}
END_TEST

START_TEST(no_dispatcher_no_pings_not_ready)
{
	setenv("NOTIFY_SOCKET", sock_path, 1);
	setenv("WATCHDOG_USEC", "100000", 1);
	struct tcfg t;
	tcfg_init(&t);
	struct store *st = store_new();
	hold_all(st, &t.cfg);
	struct status_sources src;
	memset(&src, 0, sizeof src);
	src.cfg = &t.cfg;
	src.store = st;
	src.log = lg;
	struct notifier *n = NULL;
	struct gw_err err = {0};
	ck_assert_msg(notify_start(&n, &src, &err) == 0, "%s", err.msg);
	struct tally a = {0};
	collect(sock, 500, &a);
	ck_assert_int_eq(a.ready, 0);
	ck_assert_int_eq(a.watchdog, 0);
	notify_free(n);
	store_free(st);
	tcfg_free(&t);
}
END_TEST

START_TEST(without_a_socket_the_thread_ends_once_ready_and_says_so)
{
	struct rig r;
	rig_start(&r, 0);
	struct store *st = r.st;
	struct dispatcher *d = r.d;
	struct notifier *n = r.n;
	atomic_int ended = 0;
	notify_on_end(n, count_end, &ended);
	sleep_ms(300);
	ck_assert_int_eq(atomic_load(&ended), 0); /* not ready: it keeps looking */
	notify_reap(n);                           /* and a reap leaves it running */
	hold_all(st, &r.t.cfg);
	int64_t until = gw_mono_ms() + 2000;
	while (atomic_load(&ended) == 0 && gw_mono_ms() < until)
		sleep_ms(10);
	ck_assert_int_eq(notify_is_ready(n), 1);
	ck_assert_int_eq(atomic_load(&ended), 1);
	notify_reap(n);
	notify_reap(n);
	/* registered after the end: told at once */
	atomic_int late = 0;
	notify_on_end(n, count_end, &late);
	ck_assert_int_eq(atomic_load(&late), 1);
	notify_free(n);
	ck_assert_int_eq(atomic_load(&ended), 1); /* once */
	dispatcher_free(d);
	store_free(st);
	tcfg_free(&r.t);
}
END_TEST

START_TEST(without_notify_socket_still_tracks_readiness)
{
	struct rig r;
	rig_start(&r, 0);
	struct store *st = r.st;
	struct dispatcher *d = r.d;
	struct notifier *n = r.n;
	hold_all(st, &r.t.cfg);
	int64_t until = gw_mono_ms() + 2000;
	while (!notify_is_ready(n) && gw_mono_ms() < until)
		sleep_ms(10);
	ck_assert_int_eq(notify_is_ready(n), 1);
	/* nothing was sent anywhere */
	char buf[64];
	ck_assert_int_eq(recv_msg(sock, buf, sizeof buf, 50), 0);
	int64_t t0 = gw_mono_ms();
	notify_free(n);
	ck_assert_int_lt(gw_mono_ms() - t0, 500); /* stops at once, not after its nap */
	dispatcher_free(d);
	store_free(st);
	tcfg_free(&r.t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, send_to_path_and_abstract_sockets);
	tcase_add_test(tc, watchdog_interval);
	tcase_add_test(tc, ready_watchdog_status_stopping);
	tcase_add_test(tc, no_dispatcher_no_pings_not_ready);
	tcase_add_test(tc, without_notify_socket_still_tracks_readiness);
	tcase_add_test(tc, without_a_socket_the_thread_ends_once_ready_and_says_so);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
