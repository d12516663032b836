/*
 * The `file` subscriber, loaded like in production (dlopen through the loader), driven
 * the way the dispatcher drives it (apply, then tick at the deadlines it returns): exact
 * and byte-exact documents, atomic replacement under a concurrent reader, check_command
 * rejection and timeout, debounced reload_command, the pending reload at shutdown, option
 * errors; and the debounce arithmetic on its own.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../plugins/file/debounce.h"
#include "core/clock.h"
#include "model/diff.h"
#include "deliver/dispatch.h"
#include "store/store.h"
#include "deliver/subscribers.h"
#include "subtest.h"

static char *dir;
static char files[4200], reloads[4200];
static struct gw_log *lg;
static struct tcfg t;
static struct subscribers *subs;
static struct group_data *held[GW_GROUP_COUNT]; /* what the plugin last accepted */

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(files, sizeof files, "%s/out/nested", dir);
	snprintf(reloads, sizeof reloads, "%s/reloads.txt", dir);
	lg = test_log(NULL);
	tcfg_init(&t);
	subs = NULL;
	memset(held, 0, sizeof held);
}

static void teardown(void)
{
	subscribers_free(subs);
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		group_data_unref(held[g]);
	tcfg_free(&t);
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

/* Load one `file` subscriber with `dir: FILES` plus `extra` options. */
static void load(const char *extra)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "dir: %s\n%s", files, extra);
	tcfg_add(&t, "files", "file", yaml);
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
}

static const char *load_fails(const char *yaml)
{
	static struct gw_err err;
	tcfg_add(&t, "files", "file", yaml);
	ck_assert_int_eq(subscribers_load(&t.cfg, lg, &subs, &err), -1);
	return err.msg;
}

/* Deliver `gd` (consumed) as the dispatcher would: delta from the held version, then tick.
 * Returns apply's result; *why gets the reason; *next the tick deadline. */
static int deliver(struct group_data *gd, char *why, size_t cap, int64_t *next)
{
	struct diff d;
	ck_assert_int_eq(diff_build(&d, gd->group, held[gd->group], gd, NULL), 0);
	int rc = subscriber_apply(&subs->v[0], &d.change, why, cap);
	diff_free(&d);
	int64_t n = subscriber_tick(&subs->v[0], gw_mono_ms());
	if (next)
		*next = n;
	if (rc == 0) {
		group_data_unref(held[gd->group]);
		held[gd->group] = gd;
	} else {
		group_data_unref(gd);
	}
	return rc;
}

static void deliver_ok(struct group_data *gd)
{
	char why[600] = "";
	ck_assert_msg(deliver(gd, why, sizeof why, NULL) == 0, "apply failed: %s", why);
}

static char *group_file(const char *group)
{
	char path[4300];
	snprintf(path, sizeof path, "%s/%s.json", files, group);
	return slurp(path, NULL);
}

/* Entries of FILES other than the given final files: leftovers such as temporary files. */
static int stray_files(void)
{
	DIR *d = opendir(files);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

START_TEST(writes_the_exact_document_byte_exact)
{
	load("mode: \"0640\"\n");
	/* Non-ASCII raw text, escapes and odd spacing must come out exactly as they came in. */
	const char *i1 =
	    "{\"id\":\"r1\",\"name\":\"名前 – café ☕ 😀\",\"handle\":\"{\\\"a\\\":1}\"}";
	const char *i2 =
	    "{ \"id\" : \"r0\", \"name\":\"\\u00e9\\n\\\"q\\\"\" ,\"x\":[1, 2.50, null] }";
	deliver_ok(gd_make(GW_GROUP_RULE, "0123abcd", 1700000000123,
	                   (const char *[]){"r1", i1, "r0", i2, NULL}));
	char *text = group_file("RULE");
	ck_assert_ptr_nonnull(text);
	char want[4096];
	snprintf(want, sizeof want,
	         "{\"group\": \"RULE\", \"md5\": \"0123abcd\", \"lastModifyTime\": 1700000000123, "
	         "\"data\": [%s,%s]}\n",
	         i1, i2);
	ck_assert_str_eq(text, want);
	free(text);

	char path[4300];
	snprintf(path, sizeof path, "%s/RULE.json", files);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 07777, 0640);
	ck_assert_int_eq(stray_files(), 0);

	/* It parses as JSON and the items are the admin's, in the admin's order. */
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr);
	ck_assert_msg(doc != NULL, "%s", jerr.text);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "group")), "RULE");
	json_t *data = json_object_get(doc, "data");
	ck_assert_uint_eq(json_array_size(data), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(data, 0), "name")),
	                 "名前 – café ☕ 😀");
	json_decref(doc);

	/* Emptied group: an empty list, not a missing file. */
	deliver_ok(gd_make(GW_GROUP_RULE, "d751713988987e9331980363e24189ce", 1700000000999, NULL));
	text = group_file("RULE");
	ck_assert_str_eq(text,
	                 "{\"group\": \"RULE\", \"md5\": \"d751713988987e9331980363e24189ce\", "
	                 "\"lastModifyTime\": 1700000000999, \"data\": []}\n");
	free(text);
}
END_TEST

START_TEST(default_mode_keeps_secrets_from_other_users)
{
	umask(077); /* the configured mode wins over the umask */
	load("");
	deliver_ok(gd_make(GW_GROUP_APP_AUTH, "m", 1,
	                   (const char *[]){"k", "{\"appKey\":\"k\",\"appSecret\":\"s\"}", NULL}));
	char path[4300];
	snprintf(path, sizeof path, "%s/APP_AUTH.json", files);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 07777, 0640);
	ck_assert_int_eq(stat(files, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0007, 0); /* nor can others search the directory */
}
END_TEST

START_TEST(world_readable_mode_needs_allow_world_readable)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "dir: %s\nmode: \"0644\"\n", files);
	const char *msg = load_fails(yaml);
	ck_assert_msg(strstr(msg, "allow_world_readable") && strstr(msg, "APP_AUTH"), "%s", msg);
	tcfg_free(&t);
	tcfg_init(&t);
	load("mode: \"0644\"\nallow_world_readable: true\n");
	deliver_ok(gd_make(GW_GROUP_PLUGIN, "m", 1, NULL));
	char path[4300];
	snprintf(path, sizeof path, "%s/PLUGIN.json", files);
	struct stat sb;
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 07777, 0644);
}
END_TEST

START_TEST(init_creates_nothing_so_check_changes_nothing)
{
	load("");
	struct stat sb;
	ck_assert_int_eq(stat(files, &sb), -1); /* made at the first apply */
	deliver_ok(gd_make(GW_GROUP_PLUGIN, "m", 1, NULL));
	ck_assert_int_eq(stat(files, &sb), 0);
}
END_TEST

/* Version i: md5 "v<i>-<n>" with n items of ~300 bytes each; n varies from 1 to 400 so
 * files range from a few hundred bytes to ~120 KB (more than one write() each). */
static struct group_data *version(int i)
{
	int n = 1 + (i * 37) % 400;
	char md5[64];
	snprintf(md5, sizeof md5, "v%d-%d", i, n);
	const char **kv = calloc(2 * (size_t)n + 1, sizeof *kv);
	char(*keys)[16] = calloc((size_t)n, 16);
	char(*vals)[320] = calloc((size_t)n, 320);
	for (int k = 0; k < n; k++) {
		snprintf(keys[k], 16, "k%04d", k);
		snprintf(vals[k], 320, "{\"id\":\"k%04d\",\"v\":%d,\"pad\":\"%0280d\"}", k, i, 0);
		kv[2 * k] = keys[k];
		kv[2 * k + 1] = vals[k];
	}
	struct group_data *gd = gd_make(GW_GROUP_SELECTOR, md5, 1000 + i, kv);
	free(kv);
	free(keys);
	free(vals);
	return gd;
}

/* Child: read the file as fast as possible until `stop` exists; check every read is a
 * complete version (valid JSON whose item count matches its md5). Exit 0 if all were. */
static void reader(const char *path, const char *stop, int report_fd)
{
	long reads = 0, bad = 0;
	char first_bad[200] = "";
	while (access(stop, F_OK) != 0) {
		size_t len = 0;
		char *text = slurp(path, &len);
		reads++;
		const char *problem = NULL;
		json_t *doc = NULL;
		int v = -1, n = -1;
		if (!text)
			problem = "missing";
		else if (len == 0)
			problem = "empty";
		else if (!(doc = json_loadb(text, len, 0, NULL)))
			problem = "partial (not valid JSON)";
		else if (sscanf(json_string_value(json_object_get(doc, "md5")), "v%d-%d", &v, &n) !=
		             2 ||
		         (int)json_array_size(json_object_get(doc, "data")) != n)
			problem = "mixed (item count does not match its version)";
		if (problem) {
			if (!bad)
				snprintf(first_bad, sizeof first_bad, "read %ld: %s", reads,
				         problem);
			bad++;
		}
		json_decref(doc);
		free(text);
	}
	dprintf(report_fd, "%ld %ld %s", reads, bad, first_bad);
	_exit(bad ? 1 : 0);
}

START_TEST(reader_never_sees_a_missing_empty_or_partial_file)
{
	load("");
	deliver_ok(version(0));
	char path[4300], stop[4300];
	snprintf(path, sizeof path, "%s/SELECTOR.json", files);
	snprintf(stop, sizeof stop, "%s/stop-reading", dir);
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		reader(path, stop, p[1]);
	}
	close(p[1]);
	for (int i = 1; i <= 1000; i++)
		deliver_ok(version(i));
	close(open(stop, O_CREAT | O_WRONLY, 0600));
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	char report[400] = "";
	ssize_t got = read(p[0], report, sizeof report - 1);
	close(p[0]);
	ck_assert_int_gt(got, 0);
	long reads = 0, bad = -1;
	sscanf(report, "%ld %ld", &reads, &bad);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0 && bad == 0,
	              "reader saw a broken file: %s", report);
	ck_assert_int_ge(reads, 100); /* it really read concurrently */
	ck_assert_int_eq(stray_files(), 0);
	char *text = group_file("SELECTOR");
	ck_assert_ptr_nonnull(strstr(text, "\"md5\": \"v1000-"));
	free(text);
}
END_TEST

START_TEST(check_command_rejection_keeps_the_old_file)
{
	char extra[4400];
	snprintf(extra, sizeof extra,
	         "check_command: >-\n"
	         "  case \"$GWSYNC_FILE\" in */.PLUGIN.json.tmp.*) ;; *) exit 3;; esac;\n"
	         "  test \"$GWSYNC_GROUP\" = PLUGIN || exit 4;\n"
	         "  grep -q '\"ok\":true' \"$GWSYNC_FILE\" || { echo \"line 1: not ok\" >&2; exit "
	         "1; }\n");
	load(extra);
	deliver_ok(gd_make(GW_GROUP_PLUGIN, "good", 1,
	                   (const char *[]){"p", "{\"id\":\"p\",\"ok\":true}", NULL}));
	char *before = group_file("PLUGIN");
	ck_assert_ptr_nonnull(strstr(before, "\"md5\": \"good\""));

	char why[600] = "";
	ck_assert_int_eq(
	    deliver(gd_make(GW_GROUP_PLUGIN, "bad", 2,
	                    (const char *[]){"p", "{\"id\":\"p\",\"ok\":false}", NULL}),
	            why, sizeof why, NULL),
	    -1);
	ck_assert_msg(strstr(why, "check_command exited with status 1: line 1: not ok"), "%s", why);
	ck_assert_ptr_nonnull(strstr(why, "kept the old"));
	char *after = group_file("PLUGIN");
	ck_assert_str_eq(after, before);
	ck_assert_int_eq(stray_files(), 0);
	free(before);
	free(after);
}
END_TEST

START_TEST(check_command_timeout_kills_its_process_group)
{
	char extra[4400], pidfile[4300];
	snprintf(pidfile, sizeof pidfile, "%s/child.pid", dir);
	snprintf(extra, sizeof extra,
	         "command_timeout: 300ms\n"
	         "check_command: 'sleep 30 & echo $! > %s; wait'\n",
	         pidfile);
	load(extra);
	char why[600] = "";
	int64_t t0 = gw_mono_ms();
	ck_assert_int_eq(deliver(gd_make(GW_GROUP_RULE, "m", 1, NULL), why, sizeof why, NULL), -1);
	int64_t took = gw_mono_ms() - t0;
	ck_assert_msg(strstr(why, "timed out after 300 ms"), "%s", why);
	ck_assert_int_lt(took, 3000);
	char *pidtext = slurp(pidfile, NULL);
	ck_assert_ptr_nonnull(pidtext);
	pid_t child = (pid_t)atoi(pidtext);
	free(pidtext);
	ck_assert_int_gt(child, 0);
	/* The background sleep is gone too (or a zombie awaiting its new parent). */
	int gone = 0;
	for (int i = 0; i < 100 && !gone; i++) {
		char stat_path[64], *st;
		snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", (int)child);
		st = slurp(stat_path, NULL);
		gone = !st || strstr(st, ") Z ") != NULL;
		free(st);
		if (!gone)
			sleep_ms(20);
	}
	ck_assert_msg(gone, "the command's child %d survived the timeout", (int)child);
	char path[4300];
	snprintf(path, sizeof path, "%s/RULE.json", files);
	ck_assert_int_ne(access(path, F_OK), 0); /* never accepted */
}
END_TEST

/* Tick at the deadlines the plugin asks for until it has none (or `ms` pass). */
static void tick_until_idle(int64_t next, int64_t ms)
{
	int64_t until = gw_mono_ms() + ms;
	while (next >= 0 && gw_mono_ms() < until) {
		int64_t now = gw_mono_ms();
		if (now < next)
			sleep_ms(next - now);
		next = subscriber_tick(&subs->v[0], gw_mono_ms());
	}
	ck_assert_int_lt(next, 0);
}

START_TEST(burst_of_50_changes_triggers_one_reload)
{
	char extra[4400];
	snprintf(extra, sizeof extra,
	         "reload_command: 'echo \"$GWSYNC_GROUP $GWSYNC_FILE\" >> %s'\n"
	         "debounce: 200ms\n"
	         "debounce_max: 30s\n",
	         reloads);
	load(extra);
	int64_t next = -1, last_change = 0;
	for (int i = 0; i < 50; i++) {
		char md5[16];
		snprintf(md5, sizeof md5, "m%d", i);
		char why[600];
		ck_assert_int_eq(
		    deliver(gd_make(GW_GROUP_RULE, md5, i + 1, NULL), why, sizeof why, &next), 0);
		last_change = gw_mono_ms();
		ck_assert_int_ge(next, last_change + 150); /* quiet period pushed forward */
	}
	ck_assert_int_eq(count_lines(reloads, ""), 0); /* nothing before the quiet period */
	tick_until_idle(next, 5000);
	ck_assert_int_ge(gw_mono_ms() - last_change, 200);
	ck_assert_int_eq(count_lines(reloads, ""), 1);
	char want[4400];
	snprintf(want, sizeof want, "RULE %s/RULE.json", files);
	ck_assert(has_line(reloads, want));
}
END_TEST

START_TEST(steady_stream_cannot_postpone_the_reload_forever)
{
	char extra[4400];
	snprintf(extra, sizeof extra,
	         "reload_command: 'echo \"$GWSYNC_GROUP\" >> %s'\n"
	         "debounce: 300ms\n"
	         "debounce_max: 800ms\n",
	         reloads);
	load(extra);
	int64_t next = -1, end = gw_mono_ms() + 2600;
	for (int i = 0; gw_mono_ms() < end; i++) {
		char md5[16];
		snprintf(md5, sizeof md5, "m%d", i);
		deliver_ok(gd_make(GW_GROUP_RULE, md5, i + 1, NULL));
		next = subscriber_tick(&subs->v[0], gw_mono_ms());
		int64_t wake = gw_mono_ms() + 100; /* a change every 100 ms: never quiet */
		while (gw_mono_ms() < wake) {
			sleep_ms(10);
			if (next >= 0 && gw_mono_ms() >= next)
				next = subscriber_tick(&subs->v[0], gw_mono_ms());
		}
	}
	int during = count_lines(reloads, "");
	ck_assert_int_ge(during, 2); /* the 800 ms ceiling fired while changes kept coming */
	ck_assert_int_le(during, 4);
	tick_until_idle(next, 5000);
}
END_TEST

START_TEST(one_reload_names_every_group_of_the_burst)
{
	char extra[4400];
	snprintf(extra, sizeof extra,
	         "reload_command: 'echo \"$GWSYNC_GROUP|$GWSYNC_FILE|$GWSYNC_DIR\" >> %s'\n",
	         reloads);
	load(extra);
	int64_t next;
	char why[600];
	ck_assert_int_eq(deliver(gd_make(GW_GROUP_RULE, "r", 1, NULL), why, sizeof why, &next), 0);
	ck_assert_int_eq(deliver(gd_make(GW_GROUP_SELECTOR, "s", 1, NULL), why, sizeof why, &next),
	                 0);
	tick_until_idle(next, 5000);
	char want[13000];
	snprintf(want, sizeof want, "SELECTOR RULE|%s/SELECTOR.json %s/RULE.json|%s", files, files,
	         files);
	ck_assert_int_eq(count_lines(reloads, ""), 1);
	ck_assert(has_line(reloads, want));
}
END_TEST

START_TEST(fini_runs_the_pending_reload)
{
	char extra[4400];
	snprintf(extra, sizeof extra, "reload_command: 'echo \"$GWSYNC_GROUP\" >> %s'\n", reloads);
	load(extra);
	deliver_ok(gd_make(GW_GROUP_META_DATA, "m", 1, NULL));
	ck_assert_int_eq(count_lines(reloads, ""), 0);
	subscribers_free(subs);
	subs = NULL;
	ck_assert(has_line(reloads, "META_DATA"));
}
END_TEST

/* The dispatcher drives tick() on its own: the reload happens with no further change. */
START_TEST(reload_through_the_dispatcher)
{
	char extra[4400];
	snprintf(extra, sizeof extra,
	         "reload_command: 'echo \"$GWSYNC_GROUP\" >> %s'\ndebounce: 100ms\n", reloads);
	load(extra);
	struct store *st = store_new();
	struct dispatcher *d;
	struct gw_err err;
	ck_assert_msg(dispatcher_start(&d, subs, st, &t.cfg, lg, &err) == 0, "%s", err.msg);
	struct group_data *gd =
	    gd_make(GW_GROUP_APP_AUTH, "a1", 1, (const char *[]){"k", "{}", NULL});
	store_offer(st, gd);
	group_data_unref(gd);
	ck_assert_int_eq(wait_lines(reloads, "APP_AUTH", 1, 5000), 1);
	char *text = group_file("APP_AUTH");
	ck_assert_ptr_nonnull(text);
	free(text);
	dispatcher_free(d);
	store_free(st);
}
END_TEST

START_TEST(bad_options_stop_start_up)
{
	const char *msg = load_fails("mode: \"0644\"\n");
	ck_assert_msg(strstr(msg, "subscribers[0].config") &&
	                  strstr(msg, "missing required key 'dir'"),
	              "%s", msg);
	tcfg_free(&t);

	/* A misspelt key is refused with its position and the key it probably meant. */
	tcfg_init(&t);
	char typo[4400];
	snprintf(typo, sizeof typo, "dir: %s\ndebounse: 1s\n", files);
	msg = load_fails(typo);
	ck_assert_msg(strstr(msg, "test.yaml:2:1:") && strstr(msg, "unknown key 'debounse'") &&
	                  strstr(msg, "did you mean 'debounce'"),
	              "%s", msg);
	tcfg_free(&t);

	tcfg_init(&t);
	char yaml[4400];
	snprintf(yaml, sizeof yaml, "dir: %s\nmode: \"0999\"\n", files);
	msg = load_fails(yaml);
	ck_assert_msg(strstr(msg, "config.mode"), "%s", msg);
	tcfg_free(&t);

	tcfg_init(&t);
	snprintf(yaml, sizeof yaml, "dir: %s\ndebounce: 5s\ndebounce_max: 1s\n", files);
	msg = load_fails(yaml);
	ck_assert_msg(strstr(msg, "debounce_max"), "%s", msg);
	tcfg_free(&t);

	tcfg_init(&t);
	char afile[4300];
	snprintf(afile, sizeof afile, "%s/plain-file", dir);
	close(open(afile, O_CREAT | O_WRONLY, 0600));
	snprintf(yaml, sizeof yaml, "dir: %s/sub\n", afile);
	msg = load_fails(yaml);
	ck_assert_msg(strstr(msg, "is not a directory"), "%s", msg);
}
END_TEST

START_TEST(debounce_arithmetic)
{
	struct debounce d;
	debounce_init(&d, 200, 2000);
	ck_assert_int_eq(debounce_deadline(&d), -1);
	ck_assert(!debounce_due(&d, 1000000));
	debounce_note(&d, 1000);
	ck_assert_int_eq(debounce_deadline(&d), 1200);
	debounce_note(&d, 1150); /* within the quiet period: pushed */
	ck_assert_int_eq(debounce_deadline(&d), 1350);
	ck_assert(!debounce_due(&d, 1349));
	ck_assert(debounce_due(&d, 1350));
	for (int64_t ms = 1300; ms < 3100; ms += 100) /* a steady stream */
		debounce_note(&d, ms);
	ck_assert_int_eq(debounce_deadline(&d), 3000); /* first + max */
	debounce_clear(&d);
	ck_assert_int_eq(debounce_deadline(&d), -1);
	debounce_init(&d, 500, 100); /* a ceiling below the quiet period means the quiet period */
	debounce_note(&d, 0);
	ck_assert_int_eq(debounce_deadline(&d), 500);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("file plugin");
	TCase *tc = tcase_create("file");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, writes_the_exact_document_byte_exact);
	tcase_add_test(tc, default_mode_keeps_secrets_from_other_users);
	tcase_add_test(tc, world_readable_mode_needs_allow_world_readable);
	tcase_add_test(tc, init_creates_nothing_so_check_changes_nothing);
	tcase_add_test(tc, reader_never_sees_a_missing_empty_or_partial_file);
	tcase_add_test(tc, check_command_rejection_keeps_the_old_file);
	tcase_add_test(tc, check_command_timeout_kills_its_process_group);
	tcase_add_test(tc, burst_of_50_changes_triggers_one_reload);
	tcase_add_test(tc, steady_stream_cannot_postpone_the_reload_forever);
	tcase_add_test(tc, one_reload_names_every_group_of_the_burst);
	tcase_add_test(tc, fini_runs_the_pending_reload);
	tcase_add_test(tc, reload_through_the_dispatcher);
	tcase_add_test(tc, bad_options_stop_start_up);
	tcase_add_test(tc, debounce_arithmetic);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
