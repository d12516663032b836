/*
 * etcd's JSON gateway answers, parsed with jansson (see reply.h). Keys and values are
 * decoded here, once, so nothing past this file sees base64.
 */
#include "source/etcd/reply.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/b64.h"

/* An int64 as etcd's gateway writes it: a JSON string of digits (or, leniently, a
 * number). Missing: 0. -1 if present but not an int64. */
static int get_int64(const json_t *o, const char *name, int64_t *out)
{
	*out = 0;
	const json_t *v = json_object_get(o, name);
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		*out = (int64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	const char *s = json_string_value(v);
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return -1;
	*out = (int64_t)x;
	return 0;
}

static int get_bool(const json_t *o, const char *name)
{
	return json_is_true(json_object_get(o, name));
}

static json_t *load(const char *text, size_t len, struct gw_err *err, const char *what)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		gw_errf(err, "%s: not JSON: %s (at byte %d)", what, je.text, je.position);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		gw_errf(err, "%s: not a JSON object", what);
		return NULL;
	}
	return root;
}

/* Decode the base64 string member `name` of o (missing: empty). -1 on bad input. */
static int get_b64(const json_t *o, const char *name, char **out, size_t *out_len,
                   struct gw_err *err, const char *what)
{
	const json_t *v = json_object_get(o, name);
	const char *s = "";
	size_t n = 0;
	if (v) {
		if (!json_is_string(v))
			return gw_errf(err, "%s: %s is not a string", what, name);
		s = json_string_value(v);
		n = json_string_length(v);
	}
	enum b64_result rc = b64_decode(s, n, out, out_len);
	if (rc == B64_NO_MEMORY)
		return gw_errf(err, "%s: out of memory", what);
	if (rc != B64_OK)
		return gw_errf(err, "%s: %s is not base64", what, name);
	return 0;
}

static void kv_free(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof *kv);
}

static int parse_kv(const json_t *o, struct etcd_kv *kv, struct gw_err *err, const char *what)
{
	memset(kv, 0, sizeof *kv);
	if (!json_is_object(o))
		return gw_errf(err, "%s: a kv is not an object", what);
	if (get_b64(o, "key", &kv->key, &kv->key_len, err, what) != 0)
		return -1;
	if (kv->key_len == 0) {
		kv_free(kv);
		return gw_errf(err, "%s: a kv without a key", what);
	}
	if (get_b64(o, "value", &kv->value, &kv->value_len, err, what) != 0 ||
	    get_int64(o, "mod_revision", &kv->mod_revision) != 0) {
		if (kv->value)
			gw_errf(err, "%s: mod_revision of %s is not an int64", what, kv->key);
		kv_free(kv);
		return -1;
	}
	return 0;
}

static int get_header_revision(const json_t *root, int64_t *rev, struct gw_err *err,
                               const char *what)
{
	const json_t *h = json_object_get(root, "header");
	if (!json_is_object(h))
		return gw_errf(err, "%s: no header", what);
	if (get_int64(h, "revision", rev) != 0 || *rev < 0)
		return gw_errf(err, "%s: header.revision is not an int64", what);
	return 0;
}

int etcd_parse_range(const char *body, size_t len, struct etcd_range *out, struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	const char *what = "range reply";
	json_t *root = load(body, len, err, what);
	if (!root)
		return -1;
	int rc = -1;
	if (get_header_revision(root, &out->revision, err, what) != 0)
		goto done;
	out->more = get_bool(root, "more");
	const json_t *kvs = json_object_get(root, "kvs");
	if (kvs && !json_is_array(kvs)) {
		gw_errf(err, "%s: kvs is not an array", what);
		goto done;
	}
	size_t n = kvs ? json_array_size(kvs) : 0;
	if (n) {
		out->kvs = calloc(n, sizeof *out->kvs);
		if (!out->kvs) {
			gw_errf(err, "%s: out of memory", what);
			goto done;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (parse_kv(json_array_get(kvs, i), &out->kvs[i], err, what) != 0)
			goto done;
		out->n = i + 1;
	}
	rc = 0;
done:
	json_decref(root);
	if (rc != 0)
		etcd_range_free(out);
	return rc;
}

void etcd_range_free(struct etcd_range *r)
{
	for (size_t i = 0; i < r->n; i++)
		kv_free(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof *r);
}

int etcd_parse_token(const char *body, size_t len, char **token, struct gw_err *err)
{
	*token = NULL;
	json_t *root = load(body, len, err, "authenticate reply");
	if (!root)
		return -1;
	const json_t *t = json_object_get(root, "token");
	int rc = -1;
	if (!json_is_string(t) || json_string_length(t) == 0)
		gw_errf(err, "authenticate reply: no token");
	else if (!(*token = strdup(json_string_value(t))))
		gw_errf(err, "authenticate reply: out of memory");
	else
		rc = 0;
	json_decref(root);
	return rc;
}

static void copy_str(char *dst, size_t cap, const json_t *v)
{
	snprintf(dst, cap, "%s", json_is_string(v) ? json_string_value(v) : "");
}

int etcd_parse_error(const char *body, size_t len, struct etcd_error *out)
{
	memset(out, 0, sizeof *out);
	json_t *root = json_loadb(body, len, 0, NULL);
	if (!json_is_object(root)) {
		json_decref(root);
		return 0;
	}
	const json_t *e = json_object_get(root, "error");
	int is = 0;
	if (json_is_object(e)) { /* in a stream: {"error":{"grpc_code":..,"message":..}} */
		is = 1;
		out->code = (int)json_integer_value(json_object_get(e, "grpc_code"));
		copy_str(out->message, sizeof out->message, json_object_get(e, "message"));
	} else if (e) { /* unary: {"error":"..","message":"..","code":N} */
		is = 1;
		out->code = (int)json_integer_value(json_object_get(root, "code"));
		const json_t *m = json_object_get(root, "message");
		copy_str(out->message, sizeof out->message, json_is_string(m) ? m : e);
	}
	json_decref(root);
	return is;
}

static int parse_events(const json_t *evs, struct etcd_watch_msg *out, struct gw_err *err)
{
	const char *what = "watch event";
	if (!evs)
		return 0;
	if (!json_is_array(evs))
		return gw_errf(err, "watch answer: events is not an array");
	size_t n = json_array_size(evs);
	if (!n)
		return 0;
	out->events = calloc(n, sizeof *out->events);
	if (!out->events)
		return gw_errf(err, "watch answer: out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *ev = json_array_get(evs, i);
		if (!json_is_object(ev))
			return gw_errf(err, "%s: not an object", what);
		const json_t *type = json_object_get(ev, "type");
		struct etcd_event *e = &out->events[i];
		if (!type || (json_is_string(type) && strcmp(json_string_value(type), "PUT") == 0))
			e->type = ETCD_EV_PUT;
		else if (json_is_string(type) && strcmp(json_string_value(type), "DELETE") == 0)
			e->type = ETCD_EV_DELETE;
		else
			return gw_errf(err, "%s: unknown type", what);
		if (parse_kv(json_object_get(ev, "kv"), &e->kv, err, what) != 0)
			return -1;
		out->n_events = i + 1;
	}
	return 0;
}

int etcd_parse_watch(const char *text, size_t len, struct etcd_watch_msg *out, struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	if (etcd_parse_error(text, len, &out->err)) {
		out->is_error = 1;
		return 0;
	}
	json_t *root = load(text, len, err, "watch answer");
	if (!root)
		return -1;
	int rc = -1;
	const json_t *r = json_object_get(root, "result");
	if (!json_is_object(r)) {
		gw_errf(err, "watch answer: no result");
		goto done;
	}
	if (json_object_get(r, "header") &&
	    get_header_revision(r, &out->revision, err, "watch answer") != 0)
		goto done;
	out->created = get_bool(r, "created");
	out->canceled = get_bool(r, "canceled");
	if (get_int64(r, "compact_revision", &out->compact_revision) != 0) {
		gw_errf(err, "watch answer: compact_revision is not an int64");
		goto done;
	}
	copy_str(out->cancel_reason, sizeof out->cancel_reason,
	         json_object_get(r, "cancel_reason"));
	if (parse_events(json_object_get(r, "events"), out, err) != 0)
		goto done;
	rc = 0;
done:
	json_decref(root);
	if (rc != 0)
		etcd_watch_msg_free(out);
	return rc;
}

void etcd_watch_msg_free(struct etcd_watch_msg *m)
{
	for (size_t i = 0; i < m->n_events; i++)
		kv_free(&m->events[i].kv);
	free(m->events);
	m->events = NULL;
	m->n_events = 0;
}
