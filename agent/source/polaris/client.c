/*
 * One GetConfigFile and the meaning of Polaris's answers (see polaris.h). The body
 * decides, not the HTTP status: Polaris sends code / 1000 as the status, so a file not
 * found is HTTP 400 with code 400202 (config/client.go GetConfigFileWithCache), a refused
 * token HTTP 401 with code 401xxx (config/interceptor/auth). A body that is not Polaris's
 * JSON is a parse failure when the status was 200, else an HTTP failure named by status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"
#include "source/polaris/polaris.h"
#include "source/polaris/reply.h"
#include "source/polaris/wire.h"

#define SHOWN(len) (int)((len) > 200 ? 200 : (len))

void polaris_file_free(struct polaris_file *f)
{
	free(f->content);
	memset(f, 0, sizeof *f);
}

/* err for a reply that is not understood, or whose code is not one the call expects */
static int refuse(struct source *s, size_t srv, const char *what, long status,
                  const struct polaris_reply *r, const char *parse_msg, struct gw_err *err)
{
	const char *server = s->pc->kv.servers[srv];
	if (parse_msg) {
		gw_errf(err, "%s: %s of %s: HTTP %ld, %s", server, what, s->where, status,
		        parse_msg);
		err->kind = status == 200 ? SYNC_FAIL_PARSE : SYNC_FAIL_HTTP;
		return -1;
	}
	if (polaris_code_is_auth(r->code)) {
		gw_errf(err,
		        "%s: %s of %s: the token was refused (code %u, %s): check polaris.token",
		        server, what, s->where, r->code, r->info[0] ? r->info : "no message");
		err->kind = SYNC_FAIL_AUTH;
		return -1;
	}
	gw_errf(err, "%s: %s of %s: code %u (%s)", server, what, s->where, r->code,
	        r->info[0] ? r->info : "no message");
	err->kind = SYNC_FAIL_CODE;
	return -1;
}

/* A transport failure (its message names the server and the request) said with what was
 * asked and of which groups. -1. */
static int in_context(struct source *s, const char *what, struct gw_err *err)
{
	return gw_err_prefix(err, "%s of %s", what, s->where);
}

int polaris_read(struct source *s, size_t srv, const char *key, size_t klen, struct polaris_file *f,
                 struct gw_err *err)
{
	memset(f, 0, sizeof *f);
	struct strbuf path = {0};
	polaris_get_path(&path, s->pc->namespace, s->pc->file_group, key, klen);
	char *p = strbuf_finish(&path);
	if (!p) {
		err->kind = SYNC_FAIL_FETCH;
		return gw_errf(err, "polaris: out of memory");
	}
	char what[300];
	snprintf(what, sizeof what, "GetConfigFile %.*s", SHOWN(klen), key);
	const char *headers[2] = {s->token_header, NULL};
	struct http_request rq = {
	    .method = "GET",
	    .path = p,
	    .headers = s->token_header ? headers : NULL,
	    .label = what,
	};
	struct http_reply rep = {0};
	int rc = http_do(s->conn[srv], &rq, &rep, err);
	free(p);
	if (rc != 0)
		return in_context(s, what, err);
	polaris_count(s, 0, 1, rep.len, 0);
	struct polaris_reply r;
	struct gw_err perr = {0};
	if (polaris_reply_parse(rep.body, rep.len, &r, &perr) != 0) {
		rc = refuse(s, srv, what, rep.status, NULL, perr.msg, err);
		http_reply_recycle(s->conn[srv], &rep);
		return rc;
	}
	long status = rep.status;
	http_reply_recycle(s->conn[srv], &rep);
	if (r.code == POLARIS_NOT_FOUND_RESOURCE) {
		polaris_reply_free(&r);
		return 0; /* absent: never released, or deleted by an operator */
	}
	if (r.code != POLARIS_EXECUTE_SUCCESS) {
		rc = refuse(s, srv, what, status, &r, NULL, err);
		polaris_reply_free(&r);
		return rc;
	}
	if (!r.has_file || r.version == 0) {
		polaris_reply_free(&r);
		return refuse(s, srv, what, status, NULL, "a success without a released file", err);
	}
	f->version = r.version;
	if (r.content) {
		f->present = 1;
		f->content = r.content;
		f->len = r.content_len;
		r.content = NULL;
	}
	polaris_reply_free(&r);
	return 0;
}

int polaris_watch_answer(struct source *s, struct polaris_watch_result *res, char **name,
                         size_t *name_len, uint64_t *version, struct gw_err *err)
{
	*name = NULL;
	*name_len = 0;
	*version = 0;
	if (res->rc != 0) {
		*err = res->err;
		return in_context(s, "WatchConfigFile", err);
	}
	polaris_count(s, 1, 0, 0, 0);
	struct polaris_reply r;
	struct gw_err perr = {0};
	int rc;
	if (polaris_reply_parse(res->reply.body, res->reply.len, &r, &perr) != 0)
		return refuse(s, res->server, "WatchConfigFile", res->reply.status, NULL, perr.msg,
		              err);
	if (r.code == POLARIS_DATA_NO_CHANGE) {
		rc = 0;
	} else if (r.code != POLARIS_EXECUTE_SUCCESS) {
		rc = refuse(s, res->server, "WatchConfigFile", res->reply.status, &r, NULL, err);
	} else if (!r.file_name || !r.file_name_len) {
		rc = refuse(s, res->server, "WatchConfigFile", res->reply.status, NULL,
		            "a change that names no file", err);
	} else {
		*name = r.file_name;
		*name_len = r.file_name_len;
		*version = r.version;
		r.file_name = NULL;
		rc = 1;
	}
	polaris_reply_free(&r);
	return rc;
}
