/*
 * Redacting an item's secret fields (see redact.h). Parsing uses jansson, which decodes
 * escapes, so a key is compared as the admin meant it, not as it was spelled.
 */
#include "ops/redact.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ShenYu's credentials: APP_AUTH's appSecret, AI_PROXY_API_KEY's proxy and real keys, and
 * what plugins keep in their config and rule handles (the AI proxy's apiKey, JWT's
 * secretKey, cryptor keys, logging back ends' access keys and passwords). docs/operations.md
 * lists them: change both together. */
const char *const redact_fields[] = {
    "appSecret",  "proxyApiKey", "realApiKey", "apiKey",       "secretKey",       "secret",
    "password",   "token",       "accessKey",  "accessSecret", "accessKeySecret", "secretAccessKey",
    "privateKey", "encryptKey",  "decryptKey", NULL,
};

static int secret_name(const char *key)
{
	for (const char *const *f = redact_fields; *f; f++)
		if (strcasecmp(key, *f) == 0)
			return 1;
	return 0;
}

/* Could the text hold a secret field? Any name, in any case, or any escape at all. */
static int may_hold(const char *json)
{
	if (strchr(json, '\\'))
		return 1;
	for (const char *const *f = redact_fields; *f; f++)
		if (strcasestr(json, *f))
			return 1;
	return 0;
}

static size_t redact_value(json_t *v);

/* A string holding a JSON object or array (a plugin's config): redacted inside, in place. */
static size_t redact_embedded(json_t *s)
{
	const char *text = json_string_value(s);
	size_t i = strspn(text, " \t\r\n");
	if ((text[i] != '{' && text[i] != '[') || !may_hold(text))
		return 0;
	json_t *doc = json_loads(text, 0, NULL);
	if (!doc)
		return 0;
	size_t n = redact_value(doc);
	if (n) {
		char *again = json_dumps(doc, JSON_COMPACT);
		if (!again || json_string_set(s, again) != 0)
			json_string_set(s, REDACTED); /* never the secret, whatever fails */
		free(again);
	}
	json_decref(doc);
	return n;
}

static size_t redact_value(json_t *v)
{
	size_t n = 0;
	if (json_is_object(v)) {
		const char *key;
		json_t *m;
		json_object_foreach(v, key, m)
		{
			if (secret_name(key)) {
				json_object_set_new(v, key, json_string(REDACTED));
				n++;
			} else
				n += redact_value(m);
		}
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			n += redact_value(json_array_get(v, i));
	} else if (json_is_string(v)) {
		n += redact_embedded(v);
	}
	return n;
}

int redact_item(struct strbuf *b, const char *json, size_t len, size_t *redacted)
{
	if (!may_hold(json))
		return strbuf_add(b, json, len);
	json_t *doc = json_loadb(json, len, JSON_DECODE_ANY, NULL);
	if (!doc) /* not JSON (the model refuses such items): nothing of it is shown */
		return strbuf_adds(b, "\"" REDACTED "\"");
	size_t n = redact_value(doc);
	int rc;
	if (n == 0) {
		rc = strbuf_add(b, json, len);
	} else {
		char *text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
		rc = text ? strbuf_adds(b, text) : -1;
		free(text);
	}
	json_decref(doc);
	if (redacted)
		*redacted += n;
	return rc;
}
