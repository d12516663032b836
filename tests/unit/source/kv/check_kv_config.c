/*
 * Unit tests of what the sources' sections share in kv/config.h beyond the path stores'
 * keys, through the sections that use it, loaded from files as the agent loads them: a
 * secret and its _file twin (Consul's token, Apollo's secret), a server URL checked in one
 * order with each section's own words (a path allowed only where the words say), a list
 * of servers that refuses a duplicate.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "source/apollo/config.h"
#include "source/consul/config.h"
#include "source/source.h"
#include "testfiles.h"

static char *dir, yaml_path[600], secret_path[600];

static void setup(void)
{
	dir = test_tmpdir();
	ck_assert_ptr_nonnull(dir);
	snprintf(yaml_path, sizeof yaml_path, "%s/gwsync.yaml", dir);
	snprintf(secret_path, sizeof secret_path, "%s/secret", dir);
	FILE *f = fopen(secret_path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("s3cret\n", f);
	fclose(f);
	chmod(secret_path, 0600);
}

static void teardown(void)
{
	rm_rf(dir);
	free(dir);
}

/* Load `yaml` (a "%s" in it is the secret file's path): the configuration, or NULL with
 * the message in msg. */
static struct cfg *load(const char *yaml, char *msg, size_t cap)
{
	FILE *f = fopen(yaml_path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, yaml, secret_path);
	fclose(f);
	const struct cfg_section *sections[CFG_SECTIONS_MAX + 1];
	source_config_sections(sections);
	struct gw_err err = {0};
	struct cfg *c = NULL;
	if (cfg_load(yaml_path, sections, &c, &err) != 0)
		c = NULL;
	snprintf(msg, cap, "%s", err.msg);
	return c;
}

/* The load is refused with a message that holds `part`. */
static void refused(const char *yaml, const char *part)
{
	char msg[1024];
	struct cfg *c = load(yaml, msg, sizeof msg);
	ck_assert_msg(!c, "accepted:\n%s", yaml);
	ck_assert_msg(strstr(msg, part), "'%s' lacks '%s'", msg, part);
}

START_TEST(a_secret_and_its_file_exclude_each_other_naming_the_line_of_the_first)
{
	refused("consul:\n  servers: [ \"http://h:8500\" ]\n  token: t\n  token_file: %s\n",
	        "consul.token_file: cannot be used together with consul.token (line 3)");
	refused("consul:\n  servers: [ \"http://h:8500\" ]\n  token_file: %s\n  token: t\n",
	        "consul.token: cannot be used together with consul.token_file (line 3)");
	refused("apollo:\n  servers: [ \"http://h:8080\" ]\n  app_id: a\n  secret_file: %s\n"
	        "  secret: s\n",
	        "apollo.secret: cannot be used together with apollo.secret_file (line 4)");
	refused("consul:\n  servers: [ \"http://h:8500\" ]\n  token: [ t ]\n",
	        "consul.token: expected a string, got a list");
}
END_TEST

START_TEST(a_secret_is_read_from_its_file_and_an_empty_one_is_none)
{
	char msg[1024];
	struct cfg *c =
	    load("consul:\n  servers: [ \"http://h:8500\" ]\n  token_file: %s\n", msg, sizeof msg);
	ck_assert_msg(c, "%s", msg);
	ck_assert_str_eq(consul_config(c)->token, "s3cret"); /* one trailing newline dropped */
	ck_assert_str_eq(consul_config(c)->token_file, secret_path);
	cfg_free(c);
	c = load("apollo:\n  servers: [ \"http://h:8080\" ]\n  app_id: a\n  secret: \"\"\n", msg,
	         sizeof msg);
	ck_assert_msg(c, "%s", msg);
	ck_assert_ptr_null(apollo_config(c)->secret);
	cfg_free(c);
	c = load("apollo:\n  servers: [ \"http://h:8080\" ]\n  app_id: a\n  secret: k\n", msg,
	         sizeof msg);
	ck_assert_msg(c, "%s", msg);
	ck_assert_str_eq(apollo_config(c)->secret, "k");
	cfg_free(c);
}
END_TEST

START_TEST(a_url_is_checked_with_the_words_of_its_section)
{
	refused("consul:\n  servers: [ \"ftp://h:8500\" ]\n", "is not an http:// or https:// URL "
	                                                      "(such as http://127.0.0.1:8500)");
	refused("consul:\n  servers: [ \"http://u:p@h:8500\" ]\n",
	        "credentials in the URL are not supported: use consul.token or consul.token_file");
	refused("apollo:\n  servers: [ \"http://u:p@h:8080/x\" ]\n  app_id: a\n",
	        "credentials in the URL are not supported: use apollo.secret for the access key");
	/* a path: refused where the section has none, kept where it may */
	refused("consul:\n  servers: [ \"http://h:8500/v1\" ]\n",
	        "must be scheme://host:port, without a path, query or fragment");
	refused("apollo:\n  servers: [ \"http://h:8080/cfg?x\" ]\n  app_id: a\n",
	        "must be scheme://host:port[/path], without a query or fragment");
	refused("consul:\n  servers: [ \"http://h\" ]\n",
	        "has no host:port (such as 127.0.0.1:8500)");
	refused("apollo:\n  servers: [ \"http://h/cfg\" ]\n  app_id: a\n",
	        "has no host:port (such as 127.0.0.1:8080)");
	char msg[1024];
	struct cfg *c =
	    load("apollo:\n  servers: [ \"http://h:8080/cfg//\" ]\n  app_id: a\n", msg, sizeof msg);
	ck_assert_msg(c, "%s", msg);
	ck_assert_uint_eq(apollo_config(c)->n_servers, 1);
	ck_assert_str_eq(apollo_config(c)->servers[0], "http://h:8080/cfg"); /* trailing '/' off */
	cfg_free(c);
}
END_TEST

/* The load is refused, naming the credentials, and the message quotes none of the URL. */
static void refused_unquoted(const char *yaml, const char *part, const char *secret)
{
	char msg[1024];
	struct cfg *c = load(yaml, msg, sizeof msg);
	ck_assert_msg(!c, "accepted:\n%s", yaml);
	ck_assert_msg(strstr(msg, part), "'%s' lacks '%s'", msg, part);
	ck_assert_msg(!strstr(msg, secret), "'%s' quotes the password", msg);
}

START_TEST(credentials_in_a_url_are_refused_before_any_message_quotes_it_whatever_its_scheme)
{
	/* a scheme mistyped or of another protocol: the credentials are still a secret */
	refused_unquoted("consul:\n  servers: [ \"ftp://u:pw0rd@h:8500\" ]\n",
	                 "credentials in the URL are not supported: use consul.token or "
	                 "consul.token_file",
	                 "pw0rd");
	refused_unquoted("etcd:\n  endpoints: [ \"htps://root:pw0rd@h:2379\" ]\n",
	                 "credentials in the URL are not supported: use etcd.username and "
	                 "etcd.password",
	                 "pw0rd");
	refused_unquoted("nacos:\n  servers: [ \"nacos://u:pw0rd@h:8848/nacos\" ]\n",
	                 "credentials in the URL are not supported: use nacos.username and "
	                 "nacos.password",
	                 "pw0rd");
	refused_unquoted("apollo:\n  servers: [ \"htp://u:pw0rd@h:8080\" ]\n  app_id: a\n",
	                 "credentials in the URL are not supported: use apollo.secret for the "
	                 "access key",
	                 "pw0rd");
	refused_unquoted("apollo:\n  servers: [ \"http://h:8080\" ]\n  meta: "
	                 "\"u:pw0rd@h:8080\"\n  app_id: a\n",
	                 "credentials in the URL are not supported", "pw0rd");
	refused_unquoted("polaris:\n  servers: [ \"grpc://u:pw0rd@h:8091\" ]\n",
	                 "credentials in the URL are not supported: use polaris.token", "pw0rd");
	/* no "://" at all (a scheme missing its colon): every '@' counts, nothing is quoted */
	refused_unquoted("etcd:\n  endpoints: [ \"http//root:pw0rd@h:2379\" ]\n",
	                 "credentials in the URL are not supported: use etcd.username and "
	                 "etcd.password",
	                 "pw0rd");
	/* an '@' after the authority is not a credential: the usual message */
	refused("consul:\n  servers: [ \"ftp://h:8500/a@b\" ]\n",
	        "is not an http:// or https:// URL");
}
END_TEST

/* Refusals after something was kept already (the sanitizer pass finds what they would leak):
 * a _file twin that cannot be read after its path was kept, a bad server after a good one,
 * the second of a secret and its twin after the first was read. */
START_TEST(a_refusal_after_a_kept_value_names_the_key_and_frees_what_was_kept)
{
	refused("consul:\n  servers: [ \"http://h:8500\" ]\n  token_file: %s.missing\n",
	        "consul.token_file: cannot read '");
	refused("polaris:\n  servers: [ \"http://h:8090\" ]\n  token_file: /\n",
	        "polaris.token_file: /: not a regular file");
	refused("apollo:\n  servers: [ \"http://h:8080\", \"http://g\" ]\n  app_id: a\n",
	        "apollo.servers[1]: 'http://g' has no host:port (such as 127.0.0.1:8080)");
	refused("consul:\n  servers: [ \"http://h:8500\" ]\n  token_file: %s\n  token: t\n",
	        "consul.token: cannot be used together with consul.token_file (line 3)");
	refused("polaris:\n  servers: [ \"http://h:8090\" ]\n  token: t\n  token_file: %s\n",
	        "polaris.token_file: cannot be used together with polaris.token (line 3)");
}
END_TEST

START_TEST(a_server_given_twice_is_refused_whatever_its_case)
{
	refused("apollo:\n  servers: [ \"http://h:8080\", \"HTTP://H:8080/\" ]\n  app_id: a\n",
	        "apollo.servers[1]: duplicate entry 'http://h:8080'");
	refused("consul:\n  servers: [ \"http://h:8500\", \"http://h:8500\" ]\n",
	        "consul.servers[1]: duplicate entry 'http://h:8500'");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kv_config");
	TCase *tc = tcase_create("shared keys");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_secret_and_its_file_exclude_each_other_naming_the_line_of_the_first);
	tcase_add_test(tc, a_secret_is_read_from_its_file_and_an_empty_one_is_none);
	tcase_add_test(tc, a_url_is_checked_with_the_words_of_its_section);
	tcase_add_test(
	    tc, credentials_in_a_url_are_refused_before_any_message_quotes_it_whatever_its_scheme);
	tcase_add_test(tc, a_refusal_after_a_kept_value_names_the_key_and_frees_what_was_kept);
	tcase_add_test(tc, a_server_given_twice_is_refused_whatever_its_case);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
