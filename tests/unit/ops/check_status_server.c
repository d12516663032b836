/*
 * The status endpoint over real HTTP (libcurl and raw sockets against the libwebsockets
 * server) on top of a real store, dispatcher, recording subscriber and pause switch, without
 * pollers (their servers show as "starting"): routes and methods, /healthz flipping to 200
 * when data arrives, /status and /metrics content, pause and resume over HTTP and through
 * the `gwsyncd --pause` client, binding exactly the configured address, the client's errors
 * when no agent answers, and the limits of http_limits.h: idle connections from one address
 * close their own oldest, silent and slow connections are closed after the header timeout,
 * request heads and bodies are bounded, and running out of descriptors is no busy loop.
 */
#include <arpa/inet.h>
#include <check.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "deliver/dispatch.h"
#include "ops/http_limits.h"
#include "ops/listen_addr.h"
#include "ops/metrics.h"
#include "ops/pause.h"
#include "ops/status_client.h"
#include "ops/status_routes.h"
#include "ops/status_server.h"
#include "source/admin/config.h"
#include "source/source.h"
#include "store/store.h"
#include "subtest.h"
#include "model/groups.h"

/* status.token of the endpoint under test: POSTs carry it */
#define TOKEN "unit-test-token-0123456789"
static char *dir;
static char out[4300], fail_flag[4300], listen_addr[64], base[96];
static struct gw_log *lg;
static struct tcfg t;
static struct subscribers *subs;
static struct store *st;
static struct dispatcher *disp;
static struct pause_switch *ps;
static struct status_sources src;
static struct status_server *srv;
static char *servers[] = {"http://127.0.0.1:1"};
static struct admin_config admin;

/* A TCP port nobody listens on right now (bound to 0, then released). */
static int free_port(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t len;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof *a;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *a;
	}
	if (bind(fd, (struct sockaddr *)&ss, len) != 0) {
		close(fd);
		return -1;
	}
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	int port = family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
	                              : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	close(fd);
	return port;
}

static void setup(void)
{
	dir = test_tmpdir();
	snprintf(out, sizeof out, "%s/rec.txt", dir);
	snprintf(fail_flag, sizeof fail_flag, "%s/fail-now", dir);
	lg = test_log(NULL);
	tcfg_init(&t);
	char yaml[9000];
	snprintf(yaml, sizeof yaml, "out: %s\nfail_if_exists: %s\n", out, fail_flag);
	tcfg_add(&t, "rec", "recorder", yaml);
	int port = free_port(AF_INET);
	snprintf(listen_addr, sizeof listen_addr, "127.0.0.1:%d", port);
	snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
	t.cfg.status_listen = listen_addr;
	t.cfg.status_token = TOKEN;
	t.cfg.state_dir = dir;
	admin.servers = servers; /* admin:'s settings (source/admin/config.h) */
	admin.n_servers = 1;
	t.cfg.sections[t.cfg.n_sections] = &admin_config_section;
	t.cfg.settings[t.cfg.n_sections++] = &admin;
	struct gw_err err = {0};
	ck_assert_msg(subscribers_load(&t.cfg, lg, &subs, &err) == 0, "%s", err.msg);
	st = store_new();
	ck_assert_msg(pause_open(&ps, dir, lg, &err) == 0, "%s", err.msg);
	ck_assert_msg(dispatcher_start(&disp, subs, st, &t.cfg, lg, &err) == 0, "%s", err.msg);
	pause_attach(ps, disp);
	memset(&src, 0, sizeof src);
	src.cfg = &t.cfg;
	src.store = st;
	src.dispatcher = disp;
	src.pause = ps;
	src.log = lg;
	src.source_ops = source_find("http"); /* admin:'s servers, as /status lists them */
	src.started_wall_ms = gw_wall_ms();
	ck_assert_msg(status_server_start(&srv, &src, &err) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(srv);
	ck_assert_str_eq(status_server_address(srv), listen_addr);
}

static void teardown(void)
{
	status_server_free(srv);
	dispatcher_free(disp);
	pause_close(ps);
	subscribers_free(subs);
	store_free(st);
	t.cfg.status_listen = NULL;
	t.cfg.status_token = NULL;
	t.cfg.state_dir = NULL;
	t.cfg.n_sections = 0;
	tcfg_free(&t);
	gw_log_close(lg);
	rm_rf(dir);
	free(dir);
}

/* ---------------------------------------------------------------- a tiny HTTP client */

struct resp {
	long status;
	char body[1 << 17];
	size_t len;
	char content_type[128];
	char allow[64];
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = size * n;
	ck_assert_uint_lt(r->len + len, sizeof r->body);
	memcpy(r->body + r->len, data, len);
	r->len += len;
	r->body[r->len] = '\0';
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = size * n;
	if (len > 13 && strncasecmp(data, "Content-Type:", 13) == 0)
		sscanf(data + 13, " %127[^\r\n]", r->content_type);
	if (len > 6 && strncasecmp(data, "Allow:", 6) == 0)
		sscanf(data + 6, " %63[^\r\n]", r->allow);
	return len;
}

/* method on base+path; extra_header may be NULL. Returns 0 or the curl error. */
static int http_at(const char *url_base, const char *method, const char *path,
                   const char *extra_header, struct resp *r)
{
	memset(r, 0, sizeof *r);
	char url[256];
	snprintf(url, sizeof url, "%s%s", url_base, path);
	CURL *h = curl_easy_init();
	struct curl_slist *hdrs = extra_header ? curl_slist_append(NULL, extra_header) : NULL;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "x=1");
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	CURLcode cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	return (int)cc;
}

/* A request; POSTs carry the configured bearer token (status.token). */
static void http(const char *method, const char *path, struct resp *r)
{
	int post = strcmp(method, "POST") == 0;
	int cc = http_at(base, method, path, post ? "Authorization: Bearer " TOKEN : NULL, r);
	ck_assert_msg(cc == 0, "%s %s: %s", method, path, curl_easy_strerror((CURLcode)cc));
}

static json_t *get_json(const char *path)
{
	static struct resp r;
	http("GET", path, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.content_type, "application/json");
	json_error_t je;
	json_t *doc = json_loads(r.body, 0, &je);
	ck_assert_msg(doc != NULL, "%s: %s", je.text, r.body);
	return doc;
}

static void hold_all(const char *md5_prefix, int64_t lmt)
{
	const char *kv[] = {"k1", "{\"id\":\"k1\"}", NULL};
	for (size_t k = 0; k < t.cfg.n_groups; k++) {
		char md5[64];
		snprintf(md5, sizeof md5, "%s-%s", md5_prefix, gw_group_name(t.cfg.groups[k]));
		struct group_data *gd = gd_make(t.cfg.groups[k], md5, lmt, kv);
		ck_assert_int_eq(store_swap(st, gd, ingest_accept_polled, NULL), INGEST_ACCEPTED);
		group_data_unref(gd);
	}
}

/* Poll /status until subscriber 0's RULE md5 is `md5` (or it has `failures` failures). */
static int wait_status(const char *what, const char *want, int64_t timeout_ms)
{
	int64_t until = gw_mono_ms() + timeout_ms;
	for (;;) {
		json_t *doc = get_json("/status");
		json_t *s0 = json_array_get(json_object_get(doc, "subscribers"), 0);
		json_t *rule = json_object_get(json_object_get(s0, "groups"), "RULE");
		json_t *v = json_object_get(rule, what);
		char got[128] = "";
		if (json_is_string(v))
			snprintf(got, sizeof got, "%s", json_string_value(v));
		else if (json_is_integer(v))
			snprintf(got, sizeof got, "%lld", (long long)json_integer_value(v));
		json_decref(doc);
		if (strcmp(got, want) == 0)
			return 1;
		if (gw_mono_ms() > until)
			return 0;
		sleep_ms(20);
	}
}

/* ---------------------------------------------------------------- raw connections */

/* A connected socket to the endpoint from source address `from` ("127.0.0.2"). */
static int connect_from(const char *from)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, from, &sa.sin_addr), 1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	sa.sin_port = htons((uint16_t)atoi(strrchr(listen_addr, ':') + 1));
	ck_assert_int_eq(inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr), 1);
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "connect: %s",
	              strerror(errno));
	return fd;
}

/* Milliseconds until the server closes fd (EOF or reset), reading and dropping what it
 * sends; -1 if still open after timeout_ms. Appends what was read to got (if not NULL). */
static int64_t wait_closed(int fd, int64_t timeout_ms, char *got, size_t cap)
{
	int64_t t0 = gw_mono_ms();
	size_t len = got ? strlen(got) : 0;
	for (;;) {
		int64_t left = t0 + timeout_ms - gw_mono_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		char buf[4096];
		ssize_t n = recv(fd, buf, sizeof buf, 0);
		if (n <= 0)
			return gw_mono_ms() - t0;
		if (got && len + 1 < cap) {
			size_t take = (size_t)n < cap - len - 1 ? (size_t)n : cap - len - 1;
			memcpy(got + len, buf, take);
			len += take;
			got[len] = '\0';
		}
	}
}

/* Read until `want` appears in what fd sent (1) or timeout_ms passes (0). */
static int read_until(int fd, const char *want, int64_t timeout_ms, char *got, size_t cap)
{
	int64_t until = gw_mono_ms() + timeout_ms;
	size_t len = 0;
	got[0] = '\0';
	while (!strstr(got, want)) {
		int64_t left = until - gw_mono_ms();
		struct pollfd p = {fd, POLLIN, 0};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return 0;
		ssize_t n = recv(fd, got + len, cap - len - 1, 0);
		if (n <= 0)
			return strstr(got, want) != NULL;
		len += (size_t)n;
		got[len] = '\0';
	}
	return 1;
}

static void send_all(int fd, const char *text, size_t len)
{
	ck_assert_int_eq(send(fd, text, len, MSG_NOSIGNAL), (ssize_t)len);
}

static int find_schedstat(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	ck_assert_ptr_nonnull(d);
	int fd = -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && fd < 0) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof comm, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		if (strcmp(comm, name) == 0) {
			snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
		}
	}
	closedir(d);
	return fd;
}

/* The schedstat file of this process's thread named `name` (the server's "status"), open
 * for cpu_ns(): opened beforehand, since reading it must not need a new descriptor. */
static int thread_schedstat(const char *name)
{
	int fd = -1;
	/* a thread names itself when it first runs: give it a moment */
	for (int tries = 0; fd < 0 && tries < 200; tries++) {
		if (tries)
			sleep_ms(10);
		fd = find_schedstat(name);
	}
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* The CPU time in nanoseconds that a schedstat file says. */
static int64_t cpu_ns(int schedstat)
{
	char buf[128];
	ssize_t n = pread(schedstat, buf, sizeof buf - 1, 0);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

/* ---------------------------------------------------------------- tests */

START_TEST(routes_and_methods)
{
	struct resp r;
	http("GET", "/nope", &r);
	ck_assert_int_eq(r.status, 404);
	http("GET", "/index.html", &r); /* the status page is at / only (issue 24) */
	ck_assert_int_eq(r.status, 404);
	http("POST", "/", &r);
	ck_assert_int_eq(r.status, 405);
	http("GET", "/status/", &r);
	ck_assert_int_eq(r.status, 404);
	http("DELETE", "/nope", &r);
	ck_assert_int_eq(r.status, 404);
	http("POST", "/status", &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(r.allow, "GET, HEAD");
	http("PUT", "/healthz", &r);
	ck_assert_int_eq(r.status, 405);
	http("DELETE", "/metrics", &r);
	ck_assert_int_eq(r.status, 405);
	http("GET", "/sync/pause", &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(r.allow, "POST");
	http("PUT", "/sync/resume", &r);
	ck_assert_int_eq(r.status, 405);
	ck_assert_int_eq(pause_get(ps), 0); /* none of that paused anything */
	http("HEAD", "/healthz", &r);
	ck_assert_int_eq(r.status, 503);
	ck_assert_uint_eq(r.len, 0);
	http("GET", "/metrics?x=1", &r); /* a query string does not change the route */
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.content_type, METRICS_CONTENT_TYPE);
}
END_TEST

START_TEST(healthz_flips_when_data_arrives)
{
	struct resp r;
	http("GET", "/healthz", &r);
	ck_assert_int_eq(r.status, 503);
	ck_assert_ptr_nonnull(strstr(r.body, "no data yet for"));
	ck_assert_ptr_nonnull(strchr(r.body, '\n'));
	ck_assert_ptr_eq(strchr(r.body, '\n'), r.body + r.len - 1); /* one line */
	hold_all("a", 10);
	http("GET", "/healthz", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "ok\n");
	ck_assert_str_eq(r.content_type, "text/plain; charset=utf-8");
}
END_TEST

START_TEST(status_and_metrics_follow_a_failing_subscriber)
{
	json_t *doc = get_json("/status");
	json_t *s0 = json_array_get(json_object_get(doc, "servers"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(s0, "state")), "starting");
	ck_assert(json_is_false(json_object_get(doc, "paused")));
	ck_assert(json_is_null(json_object_get(json_object_get(doc, "groups"), "RULE")));
	json_decref(doc);

	hold_all("a", 10);
	ck_assert(wait_status("md5", "a-RULE", 5000));

	/* the plugin starts failing: /status and /metrics say so */
	FILE *f = fopen(fail_flag, "w");
	fclose(f);
	const char *kv[] = {"k2", "{\"id\":\"k2\"}", NULL};
	struct group_data *gd = gd_make(GW_GROUP_RULE, "b-RULE", 20, kv);
	store_swap(st, gd, ingest_accept_polled, NULL);
	group_data_unref(gd);
	ck_assert(wait_status("failures", "1", 5000));
	doc = get_json("/status");
	json_t *sub = json_array_get(json_object_get(doc, "subscribers"), 0);
	ck_assert(json_is_false(json_object_get(sub, "inStep")));
	ck_assert_ptr_nonnull(json_string_value(json_object_get(sub, "lastError")));
	ck_assert_str_eq(json_string_value(json_object_get(
	                     json_object_get(json_object_get(sub, "groups"), "RULE"), "md5")),
	                 "a-RULE");
	json_decref(doc);
	struct resp r;
	http("GET", "/metrics", &r);
	ck_assert_ptr_nonnull(
	    strstr(r.body, "\ngwsync_subscriber_apply_failures_total{subscriber=\"rec\"} "));
	ck_assert_ptr_null(
	    strstr(r.body, "\ngwsync_subscriber_apply_failures_total{subscriber=\"rec\"} 0\n"));
	ck_assert_ptr_nonnull(
	    strstr(r.body, "\ngwsync_subscriber_groups_behind{subscriber=\"rec\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\ngwsync_group_items{group=\"RULE\"} 1\n"));

	/* and recovers (the dispatcher retries after 1 s) */
	unlink(fail_flag);
	ck_assert(wait_status("md5", "b-RULE", 5000));
	doc = get_json("/status");
	sub = json_array_get(json_object_get(doc, "subscribers"), 0);
	ck_assert(json_is_true(json_object_get(sub, "inStep")));
	json_decref(doc);
}
END_TEST

START_TEST(pause_and_resume_over_http)
{
	hold_all("a", 10);
	ck_assert(wait_status("md5", "a-RULE", 5000));
	struct resp r;
	/* a web page cannot pause the agent */
	ck_assert_int_eq(http_at(base, "POST", "/sync/pause", "Origin: http://evil.example", &r),
	                 0);
	ck_assert_int_eq(r.status, 403);
	ck_assert_int_eq(pause_get(ps), 0);
	/* without the token, or with a wrong one: 401, nothing changes */
	ck_assert_int_eq(http_at(base, "POST", "/sync/pause", NULL, &r), 0);
	ck_assert_int_eq(r.status, 401);
	ck_assert_int_eq(
	    http_at(base, "POST", "/sync/pause", "Authorization: Bearer " TOKEN "x", &r), 0);
	ck_assert_int_eq(r.status, 401);
	ck_assert_int_eq(http_at(base, "POST", "/sync/pause", "Authorization: Basic " TOKEN, &r),
	                 0);
	ck_assert_int_eq(r.status, 401);
	/* no token configured: read-only whatever is sent */
	t.cfg.status_token = NULL;
	ck_assert_int_eq(http_at(base, "POST", "/sync/pause", "Authorization: Bearer " TOKEN, &r),
	                 0);
	ck_assert_int_eq(r.status, 401);
	ck_assert_ptr_nonnull(strstr(r.body, "read-only"));
	t.cfg.status_token = TOKEN;
	ck_assert_int_eq(pause_get(ps), 0);

	http("POST", "/sync/pause", &r);
	ck_assert_int_eq(r.status, 200);
	json_t *doc = json_loads(r.body, 0, NULL);
	ck_assert(json_is_true(json_object_get(doc, "paused")));
	ck_assert(json_is_true(json_object_get(doc, "changed")));
	ck_assert(json_is_true(json_object_get(doc, "persisted")));
	ck_assert_str_eq(json_string_value(json_object_get(doc, "stateFile")), pause_path(ps));
	json_decref(doc);
	struct stat sb;
	ck_assert_int_eq(stat(pause_path(ps), &sb), 0);
	doc = get_json("/status");
	ck_assert(json_is_true(json_object_get(doc, "paused")));
	json_decref(doc);
	http("GET", "/metrics", &r);
	ck_assert_ptr_nonnull(strstr(r.body, "\ngwsync_sync_paused 1\n"));

	/* while paused: stored, not delivered; healthz stays 200 */
	const char *kv[] = {"k2", "{\"id\":\"k2\"}", NULL};
	for (int i = 2; i <= 3; i++) {
		char md5[32];
		snprintf(md5, sizeof md5, "v%d-RULE", i);
		struct group_data *gd = gd_make(GW_GROUP_RULE, md5, 10 + i, kv);
		store_swap(st, gd, ingest_accept_polled, NULL);
		group_data_unref(gd);
	}
	ck_assert(!wait_status("md5", "v3-RULE", 300));
	http("GET", "/healthz", &r);
	ck_assert_int_eq(r.status, 200);

	/* `gwsyncd --pause` against a paused agent, then --resume */
	struct gw_err err = {0};
	ck_assert_msg(status_client_send(&t.cfg, 1, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pause_get(ps), 1);
	ck_assert_msg(status_client_send(&t.cfg, 0, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pause_get(ps), 0);
	ck_assert_int_ne(stat(pause_path(ps), &sb), 0);
	ck_assert(wait_status("md5", "v3-RULE", 5000));
	/* one change from what it had to the newest: v2 never delivered */
	ck_assert_int_eq(count_lines(out, "apply RULE md5=v2-RULE"), 0);
	ck_assert_int_eq(count_lines(out, "apply RULE md5=v3-RULE prev=a-RULE"), 1);
	http("GET", "/metrics", &r);
	ck_assert_ptr_nonnull(strstr(r.body, "\ngwsync_sync_paused 0\n"));
}
END_TEST

START_TEST(binds_only_the_configured_address)
{
	struct resp r;
	/* same port, another loopback address: nobody there */
	char other[96];
	snprintf(other, sizeof other, "http://127.0.0.2:%s", strrchr(listen_addr, ':') + 1);
	ck_assert_int_ne(http_at(other, "GET", "/healthz", NULL, &r), 0);
	/* the address is taken: a second server says so, naming it */
	struct status_server *again = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(status_server_start(&again, &src, &err), -1);
	ck_assert_ptr_null(again);
	ck_assert_ptr_nonnull(strstr(err.msg, listen_addr));

	/* IPv6 loopback, when the machine has it: reachable there, not on 127.0.0.1 */
	int port6 = free_port(AF_INET6);
	if (port6 > 0) {
		char listen6[64], url6[96], url4[96];
		snprintf(listen6, sizeof listen6, "[::1]:%d", port6);
		snprintf(url6, sizeof url6, "http://[::1]:%d", port6);
		snprintf(url4, sizeof url4, "http://127.0.0.1:%d", port6);
		t.cfg.status_listen = listen6;
		struct status_server *s6 = NULL;
		ck_assert_msg(status_server_start(&s6, &src, &err) == 0, "%s", err.msg);
		ck_assert_str_eq(status_server_address(s6), listen6);
		ck_assert_int_eq(http_at(url6, "GET", "/healthz", NULL, &r), 0);
		ck_assert_int_eq(r.status, 503);
		ck_assert_int_ne(http_at(url4, "GET", "/healthz", NULL, &r), 0);
		ck_assert_msg(status_client_send(&t.cfg, 1, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(pause_get(ps), 1);
		status_server_free(s6);
		t.cfg.status_listen = listen_addr;
	}

	/* no status.listen: no server, and the client says why it cannot ask */
	t.cfg.status_listen = NULL;
	struct status_server *none = (struct status_server *)&err;
	ck_assert_int_eq(status_server_start(&none, &src, &err), 0);
	ck_assert_ptr_null(none);
	ck_assert_int_eq(status_client_send(&t.cfg, 1, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "status.listen is not set"));
	t.cfg.status_listen = listen_addr;
}
END_TEST

START_TEST(client_without_an_agent)
{
	status_server_free(srv);
	srv = NULL;
	struct gw_err err = {0};
	ck_assert_int_eq(status_client_send(&t.cfg, 1, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "no agent answered at http://127.0.0.1:"));
	ck_assert_ptr_nonnull(strstr(err.msg, "/paused"));
	ck_assert_int_eq(status_client_send(&t.cfg, 0, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.msg, "no agent answered"));
	ck_assert_int_eq(pause_get(ps), 0);

	/* something that is not an agent answers */
	t.cfg.status_listen = "127.0.0.1:1";
	ck_assert_int_eq(status_client_send(&t.cfg, 1, &err), -1);
	t.cfg.status_listen = listen_addr;
}
END_TEST

START_TEST(idle_connections_from_one_address_close_their_own_oldest)
{
	/* more idle connections from one address than it may hold, and a few from another */
	enum { FLOOD = HTTP_MAX_PER_PEER + 60, OTHER = 20 };
	int flood[FLOOD], other[OTHER];
	for (int i = 0; i < FLOOD; i++)
		flood[i] = connect_from("127.0.0.1");
	for (int i = 0; i < OTHER; i++)
		other[i] = connect_from("127.0.0.2");
	/* a probe from the flooding address itself is answered at once */
	int64_t t0 = gw_mono_ms();
	struct resp r;
	http("GET", "/healthz", &r);
	ck_assert_int_eq(r.status, 503);
	ck_assert_int_lt(gw_mono_ms() - t0, 1000);
	/* the oldest of the flood made room; the other address kept every connection */
	int closed = 0;
	for (int i = 0; i < FLOOD; i++)
		if (wait_closed(flood[i], i < FLOOD - HTTP_MAX_PER_PEER ? 3000 : 1, NULL, 0) >= 0)
			closed++;
	ck_assert_int_ge(closed, FLOOD - HTTP_MAX_PER_PEER);
	for (int i = 0; i < FLOOD - HTTP_MAX_PER_PEER; i++) /* in order: the oldest went */
		ck_assert_int_ge(wait_closed(flood[i], 1, NULL, 0), 0);
	for (int i = 0; i < OTHER; i++)
		ck_assert_int_eq(wait_closed(other[i], 1, NULL, 0), -1);
	for (int i = 0; i < FLOOD; i++)
		close(flood[i]);
	for (int i = 0; i < OTHER; i++)
		close(other[i]);
	ck_assert_uint_eq(status_server_max_connections(srv), HTTP_MAX_CONNECTIONS);
}
END_TEST

START_TEST(silent_and_slow_connections_are_closed_after_the_header_timeout)
{
	int silent = connect_from("127.0.0.1"), slow = connect_from("127.0.0.1");
	int kept = connect_from("127.0.0.1");
	send_all(slow, "GET /hea", 8);
	const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	send_all(kept, req, strlen(req));
	char got[8192];
	ck_assert(read_until(kept, "\r\n\r\n", 5000, got, sizeof got));
	ck_assert_ptr_nonnull(strstr(got, "HTTP/1.1 503 "));
	int64_t t0 = gw_mono_ms();
	/* the slow one trickles a byte a second: still closed when its head is not done */
	int64_t slow_closed = -1;
	for (int i = 0; i < 12 && slow_closed < 0; i++) {
		slow_closed = wait_closed(slow, 1000, NULL, 0);
		if (slow_closed < 0)
			send(slow, "a", 1, MSG_NOSIGNAL);
	}
	int64_t slow_ms = gw_mono_ms() - t0;
	int64_t silent_ms = wait_closed(silent, 10000, NULL, 0);
	ck_assert_msg(slow_ms >= (HTTP_HEADER_TIMEOUT_S - 1) * 1000 &&
	                  slow_ms <= (HTTP_HEADER_TIMEOUT_S + 3) * 1000,
	              "slow: closed after %lld ms", (long long)slow_ms);
	ck_assert_msg(silent_ms >= 0 && gw_mono_ms() - t0 <= (HTTP_HEADER_TIMEOUT_S + 3) * 1000,
	              "silent: %lld", (long long)silent_ms);
	/* a keep-alive connection outlives the header timeout, then goes idle-closed */
	int64_t kept_ms = wait_closed(kept, (HTTP_KEEPALIVE_TIMEOUT_S + 8) * 1000, NULL, 0);
	ck_assert_msg(kept_ms >= 0 && gw_mono_ms() - t0 >= (HTTP_KEEPALIVE_TIMEOUT_S - 2) * 1000,
	              "keep-alive: %lld", (long long)kept_ms);
	close(silent);
	close(slow);
	close(kept);
}
END_TEST

START_TEST(request_heads_and_bodies_are_bounded)
{
	char got[16384];
	/* a head larger than HTTP_MAX_HEADER_BYTES: closed, never answered */
	int fd = connect_from("127.0.0.1");
	char big[HTTP_MAX_HEADER_BYTES + 200];
	int n = snprintf(big, sizeof big, "GET /healthz HTTP/1.1\r\nX-Filler: ");
	memset(big + n, 'a', sizeof big - (size_t)n - 5);
	memcpy(big + sizeof big - 5, "\r\n\r\n", 5);
	send(fd, big, sizeof big - 1, MSG_NOSIGNAL);
	got[0] = '\0';
	ck_assert_int_ge(wait_closed(fd, 5000, got, sizeof got), 0);
	ck_assert_ptr_null(strstr(got, "HTTP/1.1 503"));
	close(fd);
	/* a body over HTTP_MAX_BODY_BYTES: 413 at once, not read, connection closed */
	fd = connect_from("127.0.0.1");
	const char *huge =
	    "POST /sync/pause HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n";
	send_all(fd, huge, strlen(huge));
	got[0] = '\0';
	ck_assert_int_ge(wait_closed(fd, 5000, got, sizeof got), 0);
	ck_assert_ptr_nonnull(strstr(got, "HTTP/1.1 413 "));
	close(fd);
	/* a small body is read and dropped: the next request on the connection is answered */
	fd = connect_from("127.0.0.1");
	const char *two = "POST /sync/pause HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
	                  "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n";
	send_all(fd, two, strlen(two));
	ck_assert(read_until(fd, "HTTP/1.1 404 ", 5000, got, sizeof got));
	ck_assert_ptr_nonnull(strstr(got, "HTTP/1.1 401 "));
	ck_assert_int_eq(pause_get(ps), 0);
	close(fd);
	/* a chunked body is not taken apart: answered, then the connection is closed */
	fd = connect_from("127.0.0.1");
	const char *chunked =
	    "POST /sync/pause HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n5\r\nhello\r\n0\r\n\r\n";
	send_all(fd, chunked, strlen(chunked));
	got[0] = '\0';
	ck_assert_int_ge(wait_closed(fd, 5000, got, sizeof got), 0);
	ck_assert_ptr_nonnull(strstr(got, "HTTP/1.1 401 "));
	ck_assert_ptr_nonnull(strstr(got, "Connection: close"));
	close(fd);
	/* asking for an upgrade (WebSocket, h2c) gets plain HTTP and a close */
	fd = connect_from("127.0.0.1");
	const char *up =
	    "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
	    "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
	send_all(fd, up, strlen(up));
	got[0] = '\0';
	ck_assert_int_ge(wait_closed(fd, 5000, got, sizeof got), 0);
	ck_assert_ptr_nonnull(strstr(got, " 503 "));
	ck_assert_ptr_null(strstr(got, " 101 "));
	close(fd);
	/* CONNECT does not turn the connection into a tunnel */
	fd = connect_from("127.0.0.1");
	const char *tunnel = "CONNECT example.com:80 HTTP/1.1\r\nHost: example.com\r\n\r\n";
	send_all(fd, tunnel, strlen(tunnel));
	got[0] = '\0';
	ck_assert_int_ge(wait_closed(fd, 5000, got, sizeof got), 0);
	ck_assert_ptr_null(strstr(got, " 200 "));
	close(fd);
}
END_TEST

START_TEST(running_out_of_descriptors_is_not_a_busy_loop)
{
	enum { CLIENTS = 4 };
	int c[CLIENTS], stat = thread_schedstat("status");
	for (int i = 0; i < CLIENTS; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(c[i], 0);
	}
	/* every descriptor this process may have is taken (connect() needs none) */
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 512;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	int held[512], n_held = 0;
	for (int fd; n_held < 512 && (fd = dup(0)) >= 0;)
		held[n_held++] = fd;
	ck_assert_int_eq(errno, EMFILE);
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(strrchr(listen_addr, ':') + 1));
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	const char *req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
	for (int i = 0; i < CLIENTS; i++) {
		ck_assert_int_eq(connect(c[i], (struct sockaddr *)&sa, sizeof sa), 0);
		send_all(c[i], req, strlen(req));
	}
	/* the server cannot accept them: it waits, it does not spin */
	int64_t cpu0 = cpu_ns(stat);
	sleep_ms(1000);
	int64_t spent = cpu_ns(stat) - cpu0;
	ck_assert_msg(spent < 50 * 1000000LL, "the status thread used %lld ms of CPU in 1 s",
	              (long long)(spent / 1000000));
	char got[4096];
	ck_assert(!read_until(c[0], "HTTP/1.1", 10, got, sizeof got));
	/* descriptors free again: every waiting client is answered */
	for (int i = 0; i < n_held; i++)
		close(held[i]);
	for (int i = 0; i < CLIENTS; i++) {
		ck_assert_msg(read_until(c[i], "\r\n\r\n", 3000, got, sizeof got),
		              "client %d got no answer", i);
		ck_assert_ptr_nonnull(strstr(got, "HTTP/1.1 503 "));
		close(c[i]);
	}
	close(stat);
}
END_TEST

START_TEST(routes_answer_without_a_socket)
{
	struct http_request req;
	memset(&req, 0, sizeof req);
	req.method = HTTP_OPTIONS;
	req.path = "/metrics";
	req.query = "";
	req.peer = "127.0.0.1";
	struct http_response resp;
	memset(&resp, 0, sizeof resp);
	status_route(&src, &req, &resp);
	ck_assert_uint_eq(resp.status, 405);
	ck_assert_str_eq(resp.headers[0][0], "Allow");
	ck_assert_str_eq(resp.headers[0][1], "GET, HEAD");
	http_response_free(&resp);
	memset(&resp, 0, sizeof resp);
	req.method = HTTP_GET;
	req.path = "/healthz";
	status_route(&src, &req, &resp);
	ck_assert_uint_eq(resp.status, 503);
	ck_assert_str_eq(resp.content_type, "text/plain; charset=utf-8");
	http_response_free(&resp);
	ck_assert(status_same_secret("abc", "abc"));
	ck_assert(!status_same_secret("abd", "abc"));
	ck_assert(!status_same_secret("abcd", "abc"));
	ck_assert(!status_same_secret("", "abc"));
}
END_TEST

START_TEST(listen_addresses)
{
	struct listen_addr la;
	struct gw_err err = {0};
	char url[128];
	ck_assert_int_eq(listen_addr_parse("127.0.0.1:9196", &la, &err), 0);
	ck_assert_str_eq(la.host, "127.0.0.1");
	ck_assert_str_eq(la.port, "9196");
	ck_assert_int_eq(la.ipv6, 0);
	listen_addr_url(&la, url, sizeof url);
	ck_assert_str_eq(url, "http://127.0.0.1:9196");
	ck_assert_int_eq(listen_addr_parse("[::1]:80", &la, &err), 0);
	ck_assert_str_eq(la.host, "::1");
	ck_assert_int_eq(la.ipv6, 1);
	listen_addr_url(&la, url, sizeof url);
	ck_assert_str_eq(url, "http://[::1]:80");
	ck_assert_int_eq(listen_addr_parse("localhost:65535", &la, &err), 0);
	ck_assert_str_eq(la.host, "localhost");
	/* wildcards are reached on loopback */
	ck_assert_int_eq(listen_addr_parse("0.0.0.0:9196", &la, &err), 0);
	listen_addr_url(&la, url, sizeof url);
	ck_assert_str_eq(url, "http://127.0.0.1:9196");
	ck_assert_int_eq(listen_addr_parse("[::]:9196", &la, &err), 0);
	listen_addr_url(&la, url, sizeof url);
	ck_assert_str_eq(url, "http://[::1]:9196");
	const char *bad[] = {
	    "",        "9196",     ":9196",     "host:", "host:0",   "host:65536",
	    "host:+1", "::1:9196", "[::1:9196", "[]:80", "host:12a", "host:123456"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(listen_addr_parse(bad[i], &la, &err) == -1, "accepted '%s'", bad[i]);
	ck_assert_int_eq(listen_addr_parse(NULL, &la, &err), -1);
}
END_TEST

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	Suite *s = suite_create("status_server");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, routes_and_methods);
	tcase_add_test(tc, healthz_flips_when_data_arrives);
	tcase_add_test(tc, status_and_metrics_follow_a_failing_subscriber);
	tcase_add_test(tc, pause_and_resume_over_http);
	tcase_add_test(tc, binds_only_the_configured_address);
	tcase_add_test(tc, client_without_an_agent);
	tcase_add_test(tc, idle_connections_from_one_address_close_their_own_oldest);
	tcase_add_test(tc, silent_and_slow_connections_are_closed_after_the_header_timeout);
	tcase_add_test(tc, request_heads_and_bodies_are_bounded);
	tcase_add_test(tc, running_out_of_descriptors_is_not_a_busy_loop);
	tcase_add_test(tc, routes_answer_without_a_socket);
	suite_add_tcase(s, tc);
	TCase *pure = tcase_create("pure");
	tcase_add_test(pure, listen_addresses);
	suite_add_tcase(s, pure);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
