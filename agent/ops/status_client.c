/*
 * The --pause / --resume / --status client (see status_client.h): the control socket first
 * (ops/control.h: one line out, one JSON line back); over HTTP only for an agent without
 * one and with status.token set, or for `--status ADDR` naming the status endpoint
 * (ops/status_http.h). The HTTP request is one libcurl POST with short
 * timeouts, proxies ignored (an http_proxy in the environment must not route a request for
 * the local agent elsewhere), and the agent's JSON reply turned into one line for a person.
 */
#include "ops/status_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "ops/listen_addr.h"
#include "ops/pause.h"
#include "ops/status_http.h"
#include "ops/status_text.h"
#include "ops/unix_addr.h"

#define REPLY_MAX 65536

struct reply {
	char buf[REPLY_MAX + 1];
	size_t len;
	char *big; /* --status: a reply of up to STATUS_REPLY_MAX, malloc'd as it grows */
	size_t big_len, big_cap;
};

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n, room = REPLY_MAX - r->len;
	memcpy(r->buf + r->len, data, len < room ? len : room);
	r->len += len < room ? len : room;
	r->buf[r->len] = '\0';
	return len;
}

/* Trim a trailing newline for quoting a plain-text reply in one line. */
static const char *one_line(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Read the agent's JSON answer; print the outcome; 0 or -1. */
static int report(const char *url, long status, struct reply *r, int pause, struct gw_err *err)
{
	const char *what = pause ? "paused" : "resumed";
	json_t *doc = json_loads(r->buf, 0, NULL);
	int paused = -1, changed = 0, persisted = 0;
	const char *state_file = "", *error = NULL;
	json_t *jerror = NULL;
	if (doc &&
	    json_unpack(doc, "{s:b, s:b, s:b, s:s, s?o}", "paused", &paused, "changed", &changed,
	                "persisted", &persisted, "stateFile", &state_file, "error", &jerror) != 0)
		paused = -1;
	error = json_string_value(jerror); /* NULL unless a string */
	int rc;
	if (paused < 0 && r->len == 0) {
		rc = gw_errf(err, "the agent at %s did not answer", url);
	} else if (paused < 0) {
		rc = gw_errf(err, "the agent at %s answered HTTP %ld: %.300s", url, status,
		             one_line(r->buf));
	} else if (!persisted) {
		rc = gw_errf(err,
		             "the agent at %s %s sync but could not record it in %s (%s): a "
		             "restart would %s",
		             url, what, state_file, error ? error : "unknown error",
		             pause ? "resume delivery" : "start paused");
	} else if (pause) {
		printf("sync %s%s (agent at %s; state kept in %s)\n", changed ? "" : "was already ",
		       what, url, state_file);
		rc = 0;
	} else if (changed) {
		printf("sync resumed (agent at %s; state file removed: %s)\n", url, state_file);
		rc = 0;
	} else {
		/* nothing was removed: there was no state file to remove */
		printf("sync was not paused: nothing to resume (agent at %s; no state file %s)\n",
		       url, state_file);
		rc = 0;
	}
	json_decref(doc);
	return rc;
}

/* Keep what the agent sends: into r->buf, or for --status (r->big set) growing to
 * STATUS_REPLY_MAX. */
static int take(int fd, struct reply *r)
{
	for (;;) {
		if (r->big) {
			if (r->big_cap - r->big_len < 4096) {
				if (r->big_cap >= STATUS_REPLY_MAX)
					return -1;
				char *more = realloc(r->big, r->big_cap * 2 + 1);
				if (!more)
					return -1;
				r->big = more;
				r->big_cap *= 2;
			}
			ssize_t got = read(fd, r->big + r->big_len, r->big_cap - r->big_len);
			if (got <= 0)
				return 0;
			r->big_len += (size_t)got;
			r->big[r->big_len] = '\0';
			continue;
		}
		ssize_t got = read(fd, r->buf + r->len, REPLY_MAX - r->len);
		if (got <= 0)
			return 0;
		r->len += (size_t)got;
		r->buf[r->len] = '\0';
	}
}

/* Ask over the control socket. 0 with the answer in r; 1 when no agent listens there (no
 * socket file, or a stale one), so the caller may try HTTP; -1 with err otherwise. */
static int ask_socket(const char *path, const char *line, struct reply *r, struct gw_err *err)
{
	/* by the agent's own rule (ops/unix_addr.h), so a path of any length is reached */
	const char *name;
	struct unix_addr ua;
	int dirfd = unix_dir_open(path, &name, err);
	if (dirfd < 0)
		return errno == ENOENT ? 1 : -1; /* no directory: no agent made a socket there */
	if (unix_addr_at(&ua, path, dirfd, name, err) != 0) {
		close(dirfd);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		close(dirfd);
		return gw_errf(err, "cannot create a socket: %s", strerror(errno));
	}
	int rc = connect(fd, (struct sockaddr *)&ua.sa, ua.len);
	int ce = errno;
	close(dirfd);
	if (rc != 0) {
		close(fd);
		if (ce == ENOENT || ce == ECONNREFUSED)
			return 1;
		if (ce == EACCES || ce == EPERM)
			return gw_errf(err,
			               "not allowed to use the control socket %s (%s): run as the "
			               "agent's user or a member of its group",
			               path, strerror(ce));
		return gw_errf(err, "cannot reach the agent at %s: %s", path, strerror(ce));
	}
	struct timeval tv = {15, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (write(fd, line, strlen(line)) != (ssize_t)strlen(line)) {
		int e = errno;
		close(fd);
		return gw_errf(err, "cannot ask the agent at %s: %s", path, strerror(e));
	}
	int taken = take(fd, r);
	close(fd);
	return taken == 0 ? 0
	                  : gw_errf(err, "the agent at %s sent more than %d MiB", path,
	                            STATUS_REPLY_MAX >> 20);
}

/* The agent's answer to "status" on the control socket, or NULL with err. */
static json_t *ask_status(const char *socket_path, struct gw_err *err)
{
	struct reply *r = calloc(1, sizeof *r);
	if (!r || !(r->big = malloc(65536 + 1))) {
		free(r);
		gw_errf(err, "out of memory");
		return NULL;
	}
	r->big_cap = 65536;
	r->big[0] = '\0';
	int rc = ask_socket(socket_path, "status\n", r, err);
	if (rc == 1)
		gw_errf(err,
		        "no agent answered at %s (is gwsyncd running, with this control socket?)",
		        socket_path);
	json_t *doc = rc == 0 ? json_loads(r->big, 0, NULL) : NULL;
	if (rc == 0 && !doc)
		gw_errf(err, "the agent at %s did not answer with a status%s", socket_path,
		        r->big_len ? "" : " (an agent older than --status?)");
	free(r->big);
	free(r);
	return doc;
}

/* Print the answer of the agent at `where` (NULL: err is already set); takes `doc`. */
static int show(json_t *doc, const char *where, FILE *out, struct gw_err *err)
{
	if (!doc)
		return -1;
	const char *error = json_string_value(json_object_get(doc, "error"));
	int rc = 0;
	if (error)
		rc = gw_errf(err, "the agent at %s: %s", where, error);
	else if (status_text_render(doc, gw_wall_ms(), out) != 0)
		rc = gw_errf(err, "the agent at %s answered something else than a status", where);
	json_decref(doc);
	return rc;
}

int status_client_show(const struct cfg *cfg, FILE *out, struct gw_err *err)
{
	if (!cfg->control_socket)
		return gw_errf(
		    err,
		    "%s: control_socket is off, so there is no agent to ask; --status talks "
		    "to the running agent through it",
		    cfg->path ? cfg->path : "configuration");
	return show(ask_status(cfg->control_socket, err), cfg->control_socket, out, err);
}

int status_client_show_at(const char *addr, FILE *out, struct gw_err *err)
{
	char url[STATUS_URL_MAX];
	int http = status_addr_http(addr, url, err);
	if (http < 0)
		return -1;
	return http ? show(status_http_fetch(url, err), url, out, err)
	            : show(ask_status(addr, err), addr, out, err);
}

int status_client_send(const struct cfg *cfg, int pause, struct gw_err *err)
{
	if (cfg->control_socket) {
		struct reply *r = calloc(1, sizeof *r);
		if (!r)
			return gw_errf(err, "out of memory");
		int rc = ask_socket(cfg->control_socket, pause ? "pause\n" : "resume\n", r, err);
		if (rc == 0) {
			char where[4200]; /* a control socket path may be long (ops/unix_addr.h) */
			snprintf(where, sizeof where, "unix:%s", cfg->control_socket);
			rc = report(where, 200, r, pause, err);
		}
		free(r);
		if (rc <= 0)
			return rc;
		/* no agent on the socket: an agent without one may still take a token over HTTP */
		if (!cfg->status_listen || !cfg->status_token)
			return pause ? gw_errf(err,
			                       "no agent answered at %s; to start an agent paused, "
			                       "create %s/" PAUSE_FILE " before starting it",
			                       cfg->control_socket, cfg->state_dir)
			             : gw_errf(err, "no agent answered at %s", cfg->control_socket);
	}
	if (!cfg->status_listen)
		return gw_errf(err,
		               "%s: status.listen is not set, so there is no endpoint to ask; "
		               "--pause and --resume talk to the running agent through it",
		               cfg->path ? cfg->path : "configuration");
	struct listen_addr la;
	if (listen_addr_parse(cfg->status_listen, &la, err) != 0)
		return -1;
	char base[320], url[360];
	listen_addr_url(&la, base, sizeof base);
	snprintf(url, sizeof url, "%s/sync/%s", base, pause ? "pause" : "resume");

	CURL *h = curl_easy_init();
	if (!h)
		return gw_errf(err, "cannot initialise libcurl");
	struct reply *r = calloc(1, sizeof *r);
	if (!r) {
		curl_easy_cleanup(h);
		return gw_errf(err, "out of memory");
	}
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 15000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
	struct curl_slist *hdrs = NULL;
	if (cfg->status_token) {
		/* the token goes in a header only: never in a URL, never in a message */
		size_t n = strlen(cfg->status_token) + sizeof "Authorization: Bearer ";
		char *auth = malloc(n);
		if (auth) {
			snprintf(auth, n, "Authorization: Bearer %s", cfg->status_token);
			hdrs = curl_slist_append(NULL, auth);
			explicit_bzero(auth, n);
			free(auth);
		}
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	}
	CURLcode cc = curl_easy_perform(h);
	curl_slist_free_all(hdrs);
	long status = 0;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);

	int rc;
	if (cc != CURLE_OK && pause)
		rc = gw_errf(err,
		             "no agent answered at %s (%s); to start an agent paused, create "
		             "%s/" PAUSE_FILE " before starting it",
		             base, cerr[0] ? cerr : curl_easy_strerror(cc), cfg->state_dir);
	else if (cc != CURLE_OK)
		rc = gw_errf(err, "no agent answered at %s (%s)", base,
		             cerr[0] ? cerr : curl_easy_strerror(cc));
	else
		rc = report(base, status, r, pause, err);
	free(r);
	return rc;
}
