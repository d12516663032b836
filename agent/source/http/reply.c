/*
 * Judging admin replies (see reply.h). The envelope is walked once with jspan (its small
 * members through jansson), and every verdict comes back as 0 or -1 with its reason in
 * err->kind beside the message, so no caller ever decides by reading the message text.
 * jansson is asked where a syntax error is only on the failure path, so a good reply is
 * parsed exactly once.
 */
#include "source/http/reply.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "core/jspan.h"
#include "model/model.h"

void reply_excerpt(const char *body, size_t len, char *out, size_t max)
{
	size_t n = 0, i = 0;
	if (max < 5) {
		if (max)
			out[0] = '\0';
		return;
	}
	for (; i < len && n + 4 < max; i++) {
		unsigned char c = (unsigned char)body[i];
		if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
		out[n++] = (c >= 0x20 && c != 0x7f) ? (char)c : '?';
	}
	if (i < len) {
		out[n++] = '.';
		out[n++] = '.';
		out[n++] = '.';
	}
	out[n] = '\0';
}

int reply_check_status(const char *server, const char *what, long status, const char *body,
                       size_t len, struct gw_err *err)
{
	if (status == 200)
		return 0;
	char ex[201];
	reply_excerpt(body, len, ex, sizeof ex);
	err->kind = SYNC_FAIL_HTTP;
	return gw_errf(err, "server %s: %s: HTTP %ld%s%s", server, what, status, ex[0] ? ": " : "",
	               ex);
}

/* The body is not JSON: say where, as jansson sees it. */
static enum sync_fail syntax(const char *body, size_t len, const char *fallback, struct gw_err *err)
{
	gw_errf(err, "invalid JSON: %s", fallback);
	model_syntax_error(body, len, "", err);
	return SYNC_FAIL_PARSE;
}

/* A fetch whose groups are parsed while the envelope is walked (see walk()). */
struct inplace {
	const enum gw_group *want;
	size_t n_want;
	const char *source;
	struct group_data *const *prev;
	struct group_data **out;
	struct gd_pool *owner; /* owns body: items may point into it (NULL: copy them) */
	int done;              /* out[] holds the parsed groups */
	int bad_json;          /* the groups failed as text that is not JSON */
};

/* The envelope, member by member. With `ip`, a 'data' member that comes after code 200
 * (the admin writes code, message, data) is parsed by the model where it stands, so the
 * 50 MB of a big reply are read once; otherwise its span is only skipped. 0 (err->kind
 * SYNC_OK), or -1 with err saying why and its kind. */
static int walk(const char *body, size_t len, struct reply_envelope *env, struct inplace *ip,
                struct gw_err *err)
{
	memset(env, 0, sizeof *env);
	const char *end = body + len;
	struct jspan_iter it;
	struct jspan_member m;
	json_t *code = NULL, *msg = NULL;
	int have_data = 0, r;
	enum sync_fail why = SYNC_FAIL_PARSE;

	const char *p = jspan_ws(body, end);
	if (p == end || *p != '{') {
		json_t *v = json_loadb(body, len, JSON_DECODE_ANY, NULL);
		if (!v) {
			err->kind = syntax(body, len, "the reply is not a JSON document", err);
			return -1;
		}
		json_decref(v); /* valid JSON, only not an object */
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "reply is not a JSON object");
	}
	jspan_object_begin(&it, p, end);
	while ((r = jspan_object_key(&it, &m)) == 1) {
		if (jspan_key_is(&m, "data") == 1) {
			if (have_data) {
				why = syntax(body, len, "duplicate key 'data'", err);
				goto out;
			}
			have_data = 1;
			env->data = m.value;
			if (ip && json_is_integer(code) && json_integer_value(code) == 200) {
				const char *vend;
				if (model_parse_groups_at(m.value, end, &vend, ip->owner, ip->want,
				                          ip->n_want, ip->source, ip->prev, ip->out,
				                          &ip->bad_json, err) != 0) {
					why = ip->bad_json ? SYNC_FAIL_PARSE : SYNC_FAIL_FETCH;
					if (ip->bad_json)
						model_syntax_error(body, len, "", err);
					goto out;
				}
				ip->done = 1;
				jspan_object_done(&it, &m, vend);
			} else if (jspan_object_skip(&it, &m) != 0) {
				r = -1;
				break;
			}
			env->data_len = m.value_len;
			continue;
		}
		if (jspan_object_skip(&it, &m) != 0) {
			r = -1;
			break;
		}
		json_t *v = json_loadb(m.value, m.value_len, JSON_DECODE_ANY, NULL);
		json_t **slot = jspan_key_is(&m, "code") == 1      ? &code
		                : jspan_key_is(&m, "message") == 1 ? &msg
		                                                   : NULL;
		if (!v || (slot && *slot)) {
			json_decref(v);
			why = syntax(body, len, v ? "duplicate key" : "a malformed value", err);
			goto out;
		}
		if (slot)
			*slot = v;
		else
			json_decref(v);
	}
	if (r < 0 || jspan_ws(it.p, end) != end) {
		why = syntax(body, len, "malformed or truncated reply", err);
		goto out;
	}
	if (!json_is_integer(code)) {
		gw_errf(err, "reply has no integer 'code'");
		goto out;
	}
	env->code = json_integer_value(code);
	if (json_is_string(msg))
		snprintf(env->message, sizeof env->message, "%s", json_string_value(msg));
	if (env->code != 200) {
		why = SYNC_FAIL_CODE;
		gw_errf(err, "admin code %lld: %s", env->code,
		        json_is_string(msg) ? json_string_value(msg) : "(no message)");
		goto out;
	}
	if (!have_data) {
		gw_errf(err, "reply has no 'data'");
		goto out;
	}
	why = SYNC_OK;
out:
	json_decref(code);
	json_decref(msg);
	err->kind = why;
	return why == SYNC_OK ? 0 : -1;
}

int reply_parse_envelope(const char *body, size_t len, struct reply_envelope *env,
                         struct gw_err *err)
{
	return walk(body, len, env, NULL, err);
}

int reply_data_tree(const char *server, const char *what, const char *body, size_t len,
                    struct reply_envelope *env, json_t **data, struct gw_err *err)
{
	*data = NULL;
	int rc = reply_parse_envelope(body, len, env, err);
	if (rc == 0) {
		*data = json_loadb(env->data, env->data_len,
		                   JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
		if (!*data) {
			err->kind = syntax(body, len, "malformed 'data'", err);
			rc = -1;
		}
	}
	if (rc != 0)
		gw_err_prefix(err, "server %s: %s", server, what);
	return rc;
}

static int fetch(const char *body, size_t len, struct gd_pool *owner, const enum gw_group *want,
                 size_t n_want, const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                 struct group_data *out[GW_GROUP_COUNT], struct gw_err *err)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		out[g] = NULL;
	struct reply_envelope env;
	struct inplace ip = {want, n_want, source, prev, out, owner, 0, 0};
	if (walk(body, len, &env, &ip, err) != 0) {
		for (int g = 0; g < GW_GROUP_COUNT; g++) {
			group_data_unref(out[g]);
			out[g] = NULL;
		}
		return -1;
	}
	if (ip.done)
		return 0;
	int bad_json = 0;
	if (model_parse_groups(env.data, env.data_len, want, n_want, source, prev, out, &bad_json,
	                       err) == 0)
		return 0;
	err->kind = bad_json ? SYNC_FAIL_PARSE : SYNC_FAIL_FETCH;
	if (bad_json)
		model_syntax_error(body, len, "", err);
	return -1;
}

int reply_parse_fetch(const char *body, size_t len, const enum gw_group *want, size_t n_want,
                      const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                      struct group_data *out[GW_GROUP_COUNT], struct gw_err *err)
{
	return fetch(body, len, NULL, want, n_want, source, prev, out, err);
}

int reply_parse_fetch_adopt(char **body, size_t len, const enum gw_group *want, size_t n_want,
                            const char *source, struct group_data *const prev[GW_GROUP_COUNT],
                            struct group_data *out[GW_GROUP_COUNT], struct gw_err *err)
{
	struct gd_pool *owner = gd_pool_wrap(*body, len);
	if (!owner)
		return fetch(*body, len, NULL, want, n_want, source, prev, out, err);
	int rc = fetch(*body, len, owner, want, n_want, source, prev, out, err);
	for (int g = 0; rc == 0 && g < GW_GROUP_COUNT; g++)
		if (out[g])
			group_data_seal(out[g], owner);
	/* nobody has seen the versions yet: the count is ours to read */
	if (atomic_load(&owner->refs) > 1) {
		*body = NULL; /* the versions keep it */
		gd_pool_unref(owner);
	} else {
		*body = gd_pool_unwrap(owner);
	}
	return rc;
}
