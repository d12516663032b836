/*
 * What `gwsyncd --status ADDR` takes ADDR for (ops/status_http.h), without a network: the
 * status endpoint (a URL, HOST:PORT, [IPv6]:PORT, a wildcard reached on its loopback) or a
 * control socket (a path, a file that exists, anything else), and the endpoint addresses it
 * refuses (credentials, a query). The requests themselves are proved black-box, against a
 * running agent (tests/integration/test_cli.py).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/status_http.h"

/* the base URL `addr` names, or "socket", or "refused: <message>" */
static const char *kind(const char *addr)
{
	static char out[STATUS_URL_MAX + 300];
	char url[STATUS_URL_MAX];
	struct gw_err err = {0};
	int rc = status_addr_http(addr, url, &err);
	if (rc < 0)
		snprintf(out, sizeof out, "refused: %s", err.msg);
	else
		snprintf(out, sizeof out, "%s", rc ? url : "socket");
	return out;
}

START_TEST(an_address_or_a_url_is_the_status_endpoint)
{
	ck_assert_str_eq(kind("127.0.0.1:9196"), "http://127.0.0.1:9196");
	ck_assert_str_eq(kind("localhost:9196"), "http://localhost:9196");
	ck_assert_str_eq(kind("[::1]:9196"), "http://[::1]:9196");
	ck_assert_str_eq(kind("0.0.0.0:9196"), "http://127.0.0.1:9196");
	ck_assert_str_eq(kind("[::]:9196"), "http://[::1]:9196");
	ck_assert_str_eq(kind("http://127.0.0.1:9196"), "http://127.0.0.1:9196");
	ck_assert_str_eq(kind("http://127.0.0.1:9196//"), "http://127.0.0.1:9196");
	ck_assert_str_eq(kind("HTTPS://gw.example:443/gwsync/"), "HTTPS://gw.example:443/gwsync");
}
END_TEST

START_TEST(a_path_or_anything_else_is_a_control_socket)
{
	ck_assert_str_eq(kind("/var/lib/gwsync/control.sock"), "socket");
	ck_assert_str_eq(kind("state/control.sock"), "socket");
	ck_assert_str_eq(kind("./host:9196"), "socket");
	ck_assert_str_eq(kind("control.sock"), "socket");
	ck_assert_str_eq(kind("host:port"), "socket"); /* not a port: a file name */
	ck_assert_str_eq(kind("host:0"), "socket");
	ck_assert_str_eq(kind("::1:9196"), "socket"); /* IPv6 without brackets */
	/* a file of that name here is what the operator means */
	char dir[] = "/tmp/check_status_http.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chdir(dir), 0);
	FILE *f = fopen("sock:9196", "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_str_eq(kind("sock:9196"), "socket");
	ck_assert_int_eq(unlink("sock:9196"), 0);
	ck_assert_str_eq(kind("sock:9196"), "http://sock:9196");
	ck_assert_int_eq(chdir("/"), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(an_unusable_endpoint_address_is_refused_without_echoing_credentials)
{
	const char *k = kind("http://admin:s3cret@127.0.0.1:9196");
	ck_assert_msg(strstr(k, "refused: ") == k, "%s", k);
	ck_assert_ptr_null(strstr(k, "s3cret"));
	ck_assert_str_eq(kind("http://127.0.0.1:9196/status?x=1"),
	                 "refused: --status http://127.0.0.1:9196/status?x=1: give the status "
	                 "endpoint's base URL, without a query or fragment");
	ck_assert_str_eq(kind("http:///status"), "refused: --status http:///status: no host in "
	                                         "the URL");
	char *long_url = malloc(STATUS_URL_MAX + 16);
	ck_assert_ptr_nonnull(long_url);
	memset(long_url, 'a', STATUS_URL_MAX + 15);
	memcpy(long_url, "http://", 7);
	long_url[STATUS_URL_MAX + 15] = '\0';
	ck_assert_msg(strstr(kind(long_url), "longer than") != NULL, "%s", kind(long_url));
	free(long_url);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("status_http");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, an_address_or_a_url_is_the_status_endpoint);
	tcase_add_test(tc, a_path_or_anything_else_is_a_control_socket);
	tcase_add_test(tc, an_unusable_endpoint_address_is_refused_without_echoing_credentials);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
