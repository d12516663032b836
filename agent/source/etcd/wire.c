/*
 * Request bodies for etcd's JSON gateway (see wire.h), built with jansson so a key with any
 * bytes is escaped correctly (it is base64 anyway, but the password is not).
 */
#include "source/etcd/wire.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "source/b64.h"

size_t etcd_prefix_end(const char *prefix, size_t len, char *out)
{
	size_t n = len;
	while (n > 0 && (unsigned char)prefix[n - 1] == 0xff)
		n--;
	if (n == 0) {
		out[0] = '\0';
		return 1;
	}
	for (size_t i = 0; i + 1 < n; i++)
		out[i] = prefix[i];
	out[n - 1] = (char)((unsigned char)prefix[n - 1] + 1);
	return n;
}

/* Set key (and range_end for the prefix) in o; -1 on out of memory. */
static int set_prefix(json_t *o, const char *prefix, size_t len)
{
	char *end = malloc(len ? len : 1);
	if (!end)
		return -1;
	size_t elen = etcd_prefix_end(prefix, len, end);
	char *k = b64_encode(prefix, len), *e = b64_encode(end, elen);
	free(end);
	int bad = !k || !e || json_object_set_new(o, "key", json_string(k)) != 0 ||
	          json_object_set_new(o, "range_end", json_string(e)) != 0;
	free(k);
	free(e);
	return bad ? -1 : 0;
}

static int set_int64(json_t *o, const char *name, int64_t v)
{
	char text[24];
	snprintf(text, sizeof text, "%" PRId64, v);
	return json_object_set_new(o, name, json_string(text));
}

static char *dump(json_t *o, int bad)
{
	char *text = bad ? NULL : json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

char *etcd_body_range(const char *prefix, size_t len, int64_t revision)
{
	return etcd_body_range_page(prefix, len, NULL, 0, revision, 0);
}

char *etcd_body_range_page(const char *prefix, size_t len, const char *from, size_t from_len,
                           int64_t revision, int64_t limit)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = set_prefix(o, prefix, len) != 0;
	if (!bad && from) {
		char *k = b64_encode(from, from_len);
		bad = !k || json_object_set_new(o, "key", json_string(k)) != 0;
		free(k);
	}
	if (!bad && revision > 0)
		bad = set_int64(o, "revision", revision) != 0;
	if (!bad && limit > 0)
		bad = set_int64(o, "limit", limit) != 0;
	return dump(o, bad);
}

char *etcd_body_watch(const char *prefix, size_t len, int64_t start_revision)
{
	json_t *o = json_object(), *cr = json_object();
	if (!o || !cr) {
		json_decref(o);
		json_decref(cr);
		return NULL;
	}
	int bad = set_prefix(cr, prefix, len) != 0;
	if (!bad && start_revision > 0)
		bad = set_int64(cr, "start_revision", start_revision) != 0;
	bad = json_object_set_new(o, "create_request", cr) != 0 || bad;
	return dump(o, bad);
}

char *etcd_body_auth(const char *name, const char *password)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	int bad = json_object_set_new(o, "name", json_string(name ? name : "")) != 0;
	bad |= json_object_set_new(o, "password", json_string(password ? password : "")) != 0;
	return dump(o, bad);
}
