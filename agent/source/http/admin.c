/*
 * One admin server (see admin.h). Each call goes through call(): make sure we are logged
 * in, send with the token, and on HTTP 401 log in again once and repeat, as the upstream
 * client does. What a reply means is judged here; moving bytes is source/curl_http.c's job.
 */
#include "source/admin/config.h"
#include "source/http/admin.h"

#include <jansson.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shared/strbuf.h"
#include "source/curl_http.h"
#include "source/http/login.h"
#include "model/model.h"
#include "source/http/reply.h"
#include "model/groups.h"

#ifndef GWSYNC_VERSION
#define GWSYNC_VERSION "unknown"
#endif

struct admin {
	const struct cfg *cfg;
	const char *server;
	struct gw_log *log;
	struct http *http;
	struct login login;
	char *port_header;     /* "X-Real-PORT: N" */
	char *instance_header; /* "bootstrapInstanceInfo: {...}" */
};

/* ---------------------------------------------------------------- pure parts */

char *admin_listener_body(const enum gw_group *groups, size_t n,
                          const struct admin_stamp stamps[GW_GROUP_COUNT], const char *namespace_id)
{
	struct strbuf b = {0};
	for (size_t i = 0; i < n; i++) {
		const struct admin_stamp *s = &stamps[groups[i]];
		if (i)
			strbuf_adds(&b, "&");
		strbuf_adds(&b, gw_group_name(groups[i]));
		strbuf_adds(&b, "=");
		strbuf_add_escaped(&b, s->md5[0] ? s->md5 : ADMIN_NO_MD5);
		strbuf_addf(&b, "%%2C%lld", (long long)(s->md5[0] ? s->last_modify_time : 0));
	}
	if (namespace_id && namespace_id[0]) {
		strbuf_adds(&b, n ? "&namespaceId=" : "namespaceId=");
		strbuf_add_escaped(&b, namespace_id);
	}
	return strbuf_finish(&b);
}

char *admin_fetch_path(const enum gw_group *groups, size_t n, const char *namespace_id)
{
	struct strbuf b = {0};
	strbuf_adds(&b, "/configs/fetch");
	char sep = '?';
	for (size_t i = 0; i < n; i++) {
		strbuf_addf(&b, "%cgroupKeys=", sep);
		strbuf_add_escaped(&b, gw_group_name(groups[i]));
		sep = '&';
	}
	if (namespace_id && namespace_id[0]) {
		strbuf_addf(&b, "%cnamespaceId=", sep);
		strbuf_add_escaped(&b, namespace_id);
	}
	return strbuf_finish(&b);
}

char *admin_instance_info(const char *host_name, int port)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:i}", "hostName", host_name ? host_name : "",
	                      "agentName", "gwsync", "agentVersion", GWSYNC_VERSION, "port", port);
	if (!o)
		return NULL;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

int admin_parse_listener(const char *body, size_t len, const enum gw_group *groups, size_t n,
                         const char *server, struct gw_log *log, unsigned *changed,
                         struct gw_err *err)
{
	*changed = 0;
	json_t *data;
	struct reply_envelope env;
	if (reply_data_tree(server, "listener", body, len, &env, &data, err) != 0) {
		/* A ShenYu 2.7 admin refuses a listener that lacks any group it knows; its own
		 * message is the only sign of that. */
		size_t l = strlen(err->msg);
		if (err->kind == SYNC_FAIL_CODE && strstr(env.message, "group param invalid"))
			snprintf(err->msg + l, sizeof err->msg - l,
			         " (does admin.groups list every group this admin knows? a ShenYu "
			         "2.7 admin needs all eight)");
		return -1;
	}
	int rc = 0;
	if (!json_is_array(data)) {
		err->kind = SYNC_FAIL_PARSE;
		rc = gw_errf(err, "server %s: listener: 'data' must be a list of group names",
		             server);
		goto out;
	}
	size_t i;
	json_t *v;
	json_array_foreach(data, i, v)
	{
		if (!json_is_string(v)) {
			err->kind = SYNC_FAIL_PARSE;
			rc = gw_errf(err,
			             "server %s: listener: 'data' element %zu is not a group "
			             "name",
			             server, i);
			goto out;
		}
		const char *name = json_string_value(v);
		int g = cfg_group_parse(name);
		int configured = 0;
		for (size_t k = 0; g >= 0 && k < n; k++)
			configured |= groups[k] == (enum gw_group)g;
		if (g < 0)
			LOG_D(log, "admin", "server %s: listener named unknown group '%s'; ignored",
			      server, name);
		else if (!configured)
			LOG_D(log, "admin",
			      "server %s: listener named group %s, which is not in "
			      "admin.groups; ignored",
			      server, name);
		else
			*changed |= 1u << g;
	}
out:
	if (rc != 0)
		*changed = 0;
	json_decref(data);
	return rc;
}

/* ---------------------------------------------------------------- one server */

int admin_open(struct admin **out, const struct cfg *cfg, size_t server_index, struct gw_log *log,
               struct gw_err *err)
{
	*out = NULL;
	if (server_index >= admin_config(cfg)->n_servers)
		return gw_errf(err, "admin server index %zu out of range", server_index);
	struct admin *a = calloc(1, sizeof *a);
	if (!a)
		return gw_errf(err, "out of memory");
	a->cfg = cfg;
	a->server = admin_config(cfg)->servers[server_index];
	a->log = log;
	login_init(&a->login);
	if (cfg->password)
		gw_log_secret(log, cfg->password);

	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	char *info = admin_instance_info(host, cfg->gateway_port);
	struct strbuf b = {0};
	strbuf_addf(&b, "X-Real-PORT: %d", cfg->gateway_port);
	a->port_header = strbuf_finish(&b);
	if (info)
		strbuf_addf(&b, "bootstrapInstanceInfo: %s", info);
	a->instance_header = info ? strbuf_finish(&b) : NULL;
	free(info);
	if (!a->port_header || !a->instance_header) {
		admin_close(a);
		return gw_errf(err, "out of memory");
	}
	if (http_open(&a->http, cfg, a->server, err) != 0) {
		admin_close(a);
		return -1;
	}
	*out = a;
	return 0;
}

void admin_close(struct admin *a)
{
	if (!a)
		return;
	http_close(a->http);
	login_free(&a->login);
	free(a->port_header);
	free(a->instance_header);
	free(a);
}

const char *admin_server(const struct admin *a)
{
	return a->server;
}

void admin_interrupt(struct admin *a)
{
	http_interrupt(a->http);
}

/*
 * One call to /configs/...: logged in where configured, the token in X-Access-Token, and
 * on HTTP 401 one fresh login and one repeat. 0: an HTTP 200 reply in *rep.
 */
static int call(struct admin *a, struct http_request *rq, const char *what, const char *extra1,
                const char *extra2, struct http_reply *rep, struct gw_err *err)
{
	const int with_login = a->cfg->username && a->cfg->username[0];
	for (int attempt = 0;; attempt++) {
		if (login_ensure(&a->login, a->http, a->cfg, a->log, err) != 0)
			return -1;
		const char *headers[4];
		size_t nh = 0;
		char *token_header = NULL;
		if (a->login.token) {
			struct strbuf b = {0};
			strbuf_addf(&b, "X-Access-Token: %s", a->login.token);
			token_header = strbuf_finish(&b);
			if (!token_header) {
				err->kind = SYNC_FAIL_AUTH;
				return gw_errf(err, "server %s: %s: out of memory", a->server,
				               what);
			}
			headers[nh++] = token_header;
		}
		if (extra1)
			headers[nh++] = extra1;
		if (extra2)
			headers[nh++] = extra2;
		headers[nh] = NULL;
		rq->headers = headers;
		int rc = http_do(a->http, rq, rep, err);
		rq->headers = NULL;
		if (token_header) {
			memset(token_header, 0, strlen(token_header));
			free(token_header);
		}
		if (rc != 0)
			return -1;
		if (rep->status == 401) {
			http_reply_recycle(a->http, rep);
			if (with_login && attempt == 0) {
				LOG_I(a->log, "login",
				      "server %s: %s: HTTP 401, the token was refused; "
				      "logging in again",
				      a->server, what);
				login_drop(&a->login);
				continue;
			}
			err->kind = SYNC_FAIL_AUTH;
			if (with_login)
				return gw_errf(err,
				               "server %s: %s: HTTP 401 again after a fresh login",
				               a->server, what);
			return gw_errf(err,
			               "server %s: %s: HTTP 401: the admin requires a login "
			               "(set admin.username and admin.password)",
			               a->server, what);
		}
		if (reply_check_status(a->server, what, rep->status, rep->body, rep->len, err) !=
		    0) {
			http_reply_recycle(a->http, rep);
			return -1;
		}
		return 0;
	}
}

int admin_fetch(struct admin *a, const enum gw_group *groups, size_t n,
                struct group_data *const held[GW_GROUP_COUNT],
                struct group_data *out[GW_GROUP_COUNT], size_t *bytes, struct gw_err *err)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		out[g] = NULL;
	*bytes = 0;
	/* every error line names the groups asked for: "fetch of RULE, SELECTOR" */
	char what[256] = "fetch of ";
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(what);
		snprintf(what + l, sizeof what - l, "%s%s", i ? ", " : "",
		         gw_group_name(groups[i]));
	}
	char *path = admin_fetch_path(groups, n, a->cfg->namespace_id);
	if (!path) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "server %s: %s: out of memory", a->server, what);
	}
	struct http_request rq = {.method = "GET", .path = path, .label = what};
	struct http_reply rep;
	int rc = call(a, &rq, what, NULL, NULL, &rep, err);
	free(path);
	if (rc != 0)
		return -1;
	*bytes = rep.len;
	/* the versions held now, so unchanged items are carried over instead of parsed */
	rc = reply_parse_fetch_adopt(&rep.body, rep.len, groups, n, a->server, held, out, err);
	if (rc != 0)
		gw_err_prefix(err, "server %s: %s", a->server, what);
	/* a large reply leaves glibc's heap high; hand the freed pages back (a buffer kept
	 * for the next fetch is not freed, so there is nothing to hand back then) */
	if (!http_reply_recycle(a->http, &rep) && *bytes >= ADMIN_TRIM_BYTES)
		malloc_trim(0);
	return rc;
}

/* One listener call with these stamps and extra headers (NULL: none): the groups the
 * admin names as changed into *mask. Whether it waits is the admin's: a stamp it does not
 * hold is answered at once. */
static int listen_with(struct admin *a, const struct admin_stamp stamps[GW_GROUP_COUNT],
                       const char *port_header, const char *instance_header, unsigned *mask,
                       struct gw_err *err)
{
	*mask = 0;
	char *body =
	    admin_listener_body(a->cfg->groups, a->cfg->n_groups, stamps, a->cfg->namespace_id);
	if (!body) {
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "server %s: listener: out of memory", a->server);
	}
	struct http_request rq = {
	    .method = "POST",
	    .path = "/configs/listener",
	    .body = body,
	    .body_len = strlen(body),
	    .content_type = "application/x-www-form-urlencoded",
	    .held = 1,        /* held by the admin, or answered at once, but bounded the same */
	    .small_reply = 1, /* the groups that changed */
	};
	struct http_reply rep;
	int rc = call(a, &rq, "listener", port_header, instance_header, &rep, err);
	free(body);
	if (rc != 0)
		return -1;
	rc = admin_parse_listener(rep.body, rep.len, a->cfg->groups, a->cfg->n_groups, a->server,
	                          a->log, mask, err);
	http_reply_recycle(a->http, &rep);
	return rc;
}

int admin_listen(struct admin *a, const struct ingest_stamp held[GW_GROUP_COUNT],
                 unsigned *changed_mask, struct gw_err *err)
{
	struct admin_stamp stamps[GW_GROUP_COUNT];
	memset(stamps, 0, sizeof stamps);
	for (size_t i = 0; i < a->cfg->n_groups; i++) {
		enum gw_group g = a->cfg->groups[i];
		/* A version from the snapshot is reported as none held, so the admin names the
		 * group at once and its own version replaces the provisional one. */
		if (held[g].md5[0] && !held[g].provisional) {
			memcpy(stamps[g].md5, held[g].md5, sizeof stamps[g].md5);
			stamps[g].last_modify_time = held[g].last_modify_time;
		}
	}
	return listen_with(a, stamps, a->port_header, a->instance_header, changed_mask, err);
}

int admin_listen_now(struct admin *a, unsigned *named_mask, struct gw_err *err)
{
	struct admin_stamp none[GW_GROUP_COUNT];
	memset(none, 0, sizeof none); /* nothing held: ADMIN_NO_MD5 for every group */
	/* X-Real-PORT 0 and no bootstrapInstanceInfo: a dry run registers no gateway instance */
	return listen_with(a, none, "X-Real-PORT: 0", NULL, named_mask, err);
}
