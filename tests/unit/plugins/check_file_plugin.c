/*
 * The `file` subscriber, the very .so that ships (dlopen), driven through the plugin test
 * kit (gwsync/testing.h) the way the dispatcher drives it (the delta from what it last
 * accepted, apply, then tick at the deadlines it returns, on the kit's fake clock): exact
 * and byte-exact documents, atomic replacement under a concurrent reader, check_command
 * rejection and timeout, debounced reload_command, the pending reload at shutdown, a group
 * the plugin's header does not know, option errors; the reload driven by the agent's own
 * dispatcher and the loader's message; and the debounce arithmetic on its own.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gwsync/testing.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../plugins/file/debounce.h"
#include "core/clock.h"
#include "deliver/dispatch.h"
#include "store/store.h"
#include "deliver/subscribers.h"
#include "plugtest.h"
#include "subtest.h"

static char files[4200], reloads[4200];

static void setup(void)
{
	plugtest_setup();
	snprintf(files, sizeof files, "%s/out/nested", dir);
	snprintf(reloads, sizeof reloads, "%s/reloads.txt", dir);
}

/* One `file` instance with `dir: FILES` plus `extra` options. */
static void load(const char *extra)
{
	char yaml[8400];
	snprintf(yaml, sizeof yaml, "dir: %s\n%s", files, extra);
	ck_assert_msg(plugtest_start(yaml) == 0, "%s", err);
}

/* A version of group g: md5, lastModifyTime and its items, a JSON array as the admin sends. */
static struct gwt_version *ver(enum gw_group g, const char *md5, int64_t lmt, const char *items)
{
	struct gwt_version *v = gwt_version_new(g, md5, lmt, items, err, sizeof err);
	ck_assert_msg(v != NULL, "%s", err);
	return v;
}

/* Deliver `v` of group g (consumed) as the dispatcher would: the delta from the version the
 * plugin last accepted, apply(), then tick(). Returns apply's result (the reason:
 * gwt_host_error(h)); *next the tick deadline. */
static int deliver(enum gw_group g, struct gwt_version *v, int64_t *next)
{
	ck_assert_int_eq(gwt_version_group(v), g);
	return gwt_instance_deliver(in, v, next, err, sizeof err);
}

static void deliver_ok(enum gw_group g, const char *md5, int64_t lmt, const char *items)
{
	ck_assert_msg(deliver(g, ver(g, md5, lmt, items), NULL) == 0, "apply failed: %s",
	              gwt_host_error(h));
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
	char items[4096];
	snprintf(items, sizeof items, "[%s,%s]", i1, i2);
	deliver_ok(GW_GROUP_RULE, "0123abcd", 1700000000123, items);
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
	deliver_ok(GW_GROUP_RULE, "d751713988987e9331980363e24189ce", 1700000000999, "[]");
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
	deliver_ok(GW_GROUP_APP_AUTH, "m", 1, "[{\"appKey\":\"k\",\"appSecret\":\"s\"}]");
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
	const char *msg = plugtest_start_fails(yaml);
	ck_assert_msg(strstr(msg, "allow_world_readable") && strstr(msg, "APP_AUTH"), "%s", msg);
	load("mode: \"0644\"\nallow_world_readable: true\n");
	deliver_ok(GW_GROUP_PLUGIN, "m", 1, "[]");
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
	deliver_ok(GW_GROUP_PLUGIN, "m", 1, "[]");
	ck_assert_int_eq(stat(files, &sb), 0);
}
END_TEST

/* Version i: md5 "v<i>n<n>" with n items of ~300 bytes each; n varies from 1 to 400 so
 * files range from a few hundred bytes to ~120 KB (more than one write() each). */
static struct gwt_version *version(int i)
{
	int n = 1 + (i * 37) % 400;
	char md5[64];
	snprintf(md5, sizeof md5, "v%dn%d", i, n);
	size_t cap = (size_t)n * 330 + 8, len = 0;
	char *items = malloc(cap);
	items[len++] = '[';
	for (int k = 0; k < n; k++)
		len += (size_t)snprintf(items + len, cap - len,
		                        "%s{\"id\":\"k%04d\",\"v\":%d,\"pad\":\"%0280d\"}",
		                        k ? "," : "", k, i, 0);
	snprintf(items + len, cap - len, "]");
	struct gwt_version *v = ver(GW_GROUP_SELECTOR, md5, 1000 + i, items);
	free(items);
	return v;
}

static void deliver_version(int i)
{
	ck_assert_msg(deliver(GW_GROUP_SELECTOR, version(i), NULL) == 0, "apply failed: %s",
	              gwt_host_error(h));
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
		else if (sscanf(json_string_value(json_object_get(doc, "md5")), "v%dn%d", &v, &n) !=
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
	deliver_version(0);
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
		deliver_version(i);
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
	ck_assert_ptr_nonnull(strstr(text, "\"md5\": \"v1000n"));
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
	deliver_ok(GW_GROUP_PLUGIN, "good", 1, "[{\"id\":\"p\",\"name\":\"p\",\"ok\":true}]");
	char *before = group_file("PLUGIN");
	ck_assert_ptr_nonnull(strstr(before, "\"md5\": \"good\""));

	ck_assert_int_eq(
	    deliver(GW_GROUP_PLUGIN,
	            ver(GW_GROUP_PLUGIN, "bad", 2, "[{\"id\":\"p\",\"name\":\"p\",\"ok\":false}]"),
	            NULL),
	    -1);
	ck_assert_msg(
	    strstr(gwt_host_error(h), "check_command exited with status 1: line 1: not ok"), "%s",
	    gwt_host_error(h));
	ck_assert_ptr_nonnull(strstr(gwt_host_error(h), "kept the old"));
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
	int64_t t0 = gw_mono_ms();
	ck_assert_int_eq(deliver(GW_GROUP_RULE, ver(GW_GROUP_RULE, "m", 1, "[]"), NULL), -1);
	int64_t took = gw_mono_ms() - t0;
	ck_assert_msg(strstr(gwt_host_error(h), "timed out after 300 ms"), "%s", gwt_host_error(h));
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

/* Tick at the deadlines the plugin asks for, on the fake clock, until it has none (or `ms`
 * pass). */
static void tick_until_idle(int64_t next, int64_t ms)
{
	next = gwt_tick_until(h, plugin, state, next, gwt_now(h) + ms);
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
	gwt_clock_set(h, 1000000);
	int64_t next = -1, last_change = 0;
	for (int i = 0; i < 50; i++) {
		char md5[16];
		snprintf(md5, sizeof md5, "m%d", i);
		ck_assert_int_eq(
		    deliver(GW_GROUP_RULE, ver(GW_GROUP_RULE, md5, i + 1, "[]"), &next), 0);
		last_change = gwt_now(h);
		ck_assert_int_ge(next, last_change + 150); /* quiet period pushed forward */
		next = gwt_tick_until(h, plugin, state, next, gwt_now(h) + 20); /* a burst */
	}
	ck_assert_int_eq(count_lines(reloads, ""), 0); /* nothing before the quiet period */
	next = gwt_tick_until(h, plugin, state, next, last_change + 199);
	ck_assert_int_eq(count_lines(reloads, ""), 0);
	tick_until_idle(next, 5000);
	ck_assert_int_ge(gwt_now(h) - last_change, 200);
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
	gwt_clock_set(h, 5000);
	int64_t next = -1, end = gwt_now(h) + 2600;
	for (int i = 0; gwt_now(h) < end; i++) {
		char md5[16];
		snprintf(md5, sizeof md5, "m%d", i);
		ck_assert_int_eq(
		    deliver(GW_GROUP_RULE, ver(GW_GROUP_RULE, md5, i + 1, "[]"), &next), 0);
		/* a change every 100 ms: never quiet */
		next = gwt_tick_until(h, plugin, state, next, gwt_now(h) + 100);
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
	gwt_clock_set(h, 0);
	int64_t next;
	ck_assert_int_eq(deliver(GW_GROUP_RULE, ver(GW_GROUP_RULE, "r", 1, "[]"), &next), 0);
	ck_assert_int_eq(deliver(GW_GROUP_SELECTOR, ver(GW_GROUP_SELECTOR, "s", 1, "[]"), &next),
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
	deliver_ok(GW_GROUP_META_DATA, "m", 1, "[]");
	ck_assert_int_eq(count_lines(reloads, ""), 0);
	plugtest_stop();
	ck_assert(has_line(reloads, "META_DATA"));
}
END_TEST

/* A group newer than the plugin's header (a newer agent's): written as NAME.json from the
 * name the change gives, and the other groups' documents stay as they were. */
START_TEST(a_group_it_does_not_know_is_written_by_its_name)
{
	load("");
	deliver_ok(GW_GROUP_RULE, "r", 1, "[{\"id\":\"r1\"}]");
	char *rule = group_file("RULE");
	int g = gwt_host_add_group(h, "FUTURE_GROUP");
	struct gwt_version *v = gwt_version_new_unknown(g, "FUTURE_GROUP", "f1", 9,
	                                                "[{\"id\":\"x\"}]", err, sizeof err);
	ck_assert_msg(v != NULL, "%s", err);
	struct gwt_change *c = gwt_change_between(NULL, v, err, sizeof err);
	ck_assert_int_eq(gwt_apply(h, plugin, state, gwt_change(c), NULL), 0);
	char *text = group_file("FUTURE_GROUP");
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(text, "{\"group\": \"FUTURE_GROUP\", \"md5\": \"f1\", \"lastModifyTime\": "
	                       "9, \"data\": [{\"id\":\"x\"}]}\n");
	char *rule_after = group_file("RULE");
	ck_assert_str_eq(rule_after, rule);
	free(text);
	free(rule);
	free(rule_after);
	gwt_change_free(c);
	gwt_version_free(v);
}
END_TEST

/* The dispatcher drives tick() on its own: the reload happens with no further change. */
START_TEST(reload_through_the_dispatcher)
{
	struct gw_log *lg = test_log(NULL);
	struct tcfg t;
	tcfg_init(&t);
	char yaml[8400];
	snprintf(yaml, sizeof yaml,
	         "dir: %s\nreload_command: 'echo \"$GWSYNC_GROUP\" >> %s'\ndebounce: 100ms\n",
	         files, reloads);
	tcfg_add(&t, "files", "file", yaml);
	struct subscribers *subs = NULL;
	struct gw_err e;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &e) == 0, "%s", e.msg);
	struct store *st = store_new();
	struct dispatcher *d;
	ck_assert_msg(dispatcher_start(&d, subs, st, &t.cfg, lg, &e) == 0, "%s", e.msg);
	struct group_data *gd =
	    gd_make(GW_GROUP_APP_AUTH, "a1", 1, (const char *[]){"k", "{}", NULL});
	store_swap(st, gd, ingest_accept_polled, NULL);
	group_data_unref(gd);
	ck_assert_int_eq(wait_lines(reloads, "APP_AUTH", 1, 5000), 1);
	char *text = group_file("APP_AUTH");
	ck_assert_ptr_nonnull(text);
	free(text);
	dispatcher_free(d);
	store_free(st);
	subscribers_free(subs);
	tcfg_free(&t);
	gw_log_close(lg);
}
END_TEST

START_TEST(bad_options_stop_start_up)
{
	/* through the agent's loader: the message names the subscriber */
	struct gw_log *lg = test_log(NULL);
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "files", "file", "mode: \"0644\"\n");
	struct subscribers *subs = NULL;
	struct gw_err e;
	ck_assert_int_eq(subscribers_load(&t.cfg, lg, &subs, &e), -1);
	const char *msg = e.msg;
	ck_assert_msg(strstr(msg, "subscribers[0].config") &&
	                  strstr(msg, "missing required key 'dir'"),
	              "%s", msg);
	tcfg_free(&t);
	gw_log_close(lg);

	/* A misspelt key is refused with its position and the key it probably meant. */
	char typo[4400];
	snprintf(typo, sizeof typo, "dir: %s\ndebounse: 1s\n", files);
	msg = plugtest_start_fails(typo);
	ck_assert_msg(strstr(msg, "test.yaml:2:1:") && strstr(msg, "unknown key 'debounse'") &&
	                  strstr(msg, "did you mean 'debounce'"),
	              "%s", msg);

	char yaml[4400];
	snprintf(yaml, sizeof yaml, "dir: %s\nmode: \"0999\"\n", files);
	msg = plugtest_start_fails(yaml);
	ck_assert_msg(strstr(msg, "config.mode"), "%s", msg);

	snprintf(yaml, sizeof yaml, "dir: %s\ndebounce: 5s\ndebounce_max: 1s\n", files);
	msg = plugtest_start_fails(yaml);
	ck_assert_msg(strstr(msg, "debounce_max"), "%s", msg);

	char afile[4300];
	snprintf(afile, sizeof afile, "%s/plain-file", dir);
	close(open(afile, O_CREAT | O_WRONLY, 0600));
	snprintf(yaml, sizeof yaml, "dir: %s/sub\n", afile);
	msg = plugtest_start_fails(yaml);
	ck_assert_msg(strstr(msg, "is not a directory"), "%s", msg);

	/* dir is required and has no default: an empty one is not told to fall back on one
	 * (issue 21, item 11) */
	msg = plugtest_start_fails("dir: \"\"\n");
	ck_assert_msg(strstr(msg, "config.dir: must not be empty (the key is required and has no "
	                          "default: name a path)"),
	              "%s", msg);
	ck_assert_msg(!strstr(msg, "for the default"), "%s", msg);
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
	TCase *tc = plugtest_tcase("file", setup);
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
	tcase_add_test(tc, a_group_it_does_not_know_is_written_by_its_name);
	tcase_add_test(tc, reload_through_the_dispatcher);
	tcase_add_test(tc, bad_options_stop_start_up);
	tcase_add_test(tc, debounce_arithmetic);
	return plugtest_run("plugins/file/.libs/file.so", "files", "file plugin", tc);
}
