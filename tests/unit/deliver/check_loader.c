/*
 * The subscriber loader refuses, with a message naming the instance and the file, every
 * plugin it cannot trust: missing file, no entry point, another ABI version, no apply(),
 * a failing init() or a bad option; it finds bare names on GWSYNC_PLUGIN_PATH; and it
 * finishes whatever it had loaded when a later subscriber fails.
 */
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/diff.h"
#include "deliver/subscribers.h"
#include "subtest.h"

static char *dir;
static char out[4096];
static struct gw_log *lg;

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(out, sizeof out, "%s/rec.txt", dir);
	lg = test_log(NULL);
}

static void teardown(void)
{
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

/* Load `t` expecting failure; returns the error message. */
static const char *refused(struct tcfg *t)
{
	static struct gw_err err;
	struct subscribers *subs = (void *)1;
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(subscribers_load(&t->cfg, lg, &subs, &err), -1);
	ck_assert_ptr_eq(subs, (void *)1); /* untouched */
	return err.msg;
}

START_TEST(loads_bare_name_from_plugin_path)
{
	struct tcfg t;
	tcfg_init(&t);
	char yaml[4200];
	snprintf(yaml, sizeof yaml, "out: %s\n", out);
	tcfg_add(&t, "rec-1", "recorder", yaml);
	tcfg_add(&t, "rec-2", "recorder.so", yaml); /* the suffix may be written too */
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(subs->n, 2);
	struct subscriber *s = &subs->v[0];
	ck_assert_str_eq(s->name, "rec-1");
	ck_assert_str_eq(s->desc->name, "recorder");
	ck_assert_ptr_nonnull(strstr(s->path, "/recorder.so"));
	ck_assert_int_eq(s->host.abi, GWSYNC_SUBSCRIBER_ABI);
	ck_assert_str_eq(s->host.instance, "rec-1");
	ck_assert_ptr_nonnull(s->host.agent_version);
	ck_assert_int_gt(s->host.now_ms(&s->host), 0);
	ck_assert(has_line(out, "init rec-1"));
	ck_assert(has_line(out, "init rec-2"));

	/* A change goes through subscriber_apply to the plugin. */
	struct group_data *gd =
	    gd_make(GW_GROUP_PLUGIN, "m1", 7, (const char *[]){"p1", "{\"id\":\"p1\"}", NULL});
	struct gw_err why = {0};
	ck_assert_int_eq(sub_apply(s, GW_GROUP_PLUGIN, NULL, gd, &why), 0);
	group_data_unref(gd);
	ck_assert(has_line(out, "apply PLUGIN md5=m1 prev=- lmt=7 items=1 added=p1 updated= "
	                        "removed= stale=0 ok"));

	subscribers_free(subs);
	ck_assert_int_eq(count_lines(out, "fini"), 2);
	tcfg_free(&t);
}
END_TEST

START_TEST(loads_a_path)
{
	struct tcfg t;
	tcfg_init(&t);
	char *path = build_path("tests/unit/.libs/recorder.so");
	char yaml[4200];
	snprintf(yaml, sizeof yaml, "out: %s\n", out);
	tcfg_add(&t, "by-path", path, yaml);
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(subs->v[0].path, path);
	subscribers_free(subs);
	free(path);
	tcfg_free(&t);
}
END_TEST

START_TEST(no_subscribers_is_fine)
{
	struct tcfg t;
	tcfg_init(&t);
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_int_eq(subscribers_load(&t.cfg, lg, &subs, &err), 0);
	ck_assert_uint_eq(subs->n, 0);
	subscribers_free(subs);
	subscribers_free(NULL);
}
END_TEST

START_TEST(missing_file_refused)
{
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "ghost", "no-such-plugin", "");
	const char *msg = refused(&t);
	/* positioned like every configuration error: FILE:LINE:COL: key: why (issue 21) */
	ck_assert_msg(
	    strncmp(msg, "test.yaml:10:0: subscribers[0].library: subscriber 'ghost': ", 60) == 0,
	    "%s", msg);
	ck_assert_ptr_nonnull(strstr(msg, "no-such-plugin.so"));
	ck_assert_ptr_nonnull(strstr(msg, "not found"));
	ck_assert_ptr_nonnull(strstr(msg, PKGLIBDIR));   /* says where it looked */
	ck_assert_ptr_null(strstr(msg, "did you mean")); /* nothing is close */
	tcfg_free(&t);

	tcfg_init(&t);
	tcfg_add(&t, "ghost2", "/nonexistent/dir/x.so", "");
	msg = refused(&t);
	ck_assert_ptr_nonnull(strstr(msg, "subscriber 'ghost2'"));
	ck_assert_ptr_nonnull(strstr(msg, "/nonexistent/dir/x.so"));
	tcfg_free(&t);
}
END_TEST

START_TEST(missing_symbol_refused)
{
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "plain-lib", "nosymbol", "");
	const char *msg = refused(&t);
	ck_assert_ptr_nonnull(strstr(msg, "subscriber 'plain-lib'"));
	ck_assert_ptr_nonnull(strstr(msg, "/nosymbol.so"));
	ck_assert_ptr_nonnull(strstr(msg, "gwsync_subscriber"));
	tcfg_free(&t);
}
END_TEST

START_TEST(abi_mismatch_refused)
{
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "old-build", "badabi", "");
	const char *msg = refused(&t);
	char theirs[64], ours[64];
	snprintf(theirs, sizeof theirs, "ABI %d", GWSYNC_SUBSCRIBER_ABI + 41);
	snprintf(ours, sizeof ours, "ABI %d", GWSYNC_SUBSCRIBER_ABI);
	ck_assert_ptr_nonnull(strstr(msg, "subscriber 'old-build'"));
	ck_assert_ptr_nonnull(strstr(msg, "/badabi.so"));
	ck_assert_msg(strstr(msg, theirs) && strstr(msg, ours), "both versions named: %s", msg);
	tcfg_free(&t);
}
END_TEST

START_TEST(missing_apply_refused)
{
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "half", "noapply", "");
	const char *msg = refused(&t);
	ck_assert_ptr_nonnull(strstr(msg, "subscriber 'half'"));
	ck_assert_ptr_nonnull(strstr(msg, "/noapply.so"));
	ck_assert_ptr_nonnull(strstr(msg, "apply()"));
	tcfg_free(&t);
}
END_TEST

START_TEST(init_failure_refused_and_earlier_ones_finished)
{
	struct tcfg t;
	tcfg_init(&t);
	char good[4200], bad[4200];
	snprintf(good, sizeof good, "out: %s\n", out);
	snprintf(bad, sizeof bad, "out: %s\nfail_init: true\n", out);
	tcfg_add(&t, "fine", "recorder", good);
	tcfg_add(&t, "broken", "recorder", bad);
	const char *msg = refused(&t);
	ck_assert_ptr_nonnull(strstr(msg, "subscriber 'broken'"));
	ck_assert_ptr_nonnull(strstr(msg, "/recorder.so"));
	ck_assert_ptr_nonnull(strstr(msg, "init() failed: told to fail in init"));
	ck_assert(has_line(out, "init fine"));
	ck_assert(has_line(out, "init-failed"));
	/* "fine" was finished (fini) when "broken" failed; "broken" cleaned up itself. */
	ck_assert_int_eq(count_lines(out, "fini"), 2);
	tcfg_free(&t);
}
END_TEST

START_TEST(bad_option_refused_with_position)
{
	struct tcfg t;
	tcfg_init(&t);
	char yaml[4200];
	snprintf(yaml, sizeof yaml, "out: %s\ndelay: soon\n", out);
	tcfg_add(&t, "typo", "recorder", yaml);
	const char *msg = refused(&t);
	ck_assert_msg(strncmp(msg, "test.yaml:2:", 12) == 0 &&
	                  strstr(msg, ": subscribers[0].config.delay: "),
	              "the reason names the key and its position: %s", msg);
	tcfg_free(&t);
}
END_TEST

/* A misspelt bare name: every directory searched is named, in order, and the closest
 * plugin found in them is suggested (issue 21: `library: fille` said neither). */
START_TEST(misspelt_library_names_every_directory_and_the_closest_plugin)
{
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "typo", "recordr", "");
	const char *msg = refused(&t);
	ck_assert_msg(strstr(msg, "(did you mean 'recorder'?)"), "%s", msg);
	const char *env = getenv(GW_PLUGIN_PATH_ENV);
	ck_assert_ptr_nonnull(env);
	char *dirs = strdup(env), *save = NULL;
	const char *last = msg;
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		const char *at = strstr(last, d);
		ck_assert_msg(at != NULL, "%s not named (in order) in: %s", d, msg);
		last = at;
	}
	free(dirs);
	ck_assert_msg(strstr(last, PKGLIBDIR), "PKGLIBDIR after GWSYNC_PLUGIN_PATH: %s", msg);
	tcfg_free(&t);
}
END_TEST

START_TEST(plugin_path_order)
{
	/* A directory listed first wins over later ones and over PKGLIBDIR. */
	char *first = test_tmpdir();
	char *lib = build_path("tests/unit/.libs/noapply.so");
	char link[4200];
	snprintf(link, sizeof link, "%s/recorder.so", first);
	ck_assert_int_eq(symlink(lib, link), 0);
	const char *old = getenv(GW_PLUGIN_PATH_ENV);
	char *saved = old ? strdup(old) : NULL;
	char path[8400];
	snprintf(path, sizeof path, "%s::%s", first, old ? old : "");
	setenv(GW_PLUGIN_PATH_ENV, path, 1);
	char found[4096];
	struct gw_err err;
	ck_assert_int_eq(subscribers_resolve("recorder", found, sizeof found, &err), 0);
	ck_assert_str_eq(found, link);
	if (saved)
		setenv(GW_PLUGIN_PATH_ENV, saved, 1);
	else
		unsetenv(GW_PLUGIN_PATH_ENV);
	ck_assert_int_eq(subscribers_resolve("recorder", found, sizeof found, &err), 0);
	ck_assert_str_ne(found, link);
	free(saved);
	free(lib);
	rm_rf(first);
	free(first);
}
END_TEST

/*
 * The names a shared object defines in its dynamic symbol table (functions and objects,
 * global or weak), read from the file's .dynsym section; "," separated, into buf.
 */
static void exported_names(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	char *img = slurp(path, &len);
	ck_assert_msg(img != NULL, "cannot read %s", path);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	ck_assert(len > sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0);
	ck_assert_int_eq(eh->e_ident[EI_CLASS], ELFCLASS64);
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	buf[0] = '\0';
	size_t used = 0;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
		const char *str = img + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++) {
			int type = ELF64_ST_TYPE(sym[k].st_info),
			    bind = ELF64_ST_BIND(sym[k].st_info);
			if (sym[k].st_shndx == SHN_UNDEF ||
			    (type != STT_FUNC && type != STT_OBJECT) ||
			    (bind != STB_GLOBAL && bind != STB_WEAK))
				continue;
			used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "",
			                         str + sym[k].st_name);
		}
	}
	free(img);
}

/* gwsyncd is linked -export-dynamic: a plugin's global function named like an agent one
 * (the file plugin's atomic_file_open() and the agent's) would be bound to the agent's at
 * load time. Plugins are built so that the entry point is their only export. */
START_TEST(plugins_export_only_their_entry_point)
{
	const char *rel[] = {"plugins/file/.libs/file.so",   "plugins/log/.libs/log.so",
	                     "plugins/lmdb/.libs/lmdb.so",   "docs/example/.libs/counter.so",
	                     "tests/unit/.libs/recorder.so", "tests/unit/.libs/recorder1.so"};
	for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
		char *path = build_path(rel[i]);
		char names[4096];
		exported_names(path, names, sizeof names);
		ck_assert_msg(strcmp(names, "gwsync_subscriber") == 0, "%s exports: %s", rel[i],
		              names);
		free(path);
	}
}
END_TEST

/* The plugin guide's example (docs/example/counter.c) builds and works. */
START_TEST(guide_example_loads)
{
	char logpath[4200];
	snprintf(logpath, sizeof logpath, "%s/agent.log", dir);
	struct gw_log *flog = test_log(logpath);
	struct tcfg t;
	tcfg_init(&t);
	char *path = build_path("docs/example/.libs/counter.so");
	tcfg_add(&t, "counting", path, "every: 2\n");
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, flog, &subs, &err) == 0, "%s", err.msg);
	struct subscriber *s = &subs->v[0];
	ck_assert_str_eq(s->desc->name, "counter");

	struct group_data *v1 =
	    gd_make(GW_GROUP_RULE, "m1", 1, (const char *[]){"a", "{}", "b", "{}", NULL});
	struct group_data *v2 =
	    gd_make(GW_GROUP_RULE, "m2", 2, (const char *[]){"b", "{\"x\":1}", "c", "{}", NULL});
	struct gw_err why;
	ck_assert_int_eq(sub_apply(s, GW_GROUP_RULE, NULL, v1, &why), 0);
	ck_assert_int_eq(sub_apply(s, GW_GROUP_RULE, v1, v2, &why), 0);
	subscribers_free(subs);
	gw_log_close(flog);

	char *text = slurp(logpath, NULL);
	ck_assert_ptr_nonnull(text);
	/* After 2 changes ("every: 2") it reports its totals: 3 added, 1 updated, 1 removed. */
	ck_assert_msg(strstr(text, "counting: 2 changes: +3 ~1 -1"), "log was:\n%s", text);
	free(text);
	group_data_unref(v1);
	group_data_unref(v2);
	free(path);
	tcfg_free(&t);
}
END_TEST

/* Deliver one change of group g (one item) to s; the verdict, `why` set on rejection. */
static int apply_one(struct subscriber *s, enum gw_group g, struct gw_err *why)
{
	struct group_data *gd = gd_make(g, "m1", 1, (const char *[]){"k", "{}", NULL});
	why->msg[0] = '\0';
	int rc = sub_apply(s, g, NULL, gd, why);
	group_data_unref(gd);
	return rc;
}

/* host->error()'s rules, the state of a plugin without init() (NULL), and the warning for
 * an ABI-2 plugin that declares no options (its config: is then handed over unchecked). */
START_TEST(host_error_rules_and_no_init_state)
{
	char logpath[4200];
	snprintf(logpath, sizeof logpath, "%s/agent.log", dir);
	struct gw_log *flog = test_log(logpath);
	struct tcfg t;
	tcfg_init(&t);
	tcfg_add(&t, "errs", "errplug", "anything: 1\n"); /* declares nothing: unchecked */
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, flog, &subs, &err) == 0, "%s", err.msg);
	struct subscriber *s = &subs->v[0];
	ck_assert_ptr_null(s->state);
	struct gw_err why;
	ck_assert_int_eq(apply_one(s, GW_GROUP_PLUGIN, &why), -1);
	ck_assert_str_eq(why.msg, "second reason"); /* called twice: the last wins */
	ck_assert_int_eq(apply_one(s, GW_GROUP_SELECTOR, &why), 0);
	ck_assert_int_eq(apply_one(s, GW_GROUP_RULE, &why), -1);
	ck_assert_str_eq(why.msg, "apply() returned 7");
	ck_assert_int_eq(apply_one(s, GW_GROUP_APP_AUTH, &why), 0);
	ck_assert_int_eq(subscriber_tick(s, 0), -1);
	subscribers_free(subs);
	gw_log_close(flog);
	char *text = slurp(logpath, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "accepted SELECTOR but called host->error(): a complaint"), "%s",
	              text);
	ck_assert_msg(strstr(text, "logv says 42"), "%s", text);
	ck_assert_msg(strstr(text, "plugin 'errplug' declares no options, so its config: is not "
	                           "checked"),
	              "%s", text);
	ck_assert_msg(strstr(text, "tick(): tick trouble"), "%s", text);
	ck_assert_msg(strstr(text, "fini(): fini trouble"), "%s", text);
	free(text);
	tcfg_free(&t);
}
END_TEST

/* Declared options: unknown keys (with a suggestion), types and required keys are checked
 * before init(), like the agent's own keys; defaults come from the declaration. */
START_TEST(declared_options_checked_like_agent_keys)
{
	struct tcfg t;
	tcfg_init(&t);
	char yaml[4200];
	snprintf(yaml, sizeof yaml, "out: %s\nfail_intt: true\n", out);
	tcfg_add(&t, "typo", "recorder", yaml);
	const char *msg = refused(&t);
	ck_assert_msg(strstr(msg, "test.yaml:2:1: unknown key 'fail_intt' in "
	                          "subscribers[0].config (did you mean 'fail_init'?)"),
	              "%s", msg);
	ck_assert(!has_line(out, "init typo")); /* refused before init() */
	tcfg_free(&t);

	tcfg_init(&t);
	snprintf(yaml, sizeof yaml, "out: %s\nfail_init: maybe\n", out);
	tcfg_add(&t, "badtype", "recorder", yaml);
	msg = refused(&t);
	ck_assert_msg(strstr(msg, "test.yaml:2:12: subscribers[0].config.fail_init: expected "
	                          "true or false (also yes/no, on/off), got 'maybe'"),
	              "%s", msg);
	tcfg_free(&t);

	tcfg_init(&t);
	tcfg_add(&t, "noout", "recorder", "delay: 1s\n");
	msg = refused(&t);
	ck_assert_msg(strstr(msg, "missing required key 'out'"), "%s", msg);
	tcfg_free(&t);
}
END_TEST

/* ABI 1: a plugin compiled against the ABI-1 header (tests/abi1/) loads, reads its options
 * through the ABI-1 host table and receives a change in the ABI-1 shapes. */
START_TEST(abi1_plugin_loads_and_applies)
{
	struct tcfg t;
	tcfg_init(&t);
	char yaml[4200];
	snprintf(yaml, sizeof yaml, "out: %s\n", out);
	tcfg_add(&t, "old", "recorder1", yaml);
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	struct subscriber *s = &subs->v[0];
	ck_assert_int_eq(s->abi, 1);
	ck_assert_str_eq(s->desc->name, "recorder1");
	ck_assert(has_line(out, "init old"));
	struct group_data *a =
	    gd_make(GW_GROUP_RULE, "m1", 7, (const char *[]){"p1", "{}", "p2", "{}", NULL});
	struct group_data *b =
	    gd_make(GW_GROUP_RULE, "m2", 8, (const char *[]){"p2", "{\"x\":1}", "p3", "{}", NULL});
	struct gw_err why = {0};
	ck_assert_int_eq(sub_apply(s, GW_GROUP_RULE, NULL, a, &why), 0);
	ck_assert_int_eq(sub_apply(s, GW_GROUP_RULE, a, b, &why), 0);
	subscribers_free(subs);
	ck_assert(has_line(out, "apply RULE md5=m1 prev=- lmt=7 items=2 added=p1,p2 updated= "
	                        "removed= stale=0 ok"));
	ck_assert(has_line(out, "apply RULE md5=m2 prev=m1 lmt=8 items=2 added=p3 updated=p2 "
	                        "removed=p1 stale=0 ok"));
	ck_assert_int_eq(count_lines(out, "fini"), 1);
	group_data_unref(a);
	group_data_unref(b);
	tcfg_free(&t);
}
END_TEST

/* The host tells a plugin which groups the agent syncs (issue 21, item 8): the groups of the
 * configuration, in its order; an ABI-1 plugin beside it still loads. */
START_TEST(the_host_says_which_groups_the_configuration_syncs)
{
	struct tcfg t;
	tcfg_init(&t);
	enum gw_group groups[] = {GW_GROUP_SELECTOR, GW_GROUP_DISCOVER_UPSTREAM, GW_GROUP_RULE};
	memcpy(t.cfg.groups, groups, sizeof groups);
	t.cfg.n_groups = 3;
	char yaml[4200];
	snprintf(yaml, sizeof yaml, "out: %s/ups\nwrites: %s/writes\n", dir, dir);
	tcfg_add(&t, "ups", "upstreams", yaml);
	snprintf(yaml, sizeof yaml, "out: %s\n", out);
	tcfg_add(&t, "old", "recorder1", yaml);
	struct subscribers *subs = NULL;
	struct gw_err err;
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	const struct gw_host *h = &subs->v[0].host;
	ck_assert(GW_HAS(h, group_configured) && GW_HAS(h, configured_groups));
	ck_assert_int_eq(h->group_configured(h, GW_GROUP_DISCOVER_UPSTREAM), 1);
	ck_assert_int_eq(h->group_configured(h, GW_GROUP_RULE), 1);
	ck_assert_int_eq(h->group_configured(h, GW_GROUP_PLUGIN), 0);
	ck_assert_int_eq(h->group_configured(h, (enum gw_group)GW_GROUP_COUNT), 0);
	enum gw_group got[GW_GROUP_COUNT];
	ck_assert_uint_eq(h->configured_groups(h, got, GW_GROUP_COUNT), 3);
	ck_assert_int_eq(got[0], GW_GROUP_SELECTOR);
	ck_assert_int_eq(got[1], GW_GROUP_DISCOVER_UPSTREAM);
	ck_assert_int_eq(got[2], GW_GROUP_RULE);
	ck_assert_int_eq(subs->v[1].abi, 1);
	ck_assert(has_line(out, "init old"));
	subscribers_free(subs);
	tcfg_free(&t);
}
END_TEST

/* A plugin's long message is cut in the agent's log and says so (issue 21, item 11), after
 * its secrets are masked (a cut through a secret must not leave its first half); a message
 * whose escaped form outgrows the line is marked the same way. */
START_TEST(a_long_plugin_message_is_cut_and_marked_in_the_agent_log)
{
	for (int json = 0; json < 2; json++) {
		char logpath[4200];
		snprintf(logpath, sizeof logpath, "%s/agent-%d.log", dir, json);
		struct gw_log *flog = NULL;
		struct gw_err err;
		ck_assert_int_eq(gw_log_open(&flog, GW_LOG_DEBUG, json ? GW_LOG_JSON : GW_LOG_TEXT,
		                             logpath, &err),
		                 0);
		gw_log_secret(flog, "S3CR3T-T0KEN-VALUE");
		struct tcfg t;
		tcfg_init(&t);
		tcfg_add(&t, "errs", "errplug", "");
		struct subscribers *subs = NULL;
		ck_assert_msg(subscribers_load(&t.cfg, flog, &subs, &err) == 0, "%s", err.msg);
		const struct gw_host *h = &subs->v[0].host;
		char *text = malloc(6001);
		memset(text, 'a', 6000);
		text[6000] = '\0';
		memcpy(text + 4070, "S3CR3T-T0KEN-VALUE", 18); /* across the cut at 4079 */
		h->log(h, GW_LOG_INFO, "%s", text);
		memset(text, '\x01', 3000); /* 4 bytes each once escaped: past the 8 KiB line */
		text[3000] = '\0';
		h->log(h, GW_LOG_INFO, "%s", text);
		h->log(h, GW_LOG_INFO, "short and whole");
		free(text);
		subscribers_free(subs);
		gw_log_close(flog);
		tcfg_free(&t);
		char *all = slurp(logpath, NULL), *line[3] = {0}, *save = NULL;
		ck_assert_ptr_nonnull(all);
		int n = 0;
		for (char *l = strtok_r(all, "\n", &save); l && n < 3;
		     l = strtok_r(NULL, "\n", &save))
			if (strstr(l, json ? "\"component\":\"errs\"" : " errs: "))
				line[n++] = l;
		char *line1 = line[0], *line2 = line[1], *line3 = line[2];
		ck_assert_ptr_nonnull(line3);
		/* the masked secret runs up to the cut */
		ck_assert_msg(strstr(line1, "a********* ... [truncated]"), "%.80s", line1);
		ck_assert_msg(!strstr(line1, "S3CR"), "half a secret in the log");
		ck_assert_msg(strstr(line2, " ... [truncated]"), "%.80s", line2);
		ck_assert_msg(strstr(line3, "short and whole") && !strstr(line3, "truncated"), "%s",
		              line3);
		free(all);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loader");
	TCase *tc = tcase_create("loader");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, loads_bare_name_from_plugin_path);
	tcase_add_test(tc, loads_a_path);
	tcase_add_test(tc, no_subscribers_is_fine);
	tcase_add_test(tc, missing_file_refused);
	tcase_add_test(tc, misspelt_library_names_every_directory_and_the_closest_plugin);
	tcase_add_test(tc, missing_symbol_refused);
	tcase_add_test(tc, abi_mismatch_refused);
	tcase_add_test(tc, missing_apply_refused);
	tcase_add_test(tc, init_failure_refused_and_earlier_ones_finished);
	tcase_add_test(tc, bad_option_refused_with_position);
	tcase_add_test(tc, plugin_path_order);
	tcase_add_test(tc, guide_example_loads);
	tcase_add_test(tc, plugins_export_only_their_entry_point);
	tcase_add_test(tc, host_error_rules_and_no_init_state);
	tcase_add_test(tc, declared_options_checked_like_agent_keys);
	tcase_add_test(tc, abi1_plugin_loads_and_applies);
	tcase_add_test(tc, the_host_says_which_groups_the_configuration_syncs);
	tcase_add_test(tc, a_long_plugin_message_is_cut_and_marked_in_the_agent_log);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
