/*
 * Unit tests of the one-thread sources' shell (source/kv/shell.h), over a source of the test's
 * own: the start-up sync tries the servers in order and says which failed and how, stop()
 * interrupts and wakes the thread, free() joins it before the source's own parts go,
 * status() adds the mirror's counts, and the configuration-only entries the macros write
 * answer for their type alone. The five sources' own tests and black-box tests check the
 * same from outside.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_walk.h"
#include "core/clock.h"
#include "source/kv/shell.h"
#include "testfiles.h"

/* What the test's source saw, kept outside it: free() frees the source. */
struct record {
	int reads[8]; /* the servers first_read was asked, in order */
	size_t n_reads;
	int nexts;
	int interrupted;
	atomic_int runs;   /* threads that ran */
	atomic_int ended;  /* the thread returned (set before release() may look) */
	int released;      /* release() came */
	int ended_first;   /* the thread had returned when release() came */
	int stop_at_read;  /* first_read sets stop on this read (1-based); 0: never */
	int answers;       /* the server whose read works; -1: none */
	int64_t run_until; /* the thread's pause: monotonic ms */
	int dues, waits;   /* a pause's calls of due() and wait() */
	int64_t waited;    /* the longest wait asked for */
};

struct source {
	struct kv_shell sh;
	struct record *rec;
	size_t ep; /* the server the start-up sync ended on */
};

static const enum sync_fail kinds[] = {SYNC_FAIL_CONNECT, SYNC_FAIL_AUTH, SYNC_FAIL_TIMEOUT};

static int test_first_read(struct source *s, size_t i, struct gw_err *err)
{
	struct record *r = s->rec;
	r->reads[r->n_reads++] = (int)i;
	if (r->stop_at_read && (int)r->n_reads == r->stop_at_read)
		atomic_store(&s->sh.stop, 1);
	if ((int)i == r->answers) {
		s->ep = i;
		return 0;
	}
	err->kind = kinds[i % 3];
	snprintf(err->msg, sizeof err->msg, "server %zu refused", i);
	return -1;
}

static void test_next(struct source *s)
{
	s->rec->nexts++;
}

/* The thread: sleeps in the pause stop() ends (a minute unless woken). */
static void *test_run(void *arg)
{
	struct source *s = arg;
	atomic_fetch_add(&s->rec->runs, 1);
	kv_shell_pause(&s->sh, s->rec->run_until - gw_mono_ms());
	atomic_store(&s->rec->ended, 1);
	return NULL;
}

static void test_interrupt(struct source *s)
{
	s->rec->interrupted++;
}

static void test_release(struct source *s)
{
	s->rec->released++;
	s->rec->ended_first = atomic_load(&s->rec->ended);
}

static void test_counts(struct source *s, struct kv_mirror_stats *ms, int64_t *watches)
{
	(void)s;
	ms->versions = 7;
	ms->repairs = 2;
	ms->last_event_ms = 1234;
	*watches = 42;
}

static const struct kv_shell_ops test_shell = {
    .type = "test",
    .thread = "test-0",
    .server_noun = "Test server",
    .run = test_run,
    .interrupt = test_interrupt,
    .release = test_release,
    .counts = test_counts,
    .first_read = test_first_read,
    .next = test_next,
};

/* A pause over a watch of the source's own: due() has something due every 5 ms, wait()
 * sleeps as asked and stops the source on its third call. */
static int64_t test_due(struct source *s, int64_t now)
{
	s->rec->dues++;
	return now + 5;
}

static void test_wait(struct source *s, int64_t ms)
{
	struct record *r = s->rec;
	if (ms > r->waited)
		r->waited = ms;
	if (++r->waits == 3)
		atomic_store(&s->sh.stop, 1);
	usleep((useconds_t)ms * 1000);
}

static const struct kv_shell_ops watch_shell = {
    .type = "test",
    .thread = "test-0",
    .server_noun = "Test server",
    .run = test_run,
    .counts = test_counts,
    .first_read = test_first_read,
    .due = test_due,
    .wait = test_wait,
};

struct fix {
	char *dir; /* the log's (test_tmpdir) */
	struct gw_log *log;
	char log_path[512];
	struct record rec;
	struct source *s;
};

static void fix_init(struct fix *f, size_t n_servers)
{
	memset(f, 0, sizeof *f);
	struct gw_err err = {0};
	f->dir = test_tmpdir();
	ck_assert_ptr_nonnull(f->dir);
	snprintf(f->log_path, sizeof f->log_path, "%s/shell.log", f->dir);
	ck_assert_int_eq(gw_log_open(&f->log, GW_LOG_INFO, GW_LOG_TEXT, f->log_path, &err), 0);
	f->rec.answers = -1;
	f->rec.run_until = gw_mono_ms() + 60000;
	struct source_args args = {NULL, NULL, f->log};
	f->s = kv_shell_new(sizeof *f->s, &test_shell, &args, "test://a,b,c/root", NULL, n_servers,
	                    &err);
	ck_assert_ptr_nonnull(f->s);
	f->s->rec = &f->rec;
}

/* The source freed unless a test did (f->s NULL), the log closed and removed. */
static void fix_free(struct fix *f)
{
	kv_shell_free(f->s);
	gw_log_close(f->log);
	rm_rf(f->dir);
	free(f->dir);
}

START_TEST(the_start_up_sync_ends_at_the_first_server_that_answers)
{
	struct fix f;
	fix_init(&f, 3);
	f.rec.answers = 1;
	struct gw_err err = {0};
	ck_assert_int_eq(kv_shell_initial_sync(f.s, &err), 0);
	ck_assert_uint_eq(f.rec.n_reads, 2);
	ck_assert_int_eq(f.rec.reads[0], 0);
	ck_assert_int_eq(f.rec.reads[1], 1);
	ck_assert_uint_eq(f.s->ep, 1);
	ck_assert_int_eq(f.rec.nexts, 1); /* after the failed one only */
	/* the failure before it: counted by its kind, kept, logged with its reason */
	struct source_conn_status st;
	ck_assert_int_eq(kv_shell_status(f.s, 0, &st), 1);
	ck_assert_uint_eq(st.failures[SYNC_FAIL_CONNECT], 1);
	ck_assert_str_eq(st.last_error, "server 0 refused");
	char *log = slurp(f.log_path, NULL);
	ck_assert_ptr_nonnull(strstr(log, "server 0 refused [connect]"));
	ck_assert_ptr_null(strstr(log, "server 1"));
	free(log);
	fix_free(&f);
}
END_TEST

START_TEST(no_server_answering_names_how_many_were_tried_and_the_last_failure)
{
	struct fix f;
	fix_init(&f, 3);
	struct gw_err err = {0};
	ck_assert_int_eq(kv_shell_initial_sync(f.s, &err), -1);
	ck_assert_str_eq(err.msg, "no Test server answered (3 tried); the last: server 2 refused");
	ck_assert_uint_eq(f.rec.n_reads, 3);
	struct source_conn_status st;
	ck_assert_int_eq(kv_shell_status(f.s, 0, &st), 1);
	ck_assert_uint_eq(st.failures[SYNC_FAIL_CONNECT], 1);
	ck_assert_uint_eq(st.failures[SYNC_FAIL_AUTH], 1);
	ck_assert_uint_eq(st.failures[SYNC_FAIL_TIMEOUT], 1);
	char *log = slurp(f.log_path, NULL);
	ck_assert_ptr_nonnull(strstr(log, "server 1 refused [auth]"));
	ck_assert_ptr_nonnull(strstr(log, "server 2 refused [timeout]"));
	free(log);
	fix_free(&f);
}
END_TEST

START_TEST(a_stop_ends_the_start_up_sync_without_counting_a_failure)
{
	struct fix f;
	fix_init(&f, 3);
	struct gw_err err = {0};
	/* stopped before it began: no server is asked */
	atomic_store(&f.s->sh.stop, 1);
	ck_assert_int_eq(kv_shell_initial_sync(f.s, &err), -1);
	ck_assert_str_eq(err.msg, "start-up sync interrupted");
	ck_assert_uint_eq(f.rec.n_reads, 0);
	/* stopped during a read: its failure is not counted, no next server asked */
	atomic_store(&f.s->sh.stop, 0);
	f.rec.stop_at_read = 2;
	ck_assert_int_eq(kv_shell_initial_sync(f.s, &err), -1);
	ck_assert_str_eq(err.msg, "start-up sync interrupted");
	ck_assert_uint_eq(f.rec.n_reads, 2);
	struct source_conn_status st;
	kv_shell_status(f.s, 0, &st);
	ck_assert_uint_eq(st.failures[SYNC_FAIL_CONNECT], 1);
	ck_assert_uint_eq(st.failures[SYNC_FAIL_AUTH], 0);
	fix_free(&f);
}
END_TEST

START_TEST(start_runs_one_thread_and_free_stops_joins_then_releases)
{
	struct fix f;
	fix_init(&f, 1);
	struct record *rec = &f.rec;
	struct gw_err err = {0};
	ck_assert_int_eq(kv_shell_start(f.s, &err), 0);
	ck_assert_int_eq(kv_shell_start(f.s, &err), 0); /* once */
	while (!atomic_load(&rec->runs))
		usleep(1000);
	/* the thread sleeps a minute unless stop() wakes it: free() returning within the
	 * test's timeout is the wake-up working */
	kv_shell_free(f.s);
	f.s = NULL;
	ck_assert_int_eq(atomic_load(&rec->runs), 1);
	ck_assert_int_eq(rec->interrupted, 1);
	ck_assert_int_eq(rec->released, 1);
	ck_assert_int_eq(rec->ended_first, 1);
	fix_free(&f);
}
END_TEST

START_TEST(free_without_start_releases_and_stop_is_idempotent)
{
	struct fix f;
	fix_init(&f, 1);
	kv_shell_stop(f.s);
	kv_shell_stop(f.s);
	ck_assert_int_eq(f.rec.interrupted, 2);
	kv_shell_stop(NULL);
	kv_shell_free(NULL);
	struct record *rec = &f.rec;
	kv_shell_free(f.s);
	f.s = NULL;
	ck_assert_int_eq(rec->released, 1);
	ck_assert_int_eq(atomic_load(&rec->runs), 0);
	fix_free(&f);
}
END_TEST

START_TEST(status_is_the_one_connection_with_the_mirror_counts)
{
	struct fix f;
	fix_init(&f, 1);
	struct source_conn_status st;
	ck_assert_int_eq(kv_shell_status(f.s, 1, &st), 0); /* one connection only */
	ck_assert_int_eq(kv_shell_status(f.s, 0, &st), 1);
	ck_assert_str_eq(st.server, "test://a,b,c/root");
	ck_assert_str_eq(st.session, "");
	ck_assert_int_eq(st.state, SOURCE_CONN_CONNECTING);
	ck_assert_uint_eq(st.changes, 7);
	ck_assert_uint_eq(st.repairs, 2);
	ck_assert_int_eq(st.last_event_ms, 1234);
	ck_assert_uint_eq(st.watches, 42);
	fix_free(&f);
}
END_TEST

START_TEST(a_pause_on_a_watch_does_what_is_due_and_sleeps_in_the_watch_until_stopped)
{
	struct record rec = {.answers = -1};
	struct source_args args = {NULL, NULL, NULL};
	struct gw_err err = {0};
	struct source *s = kv_shell_new(sizeof *s, &watch_shell, &args, "x", NULL, 1, &err);
	ck_assert_ptr_nonnull(s);
	s->rec = &rec;
	/* an hour, ended by the stop its third wait sets: each wait is up to the next deadline */
	ck_assert_int_eq(kv_shell_pause(&s->sh, 3600000), 1);
	ck_assert_int_eq(rec.waits, 3);
	ck_assert_int_eq(rec.dues, 3);
	ck_assert_int_le(rec.waited, 5);
	/* a pause that has run out returns 0 without sleeping */
	atomic_store(&s->sh.stop, 0);
	ck_assert_int_eq(kv_shell_pause(&s->sh, 0), 0);
	ck_assert_int_eq(rec.waits, 3);
	kv_shell_free(s);
}
END_TEST

START_TEST(failure_lines_name_the_configured_groups_in_their_order)
{
	static struct cfg c; /* large: not on the stack */
	memset(&c, 0, sizeof c);
	c.groups[0] = GW_GROUP_RULE;
	c.groups[1] = GW_GROUP_PLUGIN;
	c.n_groups = 2;
	struct source_args args = {&c, NULL, NULL};
	struct gw_err err = {0};
	struct source *s = kv_shell_new(sizeof *s, &test_shell, &args, "x", NULL, 1, &err);
	ck_assert_ptr_nonnull(s);
	char buf[64];
	kv_shell_groups(&s->sh, buf, sizeof buf);
	ck_assert_str_eq(buf, "RULE,PLUGIN");
	kv_shell_groups(&s->sh, buf, 6); /* cut, still a string */
	ck_assert_str_eq(buf, "RULE,");
	struct record rec = {.answers = -1};
	s->rec = &rec;
	kv_shell_free(s);
}
END_TEST

/* The configuration-only entries, as a source writes them. */
struct test_settings {
	const char *label;
};
static const struct cfg_section test_section = {.name = "test"};
KV_SHELL_CONFIG_ENTRIES(test, &test_section, struct test_settings, label)
KV_SHELL_SUMMARY_ENTRY(test)

START_TEST(the_configuration_entries_answer_for_their_own_section)
{
	static struct cfg c; /* large: not on the stack */
	memset(&c, 0, sizeof c);
	char buf[128];
	/* another section: not selected, no connection */
	c.section = "other";
	ck_assert_int_eq(test_selects(&c), 0);
	ck_assert_uint_eq(test_conns(&c), 0);
	ck_assert_str_eq(test_conn_name(&c, 0), "");
	test_summary(&c, buf, sizeof buf);
	ck_assert_str_eq(buf, "test source ");
	c.section = NULL;
	ck_assert_int_eq(test_selects(&c), 0);
	/* its own, loaded: one connection, named by its label */
	struct test_settings settings = {"test://h:1/root"};
	c.section = "test";
	c.sections[0] = &test_section;
	c.settings[0] = &settings;
	c.n_sections = 1;
	ck_assert_int_eq(test_selects(&c), 1);
	ck_assert_uint_eq(test_conns(&c), 1);
	ck_assert_str_eq(test_conn_name(&c, 0), "test://h:1/root");
	ck_assert_str_eq(test_conn_name(&c, 1), "");
	test_summary(&c, buf, sizeof buf);
	ck_assert_str_eq(buf, "test source test://h:1/root");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shell");
	TCase *tc = tcase_create("shell");
	tcase_add_test(tc, the_start_up_sync_ends_at_the_first_server_that_answers);
	tcase_add_test(tc, no_server_answering_names_how_many_were_tried_and_the_last_failure);
	tcase_add_test(tc, a_stop_ends_the_start_up_sync_without_counting_a_failure);
	tcase_add_test(tc, start_runs_one_thread_and_free_stops_joins_then_releases);
	tcase_add_test(tc, free_without_start_releases_and_stop_is_idempotent);
	tcase_add_test(tc, status_is_the_one_connection_with_the_mirror_counts);
	tcase_add_test(tc,
	               a_pause_on_a_watch_does_what_is_due_and_sleeps_in_the_watch_until_stopped);
	tcase_add_test(tc, the_configuration_entries_answer_for_their_own_section);
	tcase_add_test(tc, failure_lines_name_the_configured_groups_in_their_order);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
