/*
 * Polaris's ConfigClientResponse (see reply.h).
 */
#include "source/polaris/reply.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A wrapper value as jsonpb writes it: the bare value; the Go unmarshaler also reads
 * {"value": v}, so that is accepted too. NULL for null or absent. */
static const json_t *unwrap(const json_t *v)
{
	if (json_is_object(v) && json_object_size(v) == 1 && json_object_get(v, "value"))
		v = json_object_get(v, "value");
	return v && !json_is_null(v) ? v : NULL;
}

/* An unsigned integer: a JSON number, or a string of digits. -1 if neither, or too big. */
static int get_u64(const json_t *v, uint64_t max, uint64_t *out)
{
	*out = 0;
	if (!(v = unwrap(v)))
		return 0;
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);
		if (x < 0 || (uint64_t)x > max)
			return -1;
		*out = (uint64_t)x;
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	const char *s = json_string_value(v);
	if (*s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end || x > max)
		return -1;
	*out = (uint64_t)x;
	return 0;
}

/* A string member: a malloc'd copy (NUL-terminated; may hold NULs: len says), NULL for
 * null or absent. -1 if present and not a string, or out of memory. */
static int get_str(const json_t *o, const char *name, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	const json_t *v = unwrap(json_object_get(o, name));
	if (!v)
		return 0;
	if (!json_is_string(v))
		return -1;
	size_t n = json_string_length(v);
	char *s = malloc(n + 1);
	if (!s)
		return -1;
	memcpy(s, json_string_value(v), n);
	s[n] = '\0';
	*out = s;
	*len = n;
	return 0;
}

int polaris_reply_parse(const char *body, size_t len, struct polaris_reply *out, struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	json_error_t je;
	json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return gw_errf(err, "not JSON: %s (at byte %d)", je.text, je.position);
	int rc = -1;
	uint64_t code;
	if (!json_is_object(root)) {
		gw_errf(err, "not a JSON object");
		goto done;
	}
	if (!unwrap(json_object_get(root, "code"))) {
		gw_errf(err, "no code");
		goto done;
	}
	if (get_u64(json_object_get(root, "code"), UINT32_MAX, &code) != 0) {
		gw_errf(err, "code is not a number");
		goto done;
	}
	out->code = (uint32_t)code;
	const json_t *info = unwrap(json_object_get(root, "info"));
	if (json_is_string(info))
		snprintf(out->info, sizeof out->info, "%s", json_string_value(info));
	const json_t *file = json_object_get(root, "configFile");
	if (file && !json_is_null(file)) {
		if (!json_is_object(file)) {
			gw_errf(err, "configFile is not an object");
			goto done;
		}
		out->has_file = 1;
		if (get_str(file, "fileName", &out->file_name, &out->file_name_len) != 0) {
			gw_errf(err, "configFile.fileName is not a string");
			goto done;
		}
		if (get_str(file, "content", &out->content, &out->content_len) != 0) {
			gw_errf(err, "configFile.content is not a string");
			goto done;
		}
		if (get_u64(json_object_get(file, "version"), UINT64_MAX, &out->version) != 0) {
			gw_errf(err, "configFile.version is not an unsigned number");
			goto done;
		}
	}
	rc = 0;
done:
	json_decref(root);
	if (rc != 0)
		polaris_reply_free(out);
	return rc;
}

void polaris_reply_free(struct polaris_reply *r)
{
	free(r->file_name);
	free(r->content);
	r->file_name = r->content = NULL;
	r->file_name_len = r->content_len = 0;
}

int polaris_code_is_auth(uint32_t code)
{
	return code / 1000 == 401 || code / 1000 == 403;
}
