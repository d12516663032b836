/*
 * The bundled plugins' shared test fixture (see plugtest.h): a few lines over the kit, so
 * the file and lmdb tests do not each repeat them.
 */
#include "plugtest.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "testfiles.h"

const struct gw_subscriber *plugin;
struct gwt_instance *in;
struct gwt_host *h;
void *state;
char *dir;
char err[2048];

static const char *instance_name;

void plugtest_setup(void)
{
	dir = test_tmpdir();
}

void plugtest_stop(void)
{
	gwt_instance_stop(in);
	in = NULL;
}

static void teardown(void)
{
	plugtest_stop();
	rm_rf(dir);
	free(dir);
}

TCase *plugtest_tcase(const char *name, void (*setup)(void))
{
	TCase *tc = tcase_create(name);
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	return tc;
}

int plugtest_run(const char *rel, const char *instance, const char *suite, TCase *tc)
{
	/* the plugin as it ships: the .so built in this tree, opened as the agent opens it */
	char *path = build_path(rel);
	struct gwt_plugin *so = gwt_plugin_open(path, err, sizeof err);
	if (!so) {
		fprintf(stderr, "%s: %s\n", path, err);
		free(path);
		return EXIT_FAILURE;
	}
	free(path);
	plugin = gwt_plugin_desc(so);
	instance_name = instance;
	Suite *s = suite_create(suite);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	gwt_plugin_close(so);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int plugtest_start(const char *yaml)
{
	plugtest_stop();
	in = gwt_instance_start(plugin, instance_name, yaml, err, sizeof err);
	h = in ? gwt_instance_host(in) : NULL;
	state = in ? gwt_instance_state(in) : NULL;
	return in ? 0 : -1;
}

const char *plugtest_start_fails(const char *yaml)
{
	ck_assert_int_eq(plugtest_start(yaml), -1);
	return err;
}
