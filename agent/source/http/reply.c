/*
 * Judging admin replies (see reply.h). Classification re-reads the body only on the
 * failure path, so a good reply is parsed exactly once.
 */
#include "source/http/reply.h"

#include <jansson.h>
#include <stdio.h>

#include "model/model.h"

enum sync_fail reply_classify(const char *body, size_t len, enum sync_fail otherwise)
{
	json_t *root = json_loadb(body, len, 0, NULL);
	const json_t *code = json_object_get(root, "code"); /* NULL-safe */
	enum sync_fail f = SYNC_FAIL_PARSE;
	if (json_is_integer(code))
		f = json_integer_value(code) == 200 ? otherwise : SYNC_FAIL_CODE;
	json_decref(root);
	return f;
}

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
                       size_t len, enum sync_fail *why, struct gw_err *err)
{
	if (status == 200)
		return 0;
	char ex[201];
	reply_excerpt(body, len, ex, sizeof ex);
	*why = SYNC_FAIL_HTTP;
	return gw_errf(err, "server %s: %s: HTTP %ld%s%s", server, what, status, ex[0] ? ": " : "",
	               ex);
}

int reply_envelope(const char *server, const char *what, const char *body, size_t len,
                   struct json_t **root, struct json_t **data, enum sync_fail *why,
                   struct gw_err *err)
{
	if (model_parse_envelope(body, len, root, data, err) == 0)
		return 0;
	*why = reply_classify(body, len, SYNC_FAIL_PARSE);
	return gw_err_prefix(err, "server %s: %s", server, what);
}
