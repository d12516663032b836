/*
 * The fixture the bundled plugins' unit tests share (check_file_plugin, check_lmdb_plugin):
 * the very .so that ships, opened once as the agent opens it, and one instance of it at a
 * time, started from its `config:` YAML and stopped at a restart and after each test, all
 * through the kit we ship plugin authors (gwsync/testing.h: gwt_plugin_open,
 * gwt_instance_start...), so these tests are built the way we tell authors to build theirs.
 * What is left in each test file is its plugin's own.
 *
 * The state is the test program's (one plugin under test per program, Check's fixtures):
 * the names below are what the tests' bodies read.
 */
#ifndef GW_PLUGTEST_H
#define GW_PLUGTEST_H

#include <check.h>
#include <gwsync/testing.h>

extern const struct gw_subscriber *plugin; /* the plugin under test's description */
extern struct gwt_instance *in;            /* the running instance (NULL: none) */
extern struct gwt_host *h;                 /* its host and state, as plugtest_start() left them */
extern void *state;
extern char *dir;      /* this test's temporary directory */
extern char err[2048]; /* the last reason a kit call gave */

/* The test case `name`: 120 s a test, `setup` (which calls plugtest_setup() first) before
 * each test and the instance stopped and `dir` removed after it. */
TCase *plugtest_tcase(const char *name, void (*setup)(void));
/* A fresh `dir`. */
void plugtest_setup(void);

/* main()'s: open GWSYNC_BUILDDIR/REL (e.g. "plugins/file/.libs/file.so"), whose instances
 * are named `instance`, run the suite `suite` of `tc`, close it. The exit status. */
int plugtest_run(const char *rel, const char *instance, const char *suite, TCase *tc);

/* What the agent does at start-up (and gwsyncd --check), after stopping the running
 * instance: the config: map checked against the declared options, then init(). 0, or -1
 * with the agent's message in err. */
int plugtest_start(const char *yaml);
/* The same, which must fail: the message. */
const char *plugtest_start_fails(const char *yaml);
/* fini() (as the agent does at shutdown) and forget what was delivered. */
void plugtest_stop(void);

#endif
