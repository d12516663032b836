/*
 * The control socket (ops/control.h) with its client (`gwsyncd --pause`, ops/status_client.h):
 * pause and resume through it, the socket's mode, a second agent refused, a stale socket
 * file replaced, the file removed at the end, and a user without permission refused by the
 * kernel (as root only: the test drops to `nobody` in a child process). A socket under a
 * directory too deep for a Unix socket's address works all the same (issue 20, item 8); and
 * setting its mode never follows a symlink swapped in for it (item 7): bind() is wrapped
 * here (this binary links the agent's objects statically, so its bind() is the one they
 * call) to play the attacker right after the real bind.
 */
#include <check.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "ops/control.h"
#include "ops/pause.h"
#include "ops/status_client.h"
#include "subtest.h"

static char *dir;
static char sock[600];

/* The attacker: when set, bind() replaces the socket file it just made by a symlink to it. */
static const char *swap_to;

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int rc = (int)syscall(SYS_bind, fd, sa, len);
	if (rc == 0 && swap_to && sa->sa_family == AF_UNIX) {
		const char *bound = ((const struct sockaddr_un *)sa)->sun_path;
		char link[200];
		snprintf(link, sizeof link, "%s.swap", bound);
		ck_assert_int_eq(symlink(swap_to, link), 0);
		ck_assert_int_eq(rename(link, bound), 0);
	}
	return rc;
}
static struct gw_log *lg;
static struct pause_switch *ps;
static struct cfg cfg;

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(sock, sizeof sock, "%s/run/control.sock", dir);
	lg = test_log(NULL);
	struct gw_err err = {0};
	ck_assert_msg(pause_open(&ps, dir, lg, &err) == 0, "%s", err.msg);
	memset(&cfg, 0, sizeof cfg);
	cfg.control_socket = sock;
	cfg.state_dir = dir;
}

static void teardown(void)
{
	pause_close(ps);
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

START_TEST(pause_and_resume_through_the_socket)
{
	struct control *c = NULL;
	struct gw_err err = {0};
	ck_assert_msg(control_start(&c, sock, ps, lg, &err) == 0, "%s", err.msg);
	struct stat sb;
	ck_assert_int_eq(stat(sock, &sb), 0);
	ck_assert(S_ISSOCK(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 0777, 0660); /* the agent's user and group, nobody else */

	ck_assert_msg(status_client_send(&cfg, 1, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pause_get(ps), 1);
	ck_assert_int_eq(stat(pause_path(ps), &sb), 0); /* kept across a restart */
	ck_assert_msg(status_client_send(&cfg, 1, &err) == 0, "%s", err.msg); /* already */
	ck_assert_msg(status_client_send(&cfg, 0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pause_get(ps), 0);

	/* a second agent on the same socket is refused, the first keeps it */
	struct control *again = NULL;
	ck_assert_int_eq(control_start(&again, sock, ps, lg, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "another agent answers"));
	ck_assert_msg(status_client_send(&cfg, 1, &err) == 0, "%s", err.msg);

	control_free(c);
	ck_assert_int_eq(stat(sock, &sb), -1); /* removed at the end */
	/* and with no agent the client says so */
	ck_assert_int_eq(status_client_send(&cfg, 0, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "no agent answered at"));
}
END_TEST

START_TEST(a_stale_socket_file_is_replaced)
{
	/* a crash leaves the file behind with nobody listening */
	struct gw_err err = {0};
	struct control *c = NULL;
	ck_assert_msg(control_start(&c, sock, ps, lg, &err) == 0, "%s", err.msg);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s.stale", sock);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	close(fd); /* the file stays, nothing listens */
	control_free(c);
	ck_assert_msg(control_start(&c, sa.sun_path, ps, lg, &err) == 0, "%s", err.msg);
	cfg.control_socket = sa.sun_path;
	ck_assert_msg(status_client_send(&cfg, 1, &err) == 0, "%s", err.msg);
	control_free(c);
}
END_TEST

START_TEST(a_path_that_is_not_a_socket_is_never_touched)
{
	/* a mistyped control_socket naming the configuration file must not delete it */
	char file[700];
	snprintf(file, sizeof file, "%s/gwsync.yaml", dir);
	FILE *f = fopen(file, "w");
	fputs("admin: {}\n", f);
	fclose(f);
	struct control *c = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(control_start(&c, file, ps, lg, &err), -1);
	ck_assert_msg(strstr(err.msg, "is not a socket"), "%s", err.msg);
	struct stat sb;
	ck_assert_int_eq(stat(file, &sb), 0);
	ck_assert(S_ISREG(sb.st_mode));
	ck_assert_int_eq(sb.st_size, 10);
}
END_TEST

START_TEST(a_user_without_permission_is_refused)
{
	if (geteuid() != 0)
		return; /* needs root to become another user */
	struct passwd *pw = getpwnam("nobody");
	ck_assert_ptr_nonnull(pw);
	struct gw_err err = {0};
	struct control *c = NULL;
	chmod(dir, 0755); /* others may reach the socket file, not use it */
	char run[700];
	snprintf(run, sizeof run, "%s/run", dir);
	ck_assert_msg(control_start(&c, sock, ps, lg, &err) == 0, "%s", err.msg);
	chmod(run, 0755);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
			_exit(3);
		struct gw_err e = {0};
		int rc = status_client_send(&cfg, 1, &e);
		_exit(rc == -1 && strstr(e.msg, "not allowed to use the control socket") ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	ck_assert_int_eq(pause_get(ps), 0); /* nothing changed */
	control_free(c);
}
END_TEST

START_TEST(a_socket_under_a_deep_directory_works)
{
	/* state_dir on a deep volume: the socket's path is far longer than sun_path's 108 bytes */
	char deep[1200];
	int n = snprintf(deep, sizeof deep, "%s", dir);
	for (int i = 0; i < 8; i++)
		n += snprintf(deep + n, sizeof deep - (size_t)n,
		              "/var-lib-kubelet-pods-0123456789abcdef-volumes-%d", i);
	char path[1300];
	snprintf(path, sizeof path, "%s/control.sock", deep);
	ck_assert_uint_gt(strlen(path), 400);
	struct gw_err err = {0};
	struct control *c = NULL;
	ck_assert_msg(control_start(&c, path, ps, lg, &err) == 0, "%s", err.msg);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert(S_ISSOCK(sb.st_mode));
	ck_assert_int_eq(sb.st_mode & 0777, 0660);
	cfg.control_socket = path;
	ck_assert_msg(status_client_send(&cfg, 1, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pause_get(ps), 1);
	/* a second agent is refused there too; a stale file is replaced */
	struct control *again = NULL;
	ck_assert_int_eq(control_start(&again, path, ps, lg, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "another agent answers"));
	control_free(c);
	ck_assert_int_eq(stat(path, &sb), -1);
	ck_assert_int_eq(status_client_send(&cfg, 0, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "no agent answered at"));
	ck_assert_msg(control_start(&c, path, ps, lg, &err) == 0, "%s", err.msg);
	ck_assert_msg(status_client_send(&cfg, 0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pause_get(ps), 0);
	control_free(c);
}
END_TEST

START_TEST(the_mode_is_never_set_through_a_symlink)
{
	/* a file of the agent's user that a symlink swapped in for the socket points at */
	char victim[700];
	snprintf(victim, sizeof victim, "%s/victim", dir);
	FILE *f = fopen(victim, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(chmod(victim, 0600), 0);
	struct gw_err err = {0};
	struct control *c = NULL;
	swap_to = victim;
	int rc = control_start(&c, sock, ps, lg, &err);
	swap_to = NULL;
	struct stat sb;
	ck_assert_int_eq(stat(victim, &sb), 0);
	ck_assert_msg((sb.st_mode & 0777) == 0600, "the victim's mode became %04o",
	              sb.st_mode & 0777);
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strstr(err.msg, "was replaced (by a symlink); not touching it"), "%s",
	              err.msg);
	ck_assert_int_eq(lstat(sock, &sb), -1); /* nothing left at the real name */
	/* and the next start, with nobody playing tricks, works */
	ck_assert_msg(control_start(&c, sock, ps, lg, &err) == 0, "%s", err.msg);
	control_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("control");
	TCase *tc = tcase_create("control");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pause_and_resume_through_the_socket);
	tcase_add_test(tc, a_stale_socket_file_is_replaced);
	tcase_add_test(tc, a_path_that_is_not_a_socket_is_never_touched);
	tcase_add_test(tc, a_user_without_permission_is_refused);
	tcase_add_test(tc, a_socket_under_a_deep_directory_works);
	tcase_add_test(tc, the_mode_is_never_set_through_a_symlink);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
