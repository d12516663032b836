/*
 * Unit tests for the configuration: agent/config/config.c (YAML -> struct cfg),
 * agent/config/ytree.c (positions, null vs "null", refusals) and agent/deliver/plugin_config.c
 * (the plugin ABI's getters). Every file is written into a fresh temporary directory by the
 * test itself, so each refusal is checked with its exact "FILE:LINE:COL:" prefix and a
 * message fragment.
 */
#include <check.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "config/config_walk.h"
#include "deliver/plugin_config.h"
#include "config/ytree.h"
#include "model/groups.h"
#include "source/admin/config.h"
#include "source/etcd/config.h"
#include "source/source.h"
#include "source/websocket/config.h"
#include "source/zookeeper/config.h"

static char tmpdir[256];

/* The sources' sections, as main hands them to the loader (source/source.h). */
static const struct cfg_section *const *sections(void)
{
	static const struct cfg_section *list[CFG_SECTIONS_MAX + 1];
	source_config_sections(list);
	return list;
}

/* admin:'s settings (source/admin/config.h), where admin.servers and admin.hold are read. */
#define ADMIN(c) admin_config(c)
static char cfg_path[512];

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/gwsync-check-config-XXXXXX",
	         getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(cfg_path, sizeof cfg_path, "%s/gwsync.yaml", tmpdir);
	unsetenv("GWSYNC_TEST_UNSET");
	unsetenv("GWSYNC_ADMIN_PASSWORD");
}

static void teardown(void)
{
	DIR *d = opendir(tmpdir);
	if (d) {
		struct dirent *e;
		char p[800];
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
				snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
				unlink(p);
			}
		closedir(d);
	}
	rmdir(tmpdir);
}

/* Write `text` to tmpdir/name; returns the path (static per name slot). */
static const char *write_file(const char *name, const char *text)
{
	static char paths[4][512];
	static int slot;
	char *p = paths[slot++ % 4];
	snprintf(p, 512, "%s/%s", tmpdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
	return p;
}

static struct cfg *load_ok(const char *yaml)
{
	struct gw_err err = {0};
	struct cfg *c = NULL;
	write_file("gwsync.yaml", yaml);
	ck_assert_msg(cfg_load(cfg_path, sections(), &c, &err) == 0, "refused: %s\n--- yaml:\n%s",
	              err.msg, yaml);
	ck_assert_ptr_nonnull(c);
	return c;
}

/* The load must fail with "CFG_PATH:LINE:COL: ...PART..." */
static void load_err(const char *yaml, int line, int col, const char *part)
{
	struct gw_err err = {0};
	struct cfg *c = NULL;
	char prefix[600];
	write_file("gwsync.yaml", yaml);
	int rc = cfg_load(cfg_path, sections(), &c, &err);
	ck_assert_msg(rc == -1, "accepted, expected '%s'\n--- yaml:\n%s", part, yaml);
	ck_assert_ptr_null(c);
	snprintf(prefix, sizeof prefix, "%s:%d:%d: ", cfg_path, line, col);
	ck_assert_msg(strncmp(err.msg, prefix, strlen(prefix)) == 0,
	              "message '%s' does not start with '%s'", err.msg, prefix);
	ck_assert_msg(strstr(err.msg, part), "message '%s' lacks '%s'", err.msg, part);
}

#define MINIMAL "admin:\n  servers: [ \"http://127.0.0.1:9095\" ]\n"

/* ---------------------------------------------------------------- good files */

START_TEST(minimal_defaults)
{
	struct cfg *c = load_ok(MINIMAL);
	ck_assert_str_eq(c->path, cfg_path);
	ck_assert_uint_eq(ADMIN(c)->n_servers, 1);
	ck_assert_str_eq(ADMIN(c)->servers[0], "http://127.0.0.1:9095");
	ck_assert_ptr_null(c->username);
	ck_assert_ptr_null(c->password);
	ck_assert_ptr_null(c->password_file);
	ck_assert_str_eq(c->namespace_id, GW_DEFAULT_NAMESPACE);
	ck_assert_uint_eq(c->n_groups, 5);
	ck_assert_int_eq(c->groups[0], GW_GROUP_PLUGIN);
	ck_assert_int_eq(c->groups[1], GW_GROUP_SELECTOR);
	ck_assert_int_eq(c->groups[2], GW_GROUP_RULE);
	ck_assert_int_eq(c->groups[3], GW_GROUP_APP_AUTH);
	ck_assert_int_eq(c->groups[4], GW_GROUP_META_DATA);
	ck_assert_int_eq(c->connect_timeout_ms, 10000);
	ck_assert_int_eq(c->read_timeout_ms, 90000);
	ck_assert_int_eq(ADMIN(c)->hold_ms, 60000);
	ck_assert_int_eq(c->retry_attempts, 3);
	ck_assert_int_eq(c->retry_interval_ms, 5000);
	ck_assert_int_eq(c->retry_backoff_ms, 300000);
	ck_assert_int_eq(c->max_response, 64 * 1024 * 1024);
	ck_assert_ptr_null(c->tls.ca_file);
	ck_assert_ptr_null(c->tls.cert_file);
	ck_assert_ptr_null(c->tls.key_file);
	ck_assert_int_eq(c->tls.insecure_skip_verify, 0);
	ck_assert_int_eq(c->gateway_port, 0);
	ck_assert_str_eq(c->state_dir, "/var/lib/gwsync");
	ck_assert_int_eq(c->log_level, GW_LOG_INFO);
	ck_assert_int_eq(c->log_format, GW_LOG_TEXT);
	ck_assert_ptr_null(c->log_file);
	ck_assert_ptr_null(c->status_listen);
	ck_assert_uint_eq(c->n_subscribers, 0);
	ck_assert_ptr_nonnull(c->tree);
	cfg_free(c);
}
END_TEST

START_TEST(every_key)
{
	const char *ca = write_file("ca.pem", "not really a CA, but readable\n");
	const char *crt = write_file("client.pem", "cert\n");
	const char *key = write_file("client.key", "key\n");
	char yaml[4096];
	setenv("GWSYNC_TEST_PW", "pa$$word", 1);
	snprintf(yaml, sizeof yaml,
	         "# every key, with non-default values\n"
	         "admin:\n"
	         "  servers:\n"
	         "    - http://10.0.0.1:9095/\n"
	         "    - \"HTTPS://admin.example:8443/shenyu-admin//\"\n"
	         "  username: root\n"
	         "  password: ${GWSYNC_TEST_PW}\n"
	         "  namespace: my-ns\n"
	         "  groups: [ RULE, PLUGIN, PROXY_SELECTOR, AI_PROXY_API_KEY ]\n"
	         "  connect_timeout: 1500ms\n"
	         "  read_timeout: 1m30s\n"
	         "  hold: 60s\n"
	         "  retry: { attempts: 10, interval: 10ms, backoff: 10m }\n"
	         "  max_response: 512KiB\n"
	         "  tls:\n"
	         "    ca_file: %s\n"
	         "    cert_file: %s\n"
	         "    key_file: %s\n"
	         "    insecure_skip_verify: yes\n"
	         "gateway: { port: 9195 }\n"
	         "state_dir: /srv/gwsync\n"
	         "log: { level: debug, format: json, file: /var/log/gwsync.log }\n"
	         "status: { listen: \"[::1]:9196\" }\n"
	         "subscribers:\n"
	         "  - name: gateway-files\n"
	         "    library: file\n"
	         "    config: { dir: /var/lib/gateway, mode: \"0640\" }\n"
	         "  - name: log.1\n"
	         "    library: /opt/plugins/log.so\n",
	         ca, crt, key);
	struct cfg *c = load_ok(yaml);
	ck_assert_uint_eq(ADMIN(c)->n_servers, 2);
	ck_assert_str_eq(ADMIN(c)->servers[0], "http://10.0.0.1:9095");
	ck_assert_str_eq(ADMIN(c)->servers[1], "HTTPS://admin.example:8443/shenyu-admin");
	ck_assert_str_eq(c->username, "root");
	ck_assert_str_eq(c->password, "pa$$word"); /* the value is not re-expanded */
	ck_assert_str_eq(c->namespace_id, "my-ns");
	ck_assert_uint_eq(c->n_groups, 4);
	ck_assert_int_eq(c->groups[0], GW_GROUP_RULE);
	ck_assert_int_eq(c->groups[1], GW_GROUP_PLUGIN);
	ck_assert_int_eq(c->groups[2], GW_GROUP_PROXY_SELECTOR);
	ck_assert_int_eq(c->groups[3], GW_GROUP_AI_PROXY_API_KEY);
	ck_assert_int_eq(c->connect_timeout_ms, 1500);
	ck_assert_int_eq(c->read_timeout_ms, 90000);
	ck_assert_int_eq(c->retry_attempts, 10);
	ck_assert_int_eq(c->retry_interval_ms, 10);
	ck_assert_int_eq(c->retry_backoff_ms, 600000);
	ck_assert_int_eq(c->max_response, 512 * 1024);
	ck_assert_str_eq(c->tls.ca_file, ca);
	ck_assert_str_eq(c->tls.cert_file, crt);
	ck_assert_str_eq(c->tls.key_file, key);
	ck_assert_int_eq(c->tls.insecure_skip_verify, 1);
	ck_assert_int_eq(c->gateway_port, 9195);
	ck_assert_str_eq(c->state_dir, "/srv/gwsync");
	ck_assert_int_eq(c->log_level, GW_LOG_DEBUG);
	ck_assert_int_eq(c->log_format, GW_LOG_JSON);
	ck_assert_str_eq(c->log_file, "/var/log/gwsync.log");
	ck_assert_str_eq(c->status_listen, "[::1]:9196");
	ck_assert_uint_eq(c->n_subscribers, 2);
	ck_assert_str_eq(c->subscribers[0].name, "gateway-files");
	ck_assert_str_eq(c->subscribers[0].library, "file");
	ck_assert_int_eq(c->subscribers[0].line, 25);
	ck_assert_int_eq(c->subscribers[0].col, 5);
	const struct ynode *conf = c->subscribers[0].config;
	ck_assert_int_eq(conf->type, YNODE_MAP);
	ck_assert_uint_eq(conf->n, 2);
	ck_assert_str_eq(ytree_get(conf, "dir")->text, "/var/lib/gateway");
	ck_assert_str_eq(ytree_get(conf, "mode")->text, "0640");
	ck_assert_str_eq(c->subscribers[1].name, "log.1");
	ck_assert_str_eq(c->subscribers[1].library, "/opt/plugins/log.so");
	/* absent config: an empty map, positioned at the entry */
	ck_assert_int_eq(c->subscribers[1].config->type, YNODE_MAP);
	ck_assert_uint_eq(c->subscribers[1].config->n, 0);
	ck_assert_int_eq(c->subscribers[1].config->line, 28);
	cfg_free(c);
	unsetenv("GWSYNC_TEST_PW");
}
END_TEST

/* The issue's example, as written there, with the variable set. */
START_TEST(issue_example)
{
	setenv("GWSYNC_ADMIN_PASSWORD", "123456", 1);
	struct cfg *c = load_ok("admin:\n"
	                        "  servers: [ \"http://127.0.0.1:9095\" ]   # a list\n"
	                        "  username: admin\n"
	                        "  password: ${GWSYNC_ADMIN_PASSWORD}\n"
	                        "  # password_file: /run/secrets/admin\n"
	                        "  namespace: 649330b6-c2d7-4edc-be8e-8a54df9eb385\n"
	                        "  groups: [ PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA ]\n"
	                        "  connect_timeout: 10s\n"
	                        "  read_timeout: 90s\n"
	                        "  retry: { attempts: 3, interval: 5s, backoff: 5m }\n"
	                        "state_dir: /var/lib/gwsync\n"
	                        "log: { level: info }\n"
	                        "subscribers:\n"
	                        "  - name: gateway-files\n"
	                        "    library: file\n"
	                        "    config: { dir: /var/lib/gateway }\n");
	ck_assert_str_eq(c->password, "123456");
	ck_assert_str_eq(c->username, "admin");
	ck_assert_uint_eq(c->n_groups, 5);
	ck_assert_uint_eq(c->n_subscribers, 1);
	cfg_free(c);
}
END_TEST

/* etc/gwsync.yaml must load on a fresh machine, where GWSYNC_ADMIN_PASSWORD is unset. */
START_TEST(sample_file)
{
	struct gw_err err = {0};
	struct cfg *c = NULL;
	ck_assert_msg(cfg_load(SRCDIR "/etc/gwsync.yaml", sections(), &c, &err) == 0, "%s",
	              err.msg);
	ck_assert_str_eq(ADMIN(c)->servers[0], "http://127.0.0.1:9095");
	ck_assert_str_eq(c->username, "admin");
	ck_assert_str_eq(c->password, "123456");
	ck_assert_uint_ge(c->n_subscribers, 2);
	cfg_free(c);

	setenv("GWSYNC_ADMIN_PASSWORD", "from-the-environment", 1);
	ck_assert_msg(cfg_load(SRCDIR "/etc/gwsync.yaml", sections(), &c, &err) == 0, "%s",
	              err.msg);
	ck_assert_str_eq(c->password, "from-the-environment");
	cfg_free(c);
}
END_TEST

START_TEST(servers_as_string)
{
	struct cfg *c = load_ok("admin:\n"
	                        "  servers: http://a:9095/, https://b:9096 ,http://c\n");
	ck_assert_uint_eq(ADMIN(c)->n_servers, 3);
	ck_assert_str_eq(ADMIN(c)->servers[0], "http://a:9095");
	ck_assert_str_eq(ADMIN(c)->servers[1], "https://b:9096");
	ck_assert_str_eq(ADMIN(c)->servers[2], "http://c");
	cfg_free(c);

	c = load_ok("admin: { servers: \"http://only:1\", groups: \"RULE,SELECTOR\" }\n");
	ck_assert_uint_eq(ADMIN(c)->n_servers, 1);
	ck_assert_str_eq(ADMIN(c)->servers[0], "http://only:1");
	ck_assert_uint_eq(c->n_groups, 2);
	ck_assert_int_eq(c->groups[0], GW_GROUP_RULE);
	ck_assert_int_eq(c->groups[1], GW_GROUP_SELECTOR);
	cfg_free(c);
}
END_TEST

START_TEST(nulls_keep_defaults)
{
	/* a key with no value, ~ or null is the same as an absent key */
	struct cfg *c = load_ok(MINIMAL "  username:\n"
	                                "  namespace: ~\n"
	                                "  read_timeout: null\n"
	                                "  tls:\n"
	                                "gateway:\n"
	                                "log: { level: ~ }\n"
	                                "subscribers:\n");
	ck_assert_ptr_null(c->username);
	ck_assert_str_eq(c->namespace_id, GW_DEFAULT_NAMESPACE);
	ck_assert_int_eq(c->read_timeout_ms, 90000);
	ck_assert_int_eq(c->log_level, GW_LOG_INFO);
	cfg_free(c);

	/* username empty: no login, so no password needed */
	c = load_ok(MINIMAL "  username: \"\"\n");
	ck_assert_ptr_null(c->username);
	cfg_free(c);
}
END_TEST

START_TEST(password_file)
{
	char yaml[1024];
	const char *pw = write_file("pw", "s3cret\n");
	snprintf(yaml, sizeof yaml, MINIMAL "  username: admin\n  password_file: %s\n", pw);
	struct cfg *c = load_ok(yaml);
	ck_assert_str_eq(c->password, "s3cret");
	ck_assert_str_eq(c->password_file, pw);
	cfg_free(c);

	/* exactly one trailing newline is stripped */
	write_file("pw", "two\n\n");
	c = load_ok(yaml);
	ck_assert_str_eq(c->password, "two\n");
	cfg_free(c);
	write_file("pw", "none");
	c = load_ok(yaml);
	ck_assert_str_eq(c->password, "none");
	cfg_free(c);
	write_file("pw", " spaced \r\n");
	c = load_ok(yaml);
	ck_assert_str_eq(c->password, " spaced \r");
	cfg_free(c);

	/* the path itself may use ${VAR} */
	setenv("GWSYNC_TEST_DIR", tmpdir, 1);
	write_file("pw", "via-env\n");
	c = load_ok(MINIMAL "  username: admin\n  password_file: ${GWSYNC_TEST_DIR}/pw\n");
	ck_assert_str_eq(c->password, "via-env");
	cfg_free(c);
	unsetenv("GWSYNC_TEST_DIR");
}
END_TEST

START_TEST(password_file_refusals)
{
	char yaml[1024], missing[600];
	snprintf(missing, sizeof missing, "%s/no-such-file", tmpdir);
	snprintf(yaml, sizeof yaml, MINIMAL "  username: admin\n  password_file: %s\n", missing);
	char want[700];
	snprintf(want, sizeof want, "admin.password_file: cannot read '%s': No such file", missing);
	load_err(yaml, 4, 18, want);

	/* a directory, a FIFO, a device: only a regular file is read (a FIFO opened for
	 * reading would block start-up for ever, core/readfile.h) */
	snprintf(yaml, sizeof yaml, MINIMAL "  username: admin\n  password_file: %s\n", tmpdir);
	snprintf(want, sizeof want, "admin.password_file: %s: not a regular file (a directory)",
	         tmpdir);
	load_err(yaml, 4, 18, want);
	char fifo[600];
	snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(yaml, sizeof yaml, MINIMAL "  username: admin\n  password_file: %s\n", fifo);
	snprintf(want, sizeof want, "admin.password_file: %s: not a regular file (a FIFO)", fifo);
	load_err(yaml, 4, 18, want);
	snprintf(yaml, sizeof yaml, MINIMAL "  username: admin\n  password_file: /dev/zero\n");
	load_err(yaml, 4, 18, "admin.password_file: /dev/zero: not a regular file");
	snprintf(yaml, sizeof yaml, MINIMAL "  tls:\n    ca_file: %s\n", fifo);
	snprintf(want, sizeof want, "admin.tls.ca_file: %s: not a regular file (a FIFO)", fifo);
	load_err(yaml, 4, 14, want);

	/* both given: refused at the second, naming the first's line */
	const char *pw = write_file("pw", "x\n");
	snprintf(yaml, sizeof yaml, MINIMAL "  password: abc\n  password_file: %s\n", pw);
	load_err(yaml, 4, 18,
	         "admin.password_file: cannot be used together with admin.password (line 3)");
	snprintf(yaml, sizeof yaml, MINIMAL "  password_file: %s\n  password: abcdef\n", pw);
	load_err(yaml, 4, 13, "admin.password: cannot be used together with admin.password_file");

	/* a username without any password */
	load_err(MINIMAL "  username: admin\n", 3, 13,
	         "admin.username: is set, so admin.password or admin.password_file is required");
}
END_TEST

/* ---------------------------------------------------------------- refusals */

START_TEST(unknown_keys)
{
	load_err("amdin:\n  servers: [ \"http://x\" ]\n", 1, 1,
	         "unknown key 'amdin' (did you mean 'admin'?)");
	load_err(MINIMAL "  read_timout: 90s\n", 3, 3,
	         "unknown key 'read_timout' in admin (did you mean 'read_timeout'?)");
	load_err(MINIMAL "  retry: { attempts: 3, intervall: 5s }\n", 3, 25,
	         "unknown key 'intervall' in admin.retry (did you mean 'interval'?)");
	load_err(MINIMAL "  tls: { insecure: true }\n", 3, 10,
	         "unknown key 'insecure' in admin.tls");
	load_err(MINIMAL "log: { levle: debug }\n", 3, 8,
	         "unknown key 'levle' in log (did you mean 'level'?)");
	load_err(MINIMAL "subscribers:\n  - name: a\n    libary: file\n", 5, 5,
	         "unknown key 'libary' in subscribers[0] (did you mean 'library'?)");
	/* nothing close: list what is valid */
	load_err(MINIMAL "gateway: { zzzzzz: 1 }\n", 3, 12,
	         "unknown key 'zzzzzz' in gateway (valid keys here: port)");
	load_err(MINIMAL "frobnicate: 1\n", 3, 1,
	         "(valid keys here: admin, zookeeper, etcd, nacos, apollo, consul, polaris, "
	         "gateway, state_dir, "
	         "control_socket, "
	         "log, status, subscribers)");
	/* a subscriber's own config map is the plugin's business: anything goes */
	struct cfg *c = load_ok(MINIMAL "subscribers:\n"
	                                "  - name: a\n"
	                                "    library: file\n"
	                                "    config: { whatever: [1, 2], nested: { x: y } }\n");
	ck_assert_uint_eq(c->subscribers[0].config->n, 2);
	cfg_free(c);
}
END_TEST

START_TEST(wrong_types)
{
	load_err("admin: http://x\n", 1, 8, "admin: expected a map of keys, got a string");
	load_err("- admin\n", 1, 1, "expected a map of keys at the top level");
	load_err("admin:\n  servers: { a: b }\n", 2, 12,
	         "admin.servers: expected a list of admin URLs, got a map");
	load_err("admin:\n  servers: [ [ \"http://x\" ] ]\n", 2, 14,
	         "admin.servers[0]: expected admin URLs, got a list");
	load_err("admin:\n  servers: [ \"\" ]\n", 2, 14,
	         "admin.servers[0]: expected admin URLs, got an empty string");
	load_err(MINIMAL "  username: [ a ]\n", 3, 13,
	         "admin.username: expected a string, got a list");
	load_err(MINIMAL "  password: { a: b }\n", 3, 13,
	         "admin.password: expected a string, got a map");
	load_err(MINIMAL "  retry: 3\n", 3, 10,
	         "admin.retry: expected a map of keys, got a string");
	load_err(MINIMAL "  retry: { attempts: three }\n", 3, 22,
	         "admin.retry.attempts: expected a whole number, got 'three'");
	load_err(MINIMAL "  retry: { attempts: 0 }\n", 3, 22,
	         "admin.retry.attempts: must be between 1 and 10000, got 0");
	load_err(MINIMAL "  retry: { attempts: 2.5 }\n", 3, 22, "expected a whole number");
	load_err(MINIMAL "  tls: { insecure_skip_verify: maybe }\n", 3, 32,
	         "admin.tls.insecure_skip_verify: expected true or false (also yes/no, on/off), "
	         "got 'maybe'");
	load_err(MINIMAL "gateway: { port: 70000 }\n", 3, 18,
	         "gateway.port: must be between 0 and 65535, got 70000");
	load_err(MINIMAL "gateway: { port: -1 }\n", 3, 18, "must be between 0 and 65535");
	load_err(MINIMAL "  max_response: 64MB\n", 3, 17,
	         "admin.max_response: expected a size in bytes, or with KiB, MiB or GiB (64MiB), "
	         "got '64MB'");
	load_err(MINIMAL "  max_response: 0\n", 3, 17,
	         "admin.max_response: must be at least 1 bytes");
	load_err(MINIMAL "state_dir: \"\"\n", 3, 12, "state_dir: must not be empty");
	load_err(MINIMAL "state_dir: [ a ]\n", 3, 12, "state_dir: expected a string, got a list");
	load_err(MINIMAL "log: { level: verbose }\n", 3, 15,
	         "log.level: expected error, warn, info or debug, got 'verbose'");
	load_err(MINIMAL "log: { format: xml }\n", 3, 16,
	         "log.format: expected text or json, got 'xml'");
	load_err(MINIMAL "subscribers: { name: a }\n", 3, 14,
	         "subscribers: expected a list of subscribers, got a map");
	load_err(MINIMAL "subscribers: [ file ]\n", 3, 16,
	         "subscribers[0]: expected a map of keys, got a string");
	load_err(MINIMAL "subscribers:\n  - name: a\n    library: file\n    config: [ x ]\n", 6, 13,
	         "subscribers[0].config: expected a map (the plugin's own settings), got a list");
	load_err(MINIMAL "subscribers:\n  - name: a\n    library: file\n    config: dir=/x\n", 6,
	         13, "expected a map (the plugin's own settings), got a string");
}
END_TEST

START_TEST(bad_durations)
{
	load_err(MINIMAL "  connect_timeout: 10\n", 3, 20,
	         "admin.connect_timeout: expected a duration like 200ms, 5s, 2m or 1h (a unit is "
	         "required), got '10'");
	load_err(MINIMAL "  retry: { interval: 5sec }\n", 3, 22,
	         "admin.retry.interval: expected a duration like 200ms");
	/* a fraction is not a missing unit: the message names the whole form (issue 21) */
	load_err(MINIMAL "  retry: { backoff: 1.5m }\n", 3, 21,
	         "admin.retry.backoff: fractions are not accepted: write 90s for '1.5m'");
	load_err(MINIMAL "  connect_timeout: 0.5s\n", 3, 20,
	         "admin.connect_timeout: fractions are not accepted: write 500ms for '0.5s'");
	load_err(MINIMAL "  connect_timeout: 0\n", 3, 20,
	         "admin.connect_timeout: must be at least 1ms");
	load_err(MINIMAL "  read_timeout: [ 90s ]\n", 3, 17, "expected a duration");
}
END_TEST

START_TEST(read_timeout_above_hold)
{
	load_err(MINIMAL "  read_timeout: 60s\n", 3, 17,
	         "admin.read_timeout: must be more than 60s (the admin holds a poll 60s)");
	load_err(MINIMAL "  read_timeout: 30s\n", 3, 17, "must be more than 60s");
	struct cfg *c = load_ok(MINIMAL "  read_timeout: 60001ms\n");
	ck_assert_int_eq(c->read_timeout_ms, 60001);
	cfg_free(c);
	/* a test admin with a short hold allows a short read timeout */
	c = load_ok(MINIMAL "  hold: 2s\n  read_timeout: 3s\n");
	ck_assert_int_eq(ADMIN(c)->hold_ms, 2000);
	ck_assert_int_eq(c->read_timeout_ms, 3000);
	cfg_free(c);
	load_err(MINIMAL "  hold: 2s\n  read_timeout: 1500ms\n", 4, 17,
	         "admin.read_timeout: must be more than 2s (the admin holds a poll 2s)");
	load_err(MINIMAL "  hold: 2m\n", 3, 9,
	         "admin.hold: must be less than admin.read_timeout (90s)");
}
END_TEST

START_TEST(zookeeper_section_loads_with_defaults)
{
	struct cfg *c = load_ok("zookeeper:\n  servers: \"z1:2181, z2:2182\"\n");
	const struct zk_config *zc = zk_config(c);
	ck_assert_str_eq(c->section, "zookeeper");
	ck_assert_uint_eq(zc->kv.n_servers, 2);
	ck_assert_str_eq(zc->kv.servers[1], "z2:2182");
	ck_assert_str_eq(zc->kv.root, "/" GW_DEFAULT_NAMESPACE "/shenyu");
	ck_assert_int_eq(zc->kv.settle_ms, 100);
	ck_assert_int_eq(zc->kv.resync_interval_ms, 10 * 60 * 1000);
	ck_assert_int_eq(zc->session_timeout_ms, 30 * 1000);
	ck_assert_int_eq(c->retry_attempts, 3);
	ck_assert_int_eq(c->retry_backoff_ms, 5 * 60 * 1000);
	ck_assert_uint_eq(c->n_groups, 5);
	/* one connection row, named by the servers and the root; admin.servers stays empty */
	ck_assert_uint_eq(ADMIN(c)->n_servers, 0);
	ck_assert_uint_eq(source_find("zookeeper")->conns(c), 1);
	ck_assert_str_eq(source_find("zookeeper")->conn_name(c, 0),
	                 "zookeeper://z1:2181,z2:2182/" GW_DEFAULT_NAMESPACE "/shenyu");
	cfg_free(c);
	c = load_ok("zookeeper:\n  servers: [ \"z:1\" ]\n  namespace: ns2\n  settle: 1s\n"
	            "  session_timeout: 5s\n  resync_interval: 0\n"
	            "  groups: [ PLUGIN, DISCOVER_UPSTREAM ]\n  retry: { attempts: 2 }\n");
	zc = zk_config(c);
	ck_assert_str_eq(zc->kv.root, "/ns2/shenyu");
	ck_assert_int_eq(zc->kv.settle_ms, 1000);
	ck_assert_int_eq(zc->session_timeout_ms, 5000);
	ck_assert_int_eq(zc->kv.resync_interval_ms, 0);
	ck_assert_uint_eq(c->n_groups, 2);
	ck_assert_int_eq(c->retry_attempts, 2);
	cfg_free(c);
	c = load_ok("zookeeper:\n  servers: [ \"z:1\" ]\n  root: /shenyu/\n");
	ck_assert_str_eq(zk_config(c)->kv.root, "/shenyu");
	cfg_free(c);
}
END_TEST

START_TEST(etcd_section_loads)
{
	struct cfg *c = load_ok("etcd:\n  endpoints: [ \"http://e1:2379/\", \"https://e2:2379\" ]\n"
	                        "  username: root\n  password: s3cret\n  connect_timeout: 2s\n"
	                        "  root: /shenyu\n");
	const struct kv_config *kv = etcd_config(c);
	ck_assert_str_eq(c->section, "etcd");
	ck_assert_uint_eq(kv->n_servers, 2);
	ck_assert_str_eq(kv->servers[0], "http://e1:2379");
	ck_assert_str_eq(c->password, "s3cret");
	ck_assert_int_eq(c->connect_timeout_ms, 2000);
	ck_assert_str_eq(source_find("etcd")->conn_name(c, 0), "etcd://e1:2379,e2:2379/shenyu");
	char summary[256];
	source_find("etcd")->summary(c, summary, sizeof summary);
	ck_assert_str_eq(summary, "etcd source etcd://e1:2379,e2:2379/shenyu");
	ck_assert_ptr_eq(source_select(c), source_find("etcd"));
	cfg_free(c);
}
END_TEST

START_TEST(source_sections_refused)
{
	/* exactly one source section, the second one named at its key with the first one's
	 * line (the key's, not its first child's) */
	load_err("admin:\n  servers: [ http://a ]\nzookeeper:\n  servers: [ \"z:1\" ]\n", 3, 1,
	         "zookeeper: cannot be used together with admin: (line 1)");
	load_err("etcd:\n  endpoints: [ \"http://e:1\" ]\nzookeeper:\n  servers: [ \"z:1\" ]\n", 3,
	         1, "zookeeper: cannot be used together with etcd: (line 1)");
	/* issue 20's case: zookeeper: on line 2, etcd: on line 5, each a block map whose first
	 * child is on the next line (it was reported at 6:3, naming line 3) */
	load_err("# sources\nzookeeper:\n  servers: [ \"z:1\" ]\n\netcd:\n  endpoints: [ "
	         "\"http://e:1\" ]\n",
	         5, 1, "etcd: cannot be used together with zookeeper: (line 2)");
	load_err("zookeeper: { servers: [ \"z:1\" ] }\netcd:\n\n  endpoints: [ \"http://e:1\" ]\n",
	         2, 1, "etcd: cannot be used together with zookeeper: (line 1)");
	load_err("zookeeper:\n  groups: [ PLUGIN ]\n", 1, 1, "zookeeper.servers: required");
	load_err("etcd:\n  groups: [ PLUGIN ]\n", 1, 1, "etcd.endpoints: required");
	load_err("zookeeper:\n  servers: [ \"z\" ]\n", 2, 14, "'z' is not host:port");
	load_err("zookeeper:\n  servers: [ \"z:1/chroot\" ]\n", 2, 14, "a chroot goes into");
	load_err("zookeeper:\n  servers: [ \"z:99999\" ]\n", 2, 14, "is not host:port");
	load_err("etcd:\n  endpoints: [ \"e:2379\" ]\n", 2, 16,
	         "is not an http:// or https:// URL");
	load_err("etcd:\n  endpoints: [ \"http://u:pw@e:2379\" ]\n", 2, 16,
	         "credentials in the URL are not supported");
	load_err("etcd:\n  endpoints: [ \"http://e:2379/v3\" ]\n", 2, 16, "without a path");
	load_err("zookeeper:\n  servers: [ \"z:1\" ]\n  root: shenyu\n", 3, 9,
	         "expected an absolute path");
	load_err("zookeeper:\n  servers: [ \"z:1\" ]\n  root: /\n", 3, 9, "must not be \"/\"");
	load_err("zookeeper:\n  servers: [ \"z:1\" ]\n  settle: 2s\n", 3, 11,
	         "zookeeper.settle: must be at most 1s");
	load_err("etcd:\n  endpoints: [ \"http://e:1\" ]\n  resync_interval: 10ms\n", 3, 20,
	         "etcd.resync_interval: must be 0 (off) or at least 1s");
	load_err("zookeeper:\n  servers: [ \"z:1\" ]\n  groups: [ PLUGIN, AI_PROXY_API_KEY ]\n", 3,
	         11, "AI_PROXY_API_KEY is never published to ZooKeeper");
	load_err("etcd:\n  endpoints: [ \"http://e:1\" ]\n  username: u\n", 3, 13,
	         "etcd.username: is set, so etcd.password or etcd.password_file is required");
	load_err("etcd:\n  endpoints: [ \"http://e:1\" ]\n  password: a\n  password_file: /x\n", 4,
	         18, "cannot be used together with etcd.password (line 3)");
	load_err("etcd:\n  endpoints: [ \"http://e:1\" ]\n  password: a\n", 3, 13,
	         "etcd.password: is set but etcd.username is not");
	load_err("zookeeper:\n  servers: [ \"z:1\" ]\n  password: x\n", 3, 3,
	         "unknown key 'password' in zookeeper");
}
END_TEST

START_TEST(servers_refused)
{
	load_err("admin:\n  servers: []\n", 2, 12, "admin.servers: the list is empty");
	/* a message that names a section points at its key, not at its first child */
	load_err("admin:\n  username: \"\"\n", 1, 1, "admin.servers: required");
	load_err("# the agent\n\nadmin:\n  connect_timeout: 2s\n", 3, 1, "admin.servers: required");
	load_err("admin:\n", 1, 1, "a source section is required");
	load_err("log: { level: info }\n", 1, 1, "a source section is required");
	load_err("", 1, 1, "a source section is required");
	load_err("# only a comment\n", 1, 1, "a source section is required");
	load_err("admin:\n  servers: [ \"ftp://x:21\" ]\n", 2, 14,
	         "admin.servers[0]: 'ftp://x:21' is not an http:// or https:// URL");
	load_err("admin:\n  servers: [ http://a, 127.0.0.1:9095 ]\n", 2, 24,
	         "admin.servers[1]: '127.0.0.1:9095' is not an http:// or https:// URL");
	load_err("admin:\n  servers: http://a, 127.0.0.1:9095\n", 2, 12,
	         "admin.servers: '127.0.0.1:9095' is not an http:// or https:// URL");
	load_err("admin:\n  servers: http://a,,http://b\n", 2, 12,
	         "admin.servers: empty entry in the comma-separated list");
	load_err("admin:\n  servers: [ \"http://\" ]\n", 2, 14, "'http://' has no host");
	load_err("admin:\n  servers: [ \"http://a b\" ]\n", 2, 14, "must be a base URL");
	load_err("admin:\n  servers: [ \"http://a/?x=1\" ]\n", 2, 14, "must be a base URL");
	load_err("admin:\n  servers: [ http://a:1, \"http://A:1/\" ]\n", 2, 26,
	         "admin.servers[1]: duplicate server 'http://a:1'");
	/* credentials in a URL are refused without being echoed */
	struct gw_err err = {0};
	struct cfg *c = NULL;
	write_file("gwsync.yaml", "admin:\n  servers: [ \"http://u:hunter2@a:1\" ]\n");
	ck_assert_int_eq(cfg_load(cfg_path, sections(), &c, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "credentials in the URL are not supported"));
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	/* ... whatever else is wrong with the URL */
	write_file("gwsync.yaml", "admin:\n  servers: [ \"ftp://u:hunter2@a:1\" ]\n");
	ck_assert_int_eq(cfg_load(cfg_path, sections(), &c, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "credentials in the URL are not supported"));
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	write_file("gwsync.yaml", "admin:\n  servers: u:hunter2@a:1\n");
	ck_assert_int_eq(cfg_load(cfg_path, sections(), &c, &err), -1);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	/* a scheme missing its colon: no "://", and still nothing quoted */
	write_file("gwsync.yaml", "admin:\n  servers: [ \"http//u:hunter2@a:1/x\" ]\n");
	ck_assert_int_eq(cfg_load(cfg_path, sections(), &c, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "credentials in the URL are not supported"));
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
}
END_TEST

START_TEST(groups_refused)
{
	load_err(MINIMAL "  groups: [ PLUGIN, SELECTORS ]\n", 3, 21,
	         "admin.groups[1]: unknown group 'SELECTORS' (did you mean 'SELECTOR'?)");
	load_err(MINIMAL "  groups: [ rule ]\n", 3, 13,
	         "unknown group 'rule' (did you mean 'RULE'?)");
	load_err(MINIMAL "  groups: [ FOO ]\n", 3, 13,
	         "unknown group 'FOO' (known groups: PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA, "
	         "PROXY_SELECTOR, DISCOVER_UPSTREAM, AI_PROXY_API_KEY)");
	load_err(MINIMAL "  groups: [ RULE, PLUGIN, RULE ]\n", 3, 27,
	         "admin.groups[2]: duplicate group 'RULE'");
	load_err(MINIMAL "  groups: RULE, RULE\n", 3, 11, "admin.groups: duplicate group 'RULE'");
	load_err(MINIMAL "  groups: []\n", 3, 11, "admin.groups: the list is empty");
	/* all eight, for a ShenYu 2.7 admin */
	struct cfg *c = load_ok(MINIMAL "  groups: [ PLUGIN, SELECTOR, RULE, APP_AUTH, META_DATA,\n"
	                                "            PROXY_SELECTOR, DISCOVER_UPSTREAM,\n"
	                                "            AI_PROXY_API_KEY ]\n");
	ck_assert_uint_eq(c->n_groups, GW_GROUP_COUNT);
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		ck_assert_int_eq(c->groups[g], g);
	cfg_free(c);
}
END_TEST

START_TEST(subscribers_refused)
{
	load_err(MINIMAL "subscribers:\n"
	                 "  - name: files\n"
	                 "    library: file\n"
	                 "  - name: log\n"
	                 "    library: log\n"
	                 "  - name: files\n"
	                 "    library: log\n",
	         8, 11, "subscribers[2].name: duplicate subscriber name 'files' (first at line 4)");
	load_err(MINIMAL "subscribers:\n  - library: file\n", 4, 5,
	         "subscribers[0]: 'name' is required");
	load_err(MINIMAL "subscribers:\n  - name: x\n", 4, 5,
	         "subscribers[0]: 'library' is required");
	load_err(MINIMAL "subscribers:\n  - name: x\n    library: \"\"\n", 5, 14,
	         "subscribers[0].library: must not be empty");
	load_err(MINIMAL "subscribers:\n  - name: \"my files\"\n    library: file\n", 4, 11,
	         "subscribers[0].name: 'my files' is not a valid name");
}
END_TEST

START_TEST(missing_variables)
{
	load_err(MINIMAL "  username: admin\n  password: ${GWSYNC_TEST_UNSET}\n", 4, 13,
	         "admin.password: environment variable 'GWSYNC_TEST_UNSET' is not set");
	/* inside a plugin's config too */
	load_err(MINIMAL "subscribers:\n"
	                 "  - name: a\n"
	                 "    library: file\n"
	                 "    config:\n"
	                 "      dir: \"${GWSYNC_TEST_UNSET}/gateway\"\n",
	         7, 12,
	         "subscribers[0].config.dir: environment variable 'GWSYNC_TEST_UNSET' is not set");
	load_err(MINIMAL "state_dir: ${GWSYNC_TEST_UNSET\n", 3, 12, "state_dir: unterminated");
	/* keys are not expanded, and a default makes an unset variable fine */
	load_err(MINIMAL "${GWSYNC_TEST_UNSET}: 1\n", 3, 1, "unknown key '${GWSYNC_TEST_UNSET}'");
	struct cfg *c = load_ok(MINIMAL "state_dir: ${GWSYNC_TEST_UNSET:-/tmp/gw}\n"
	                                "gateway: { port: \"${GWSYNC_TEST_UNSET:-9195}\" }\n");
	ck_assert_str_eq(c->state_dir, "/tmp/gw");
	ck_assert_int_eq(c->gateway_port, 9195);
	cfg_free(c);
}
END_TEST

START_TEST(listen_and_tls_refused)
{
	load_err(MINIMAL "status: { listen: 9196 }\n", 3, 19,
	         "status.listen: expected HOST:PORT such as 127.0.0.1:9196");
	load_err(MINIMAL "status: { listen: \"localhost:0\" }\n", 3, 19, "expected HOST:PORT");
	load_err(MINIMAL "status: { listen: \"::1:9196\" }\n", 3, 19, "expected HOST:PORT");
	load_err(MINIMAL "status: { listen: \"localhost:+80\" }\n", 3, 19, "expected HOST:PORT");
	struct cfg *c = load_ok(MINIMAL "status: { listen: \"localhost:9196\" }\n");
	ck_assert_str_eq(c->status_listen, "localhost:9196");
	cfg_free(c);

	char yaml[1024], missing[600];
	snprintf(missing, sizeof missing, "%s/ca.pem", tmpdir);
	snprintf(yaml, sizeof yaml, MINIMAL "  tls: { ca_file: %s }\n", missing);
	load_err(yaml, 3, 19, "admin.tls.ca_file: cannot read");
	const char *crt = write_file("c.pem", "x");
	snprintf(yaml, sizeof yaml, MINIMAL "  tls:\n    cert_file: %s\n", crt);
	load_err(yaml, 4, 16, "admin.tls.cert_file: cert_file and key_file go together");
}
END_TEST

START_TEST(yaml_refusals)
{
	load_err(MINIMAL "admin:\n  servers: [ \"http://b\" ]\n", 3, 1,
	         "duplicate key 'admin' (first at line 1)");
	load_err("admin:\n  servers: [ \"http://a\"\n", 3, 1, "YAML syntax error");
	load_err("admin:\n\tservers: [ \"http://a\" ]\n", 2, 1,
	         "YAML syntax error: found character that cannot start any token while scanning "
	         "for the next token (started at line 2) (YAML does not allow tabs for "
	         "indentation: use spaces)");
	load_err("admin:\n  servers: &s [ \"http://a\" ]\n", 2, 12,
	         "YAML anchors (&s) are not supported");
	load_err("x: &a 1\nadmin:\n  servers: *a\n", 1, 4, "YAML anchors (&a) are not supported");
	load_err("admin:\n  servers: !!set [ \"http://a\" ]\n", 2, 12, "YAML tags");
	load_err(MINIMAL "---\nadmin: {}\n", 3, 1, "only one YAML document is allowed");
	load_err("admin:\n  ? [ a ]\n  : b\n", 2, 5, "a map key must be a plain value");
	load_err("admin:\n  servers: [ \"http://a\\0b\" ]\n", 2, 14, "NUL characters");
	/* nesting bomb */
	char deep[400] = "";
	for (int i = 0; i < 100; i++)
		strcat(deep, "[");
	load_err(deep, 1, 65, "nesting deeper than 64 levels");
	/* !!str makes a value text, like quotes */
	struct cfg *c = load_ok(MINIMAL "state_dir: !!str null\n");
	ck_assert_str_eq(c->state_dir, "null");
	cfg_free(c);
}
END_TEST

START_TEST(unreadable_config)
{
	struct gw_err err = {0};
	struct cfg *c = NULL;
	char path[600];
	snprintf(path, sizeof path, "%s/absent.yaml", tmpdir);
	ck_assert_int_eq(cfg_load(path, sections(), &c, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, path));
	ck_assert_ptr_nonnull(strstr(err.msg, "No such file"));
}
END_TEST

START_TEST(parse_from_memory)
{
	struct gw_err err = {0};
	struct cfg *c = NULL;
	const char *text = MINIMAL "log: { level: warn }\n";
	ck_assert_int_eq(cfg_parse("inline.yaml", text, strlen(text), sections(), &c, &err), 0);
	ck_assert_int_eq(c->log_level, GW_LOG_WARN);
	ck_assert_str_eq(c->path, "inline.yaml");
	cfg_free(c);
	const char *bad = MINIMAL "log: { level: loud }\n";
	ck_assert_int_eq(cfg_parse("inline.yaml", bad, strlen(bad), sections(), &c, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "inline.yaml:3:15: log.level"));
}
END_TEST

START_TEST(group_names)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		ck_assert_int_eq(cfg_group_parse(gw_group_name((enum gw_group)g)), g);
	ck_assert_int_eq(cfg_group_parse("META_DATA"), GW_GROUP_META_DATA);
	ck_assert_int_eq(cfg_group_parse("meta_data"), -1);
	ck_assert_int_eq(cfg_group_parse(""), -1);
	ck_assert_int_eq(cfg_group_parse(NULL), -1);
}
END_TEST

/* ---------------------------------------------------------------- ytree */

START_TEST(ytree_nodes)
{
	struct gw_err err = {0};
	struct ynode *t;
	const char *text = "a: null\n"
	                   "b: \"null\"\n"
	                   "c: ~\n"
	                   "d:\n"
	                   "e: ''\n"
	                   "f: |\n"
	                   "  block\n"
	                   "g: [ 1, two, { h: 3 } ]\n"
	                   "mode: 0640\n";
	ck_assert_int_eq(ytree_parse("t.yaml", text, strlen(text), &t, &err), 0);
	ck_assert_int_eq(t->type, YNODE_MAP);
	ck_assert_uint_eq(t->n, 8);
	const char *order[] = {"a", "b", "c", "d", "e", "f", "g", "mode"};
	for (size_t i = 0; i < 8; i++)
		ck_assert_str_eq(t->keys[i]->text, order[i]);
	ck_assert_int_eq(ytree_get(t, "a")->null, 1);
	ck_assert_int_eq(ytree_get(t, "b")->null, 0);
	ck_assert_str_eq(ytree_get(t, "b")->text, "null");
	ck_assert_int_eq(ytree_get(t, "b")->plain, 0);
	ck_assert_int_eq(ytree_get(t, "c")->null, 1);
	ck_assert_int_eq(ytree_get(t, "d")->null, 1);
	ck_assert_int_eq(ytree_get(t, "e")->null, 0); /* quoted empty is an empty string */
	ck_assert_str_eq(ytree_get(t, "f")->text, "block\n");
	ck_assert_str_eq(ytree_get(t, "mode")->text, "0640"); /* text, not 416 */
	const struct ynode *g = ytree_get(t, "g");
	ck_assert_int_eq(g->type, YNODE_SEQ);
	ck_assert_uint_eq(g->n, 3);
	ck_assert_int_eq(g->line, 8);
	ck_assert_int_eq(g->col, 4);
	ck_assert_int_eq(g->items[1]->col, 9);
	ck_assert_str_eq(ytree_get(g->items[2], "h")->text, "3");
	ck_assert_str_eq(g->items[2]->file, "t.yaml");
	ck_assert_ptr_null(ytree_get(t, "zz"));
	ck_assert_ptr_null(ytree_get(g, "h")); /* not a map */
	ck_assert_str_eq(ytree_type_name(g), "a list");
	ck_assert_str_eq(ytree_type_name(t), "a map");
	ck_assert_str_eq(ytree_type_name(ytree_get(t, "a")), "null");
	ytree_free(t);

	ck_assert_int_eq(ytree_parse("e.yaml", "", 0, &t, &err), 0);
	ck_assert_int_eq(t->type, YNODE_MAP);
	ck_assert_uint_eq(t->n, 0);
	ytree_free(t);
}
END_TEST

/* ---------------------------------------------------------------- plugin config getters */

struct fake_host {
	struct gw_host host;
	char last[1024];
	int n_logs;
};

static void fake_log(const struct gw_host *host, enum gw_log_level level, const char *fmt, ...)
{
	struct fake_host *fh = (struct fake_host *)host;
	ck_assert_int_eq(level, GW_LOG_ERROR);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fh->last, sizeof fh->last, fmt, ap);
	va_end(ap);
	fh->n_logs++;
}

START_TEST(plugin_getters)
{
	struct cfg *c = load_ok(MINIMAL "subscribers:\n"
	                                "  - name: files\n"
	                                "    library: file\n"
	                                "    config:\n"
	                                "      dir: /var/lib/gateway\n"
	                                "      debounce: 200ms\n"
	                                "      mode: \"0640\"\n"
	                                "      count: 42\n"
	                                "      fsync: off\n"
	                                "      nothing: ~\n"
	                                "      quoted_null: \"null\"\n"
	                                "      list: [ a ]\n"
	                                "      bad_debounce: 200\n"
	                                "      bad_mode: \"0999\"\n"
	                                "      bad_count: 4x\n"
	                                "      bad_bool: maybe\n"
	                                "  - name: empty\n"
	                                "    library: log\n");
	struct fake_host fh = {
	    .host = {.abi = GWSYNC_SUBSCRIBER_ABI, .instance = "files", .log = fake_log}};
	const struct gw_host *h = &fh.host;
	const struct gw_config *conf = plugin_config_of(c->subscribers[0].config);

	const char *s = "default";
	int64_t i = -1;
	int b = -1;
	unsigned m = 0;
	ck_assert_int_eq(plugin_config_string(h, NULL, conf, "dir", &s), GW_CONFIG_OK);
	ck_assert_str_eq(s, "/var/lib/gateway");
	ck_assert_int_eq(plugin_config_duration_ms(h, NULL, conf, "debounce", &i), GW_CONFIG_OK);
	ck_assert_int_eq(i, 200);
	ck_assert_int_eq(plugin_config_mode(h, NULL, conf, "mode", &m), GW_CONFIG_OK);
	ck_assert_uint_eq(m, 0640);
	ck_assert_int_eq(plugin_config_int(h, NULL, conf, "count", &i), GW_CONFIG_OK);
	ck_assert_int_eq(i, 42);
	ck_assert_int_eq(plugin_config_bool(h, NULL, conf, "fsync", &b), GW_CONFIG_OK);
	ck_assert_int_eq(b, 0);
	ck_assert_int_eq(plugin_config_string(h, NULL, conf, "count", &s), GW_CONFIG_OK);
	ck_assert_str_eq(s, "42");
	ck_assert_int_eq(plugin_config_string(h, NULL, conf, "quoted_null", &s), GW_CONFIG_OK);
	ck_assert_str_eq(s, "null");
	ck_assert_int_eq(fh.n_logs, 0);

	/* absent and null leave *out alone, quietly */
	s = "default";
	i = 7;
	ck_assert_int_eq(plugin_config_string(h, NULL, conf, "absent", &s), GW_CONFIG_ABSENT);
	ck_assert_int_eq(plugin_config_string(h, NULL, conf, "nothing", &s), GW_CONFIG_ABSENT);
	ck_assert_int_eq(plugin_config_duration_ms(h, NULL, conf, "nothing", &i), GW_CONFIG_ABSENT);
	ck_assert_int_eq(plugin_config_int(h, NULL, NULL, "count", &i), GW_CONFIG_ABSENT);
	ck_assert_str_eq(s, "default");
	ck_assert_int_eq(i, 7);
	const struct gw_config *empty = plugin_config_of(c->subscribers[1].config);
	ck_assert_int_eq(plugin_config_bool(h, NULL, empty, "fsync", &b), GW_CONFIG_ABSENT);
	ck_assert_int_eq(fh.n_logs, 0);

	/* invalid: logged with position, instance, key, and the value as written */
	char want[1200];
	ck_assert_int_eq(plugin_config_duration_ms(h, NULL, conf, "bad_debounce", &i),
	                 GW_CONFIG_INVALID);
	ck_assert_int_eq(i, 7);
	snprintf(want, sizeof want,
	         "%s:15:21: subscriber 'files' config.bad_debounce: expected a duration like "
	         "200ms, got '200'",
	         cfg_path);
	ck_assert_str_eq(fh.last, want);
	ck_assert_int_eq(plugin_config_mode(h, NULL, conf, "bad_mode", &m), GW_CONFIG_INVALID);
	ck_assert_ptr_nonnull(strstr(fh.last,
	                             ":16:17: subscriber 'files' config.bad_mode: "
	                             "expected an octal file mode like \"0640\", got '0999'"));
	ck_assert_int_eq(plugin_config_int(h, NULL, conf, "bad_count", &i), GW_CONFIG_INVALID);
	ck_assert_ptr_nonnull(
	    strstr(fh.last, "config.bad_count: expected a whole number, got '4x'"));
	ck_assert_int_eq(plugin_config_bool(h, NULL, conf, "bad_bool", &b), GW_CONFIG_INVALID);
	ck_assert_ptr_nonnull(strstr(
	    fh.last, "config.bad_bool: expected true or false (also yes/no, on/off), got 'maybe'"));
	ck_assert_int_eq(plugin_config_string(h, NULL, conf, "list", &s), GW_CONFIG_INVALID);
	ck_assert_ptr_nonnull(strstr(fh.last, ":14:13: subscriber 'files' config.list: expected a "
	                                      "string, got a list"));
	ck_assert_int_eq(fh.n_logs, 5);
	ck_assert_str_eq(s, "default");
	ck_assert_int_eq(b, 0);
	ck_assert_uint_eq(m, 0640);

	/* a host without a log function is tolerated */
	struct gw_host quiet = {.instance = "q"};
	ck_assert_int_eq(plugin_config_int(&quiet, NULL, conf, "bad_count", &i), GW_CONFIG_INVALID);
	cfg_free(c);
}
END_TEST

/* ---------------------------------------------------------------- WebSocket (issue 11) */

#define WS_MINIMAL "admin:\n  servers: [ \"ws://127.0.0.1:9095/websocket\" ]\n"

/* The registry is the one list of sources: every type answers what main and /status ask of
 * it, and every key a source declares in its folder says what it is for, so --check's
 * messages and the man page test have a documented key to name. */
START_TEST(every_source_type_answers_main_and_documents_its_keys)
{
	size_t n = 0, sections = 0;
	for (size_t i = 0; source_types[i]; i++, n++) {
		const struct source_ops *t = source_types[i];
		ck_assert_ptr_nonnull(t->type);
		ck_assert_ptr_nonnull(t->selects);
		ck_assert_ptr_nonnull(t->summary);
		ck_assert_ptr_nonnull(t->running);
		ck_assert_ptr_nonnull(t->conns);
		ck_assert_ptr_nonnull(t->conn_name);
		ck_assert_ptr_eq(source_find(t->type), t);
		if (!t->config)
			continue;
		ck_assert_ptr_eq(source_config_section(sections++), t->config);
		for (const struct key *k = t->config->keys; k->name; k++) {
			ck_assert_msg(k->help && *k->help, "%s.%s: no documentation",
			              t->config->name, k->name);
			ck_assert_ptr_nonnull(k->load);
		}
	}
	ck_assert_uint_ge(n, 4); /* a new source adds itself; these four stay */
	ck_assert_ptr_null(source_config_section(sections));
	/* exactly one type takes each source section (a new type's own tests try its own) */
	const char *yaml[] = {MINIMAL, "admin:\n  servers: [ \"ws://a:9095/websocket\" ]\n",
	                      "zookeeper:\n  servers: [ \"z:2181\" ]\n",
	                      "etcd:\n  endpoints: [ \"http://e:2379\" ]\n"};
	const char *want[] = {"http", "websocket", "zookeeper", "etcd"};
	for (size_t y = 0; y < 4; y++) {
		struct cfg *c = load_ok(yaml[y]);
		size_t taken = 0;
		for (size_t i = 0; source_types[i]; i++)
			taken += source_types[i]->selects(c) ? 1 : 0;
		ck_assert_uint_eq(taken, 1);
		ck_assert_str_eq(source_select(c)->type, want[y]);
		cfg_free(c);
	}
}
END_TEST

START_TEST(websocket_keys)
{
	/* defaults: an http agent is not a WebSocket one; a ws agent has the defaults */
	struct cfg *c = load_ok(MINIMAL);
	ck_assert_int_eq(ADMIN(c)->websocket, 0);
	ck_assert_ptr_eq(source_select(c), source_find("http"));
	ck_assert_int_eq(ws_config(c)->ping_interval_ms, 10000);
	ck_assert_int_eq(ws_config(c)->resync_interval_ms, 600000);
	ck_assert_ptr_null(ws_config(c)->token);
	ck_assert_ptr_null(ws_config(c)->origin);
	cfg_free(c);
	c = load_ok(WS_MINIMAL);
	ck_assert_int_eq(ADMIN(c)->websocket, 1);
	ck_assert_ptr_eq(source_select(c), source_find("websocket"));
	ck_assert_str_eq(ADMIN(c)->servers[0], "ws://127.0.0.1:9095/websocket");
	cfg_free(c);
	/* every key */
	setenv("GWSYNC_TEST_WS_TOKEN", "tok-from-env", 1);
	c = load_ok("admin:\n"
	            "  servers: [ \"wss://a:9095/websocket\", \"WSS://b:9095/websocket/\" ]\n"
	            "  namespace: ns-1\n"
	            "  websocket:\n"
	            "    origin: ws://gw:9195\n"
	            "    token: ${GWSYNC_TEST_WS_TOKEN}\n"
	            "    ping_interval: 250ms\n"
	            "    resync_interval: 0\n"
	            "gateway: { port: 9195 }\n");
	ck_assert_int_eq(ADMIN(c)->websocket, 1);
	ck_assert_uint_eq(ADMIN(c)->n_servers, 2);
	ck_assert_str_eq(ADMIN(c)->servers[1], "WSS://b:9095/websocket");
	ck_assert_str_eq(ws_config(c)->origin, "ws://gw:9195");
	ck_assert_str_eq(ws_config(c)->token, "tok-from-env");
	ck_assert_int_eq(ws_config(c)->ping_interval_ms, 250);
	ck_assert_int_eq(ws_config(c)->resync_interval_ms, 0);
	ck_assert_str_eq(c->namespace_id, "ns-1");
	ck_assert_int_eq(c->gateway_port, 9195);
	cfg_free(c);
	unsetenv("GWSYNC_TEST_WS_TOKEN");
	/* token_file, like password_file: one trailing newline dropped */
	const char *tf = write_file("token", "s3cret-token\n");
	char yaml[1024];
	snprintf(yaml, sizeof yaml, WS_MINIMAL "  websocket: { token_file: %s }\n", tf);
	c = load_ok(yaml);
	ck_assert_str_eq(ws_config(c)->token, "s3cret-token");
	ck_assert_str_eq(ws_config(c)->token_file, tf);
	cfg_free(c);
	/* an empty token is no token */
	c = load_ok(WS_MINIMAL "  websocket: { token: \"\" }\n");
	ck_assert_ptr_null(ws_config(c)->token);
	cfg_free(c);
}
END_TEST

START_TEST(websocket_refusals)
{
	/* one protocol family per agent, naming the line of each */
	load_err("admin:\n  servers:\n    - ws://a/websocket\n    - http://b:9095\n", 4, 7,
	         "admin.servers[1]: 'http://b:9095' is an HTTP URL but the first server (line "
	         "3) is a WebSocket one");
	load_err("admin:\n  servers: [ \"https://a\", \"wss://b/websocket\" ]\n", 2, 27,
	         "'wss://b/websocket' is a WebSocket URL but the first server (line 2) is an "
	         "HTTP one");
	load_err(MINIMAL "  websocket: { origin: x }\n", 3, 14,
	         "admin.websocket: applies to ws:// or wss:// servers only");
	load_err(WS_MINIMAL "  websocket: { pingInterval: 5s }\n", 3, 16,
	         "did you mean 'ping_interval'");
	load_err(WS_MINIMAL "  websocket: { ping_interval: 10ms }\n", 3, 31,
	         "admin.websocket.ping_interval: must be at least 100ms");
	load_err(WS_MINIMAL "  websocket: { resync_interval: 10 }\n", 3, 33, "expected a duration");
	load_err(WS_MINIMAL "  websocket: { resync_interval: 500ms }\n", 3, 14,
	         "admin.websocket.resync_interval: must be 0 (off) or at least 1s");
	load_err(WS_MINIMAL "  websocket: { origin: \"\" }\n", 3, 24, "must not be empty");
	/* the token is never echoed */
	const char *tf = write_file("token", "x\n");
	char yaml[1024];
	snprintf(yaml, sizeof yaml,
	         WS_MINIMAL "  websocket:\n    token: hunter2-tok\n    token_file: %s\n", tf);
	load_err(yaml, 5, 17,
	         "admin.websocket.token_file: cannot be used together with "
	         "admin.websocket.token (line 4)");
	struct gw_err err = {0};
	struct cfg *c = NULL;
	write_file("gwsync.yaml", yaml);
	ck_assert_int_eq(cfg_load(cfg_path, sections(), &c, &err), -1);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	write_file("gwsync.yaml", WS_MINIMAL "  websocket: { token: [ hunter2-tok ] }\n");
	ck_assert_int_eq(cfg_load(cfg_path, sections(), &c, &err), -1);
	ck_assert_ptr_null(strstr(err.msg, "hunter2"));
	snprintf(yaml, sizeof yaml, WS_MINIMAL "  websocket: { token_file: %s/absent }\n", tmpdir);
	load_err(yaml, 3, 28, "admin.websocket.token_file: cannot read");
}
END_TEST

/* subscribers[].groups: the groups one subscriber takes, each one the agent syncs */
START_TEST(a_subscriber_takes_the_groups_it_names_each_one_synced)
{
	struct cfg *c = load_ok(MINIMAL "  groups: [PLUGIN, SELECTOR, RULE, APP_AUTH]\n"
	                                "subscribers:\n"
	                                "  - name: acl\n"
	                                "    library: log\n"
	                                "    groups: [APP_AUTH]\n"
	                                "  - name: all\n"
	                                "    library: log\n"
	                                "  - name: two\n"
	                                "    library: log\n"
	                                "    groups: RULE, SELECTOR\n");
	ck_assert_uint_eq(c->subscribers[0].n_groups, 1);
	ck_assert_int_eq(c->subscribers[0].groups[0], GW_GROUP_APP_AUTH);
	ck_assert_uint_eq(c->subscribers[1].n_groups, 0); /* every synced group */
	ck_assert_uint_eq(c->subscribers[2].n_groups, 2);
	ck_assert_int_eq(c->subscribers[2].groups[0], GW_GROUP_RULE);
	ck_assert_int_eq(c->subscribers[2].groups[1], GW_GROUP_SELECTOR);
	cfg_free(c);
	/* a group not synced: named, with the subscriber, at its `groups:` */
	load_err(MINIMAL "subscribers:\n"
	                 "  - name: acl\n"
	                 "    library: log\n"
	                 "    groups: [APP_AUTH, DISCOVER_UPSTREAM]\n",
	         6, 13,
	         "subscribers[0].groups: subscriber 'acl' takes group DISCOVER_UPSTREAM, which "
	         "this agent does not sync (admin.groups: PLUGIN, SELECTOR, RULE, APP_AUTH, "
	         "META_DATA)");
	load_err(MINIMAL "subscribers:\n"
	                 "  - name: acl\n"
	                 "    library: log\n"
	                 "    groups: [APP_AUHT]\n",
	         6, 14,
	         "subscribers[0].groups[0]: unknown group 'APP_AUHT' (did you mean 'APP_AUTH'?)");
	load_err(MINIMAL "subscribers:\n"
	                 "  - name: acl\n"
	                 "    library: log\n"
	                 "    groups: [RULE, RULE]\n",
	         6, 20, "subscribers[0].groups[1]: duplicate group 'RULE'");
}
END_TEST

/* Indentation slips in words, at the line of the slip (libyaml stops on the line after),
 * a key valid at another level says where it belongs, a bare number for a duration gets
 * its unit suggested (issue 31, item 11). */
START_TEST(yaml_slips_are_told_in_words_where_they_are)
{
	load_err(MINIMAL "log:\n"
	                 "level: info\n"
	                 "  format: text\n",
	         4, 1, "`level` is not indented under `log:` (line 3)");
	load_err(MINIMAL "log:\n"
	                 "  level:info\n"
	                 "  format: text\n",
	         4, 9, "a space is needed after `level:`");
	load_err(MINIMAL "subscribers:\n"
	                 "  - name: files\n"
	                 "    library: file\n"
	                 "    config:\n"
	                 "    dir: /tmp/x\n"
	                 "      mode: \"0640\"\n",
	         7, 5, "`dir` is not indented under `config:` (line 6)");
	load_err(MINIMAL "status:\n"
	                 "listen: \"127.0.0.1:9196\"\n",
	         4, 1, "unknown key 'listen': it belongs under `status:` (status.listen)");
	load_err(MINIMAL "  level: info\n", 3, 3,
	         "unknown key 'level' in admin: it belongs under `log:` (log.level)");
	load_err(MINIMAL "  hold: 30\n", 3, 9,
	         "admin.hold: expected a duration like 200ms, 5s, 2m or 1h (a unit is required), "
	         "got '30' (did you mean '30s'?)");
	/* a misspelt key still gets its closest one */
	load_err(MINIMAL "  read_timout: 90s\n", 3, 3, "did you mean 'read_timeout'");
}
END_TEST

/* admin.websocket.resync_groups: a group's own anti-entropy interval; the full sync (which
 * the admin answers with every group) then runs at the shortest (issue 31, item 9). */
START_TEST(a_group_sets_its_own_anti_entropy_interval)
{
	struct cfg *c = load_ok(WS_MINIMAL "  groups: [RULE, APP_AUTH]\n"
	                                   "  websocket:\n"
	                                   "    resync_groups: { APP_AUTH: 30s }\n");
	ck_assert_int_eq(ws_config(c)->resync_interval_ms, 600000);
	ck_assert_int_eq(ws_config(c)->group_resync_ms[GW_GROUP_APP_AUTH], 30000);
	ck_assert_int_eq(ws_config(c)->sync_every_ms, 30000);
	cfg_free(c);
	/* the default alone: every 10 minutes; resync_interval 0 with a group's: that one */
	c = load_ok(WS_MINIMAL);
	ck_assert_int_eq(ws_config(c)->sync_every_ms, 600000);
	cfg_free(c);
	c = load_ok(WS_MINIMAL "  groups: [APP_AUTH]\n"
	                       "  websocket:\n"
	                       "    resync_interval: 0\n"
	                       "    resync_groups: { APP_AUTH: 1m }\n");
	ck_assert_int_eq(ws_config(c)->sync_every_ms, 60000);
	cfg_free(c);
	load_err(WS_MINIMAL "  groups: [RULE]\n"
	                    "  websocket:\n"
	                    "    resync_groups: { APP_AUTH: 30s }\n",
	         5, 20, "admin.websocket.resync_groups: APP_AUTH is not among the groups");
	load_err(WS_MINIMAL "  websocket:\n"
	                    "    resync_groups: { APP_AUTH: 30 }\n",
	         4, 32, "(did you mean '30s'?)");
	load_err(WS_MINIMAL "  websocket:\n"
	                    "    resync_groups: { APP_AUTH: 500ms }\n",
	         4, 32, "must be at least 1s");
	load_err(WS_MINIMAL "  websocket:\n"
	                    "    resync_groups: { APP_AUHT: 30s }\n",
	         4, 22, "unknown group 'APP_AUHT'");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config");
	TCase *good = tcase_create("good");
	TCase *bad = tcase_create("refusals");
	TCase *parts = tcase_create("parts");
	TCase *all[] = {good, bad, parts};
	for (size_t i = 0; i < 3; i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(good, minimal_defaults);
	tcase_add_test(good, every_key);
	tcase_add_test(good, issue_example);
	tcase_add_test(good, sample_file);
	tcase_add_test(good, servers_as_string);
	tcase_add_test(good, nulls_keep_defaults);
	tcase_add_test(good, password_file);
	tcase_add_test(bad, password_file_refusals);
	tcase_add_test(bad, unknown_keys);
	tcase_add_test(bad, wrong_types);
	tcase_add_test(bad, bad_durations);
	tcase_add_test(bad, read_timeout_above_hold);
	tcase_add_test(bad, servers_refused);
	tcase_add_test(bad, zookeeper_section_loads_with_defaults);
	tcase_add_test(bad, etcd_section_loads);
	tcase_add_test(bad, source_sections_refused);
	tcase_add_test(bad, groups_refused);
	tcase_add_test(bad, subscribers_refused);
	tcase_add_test(bad, missing_variables);
	tcase_add_test(bad, listen_and_tls_refused);
	tcase_add_test(bad, yaml_refusals);
	tcase_add_test(good, websocket_keys);
	tcase_add_test(good, every_source_type_answers_main_and_documents_its_keys);
	tcase_add_test(bad, websocket_refusals);
	tcase_add_test(bad, unreadable_config);
	tcase_add_test(parts, parse_from_memory);
	tcase_add_test(parts, group_names);
	tcase_add_test(parts, ytree_nodes);
	tcase_add_test(parts, plugin_getters);
	tcase_add_test(parts, a_subscriber_takes_the_groups_it_names_each_one_synced);
	tcase_add_test(parts, yaml_slips_are_told_in_words_where_they_are);
	tcase_add_test(parts, a_group_sets_its_own_anti_entropy_interval);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
