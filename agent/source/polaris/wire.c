/*
 * The Polaris source's requests (see wire.h).
 */
#include "source/polaris/wire.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int polaris_json_string(struct strbuf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	strbuf_add(b, "\"", 1);
	size_t run = 0; /* bytes since the last escape, appended at once */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		strbuf_add(b, s + run, i - run);
		run = i + 1;
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			strbuf_add(b, esc, 2);
		} else {
			char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			strbuf_add(b, esc, 6);
		}
	}
	strbuf_add(b, s + run, len - run);
	return strbuf_add(b, "\"", 1);
}

int polaris_get_path(struct strbuf *b, const char *ns, const char *group, const char *file,
                     size_t file_len)
{
	char *name = strndup(file, file_len);
	if (!name) {
		b->oom = 1;
		return -1;
	}
	strbuf_adds(b, "/config/v1/GetConfigFile?namespace=");
	strbuf_add_escaped(b, ns);
	strbuf_adds(b, "&group=");
	strbuf_add_escaped(b, group);
	strbuf_adds(b, "&fileName=");
	strbuf_add_escaped(b, name);
	free(name);
	return strbuf_adds(b, "&version=0");
}

int polaris_watch_begin(struct strbuf *b)
{
	return strbuf_adds(b, "{\"watch_files\":[");
}

/* The field: the digits, '"', then spaces up to POLARIS_VERSION_FIELD bytes (a uint64 has
 * at most 20 digits). */
static void put_version(char *field, uint64_t version)
{
	char digits[24];
	int n = snprintf(digits, sizeof digits, "%" PRIu64, version);
	memcpy(field, digits, (size_t)n);
	field[n] = '"';
	memset(field + n + 1, ' ', (size_t)(POLARIS_VERSION_FIELD - n - 1));
}

int polaris_watch_add(struct strbuf *b, const char *ns, const char *group, const char *file,
                      size_t file_len, uint64_t version, size_t *at)
{
	if (b->len && b->p[b->len - 1] == '}')
		strbuf_add(b, ",", 1);
	strbuf_adds(b, "{\"namespace\":");
	polaris_json_string(b, ns, strlen(ns));
	strbuf_adds(b, ",\"group\":");
	polaris_json_string(b, group, strlen(group));
	strbuf_adds(b, ",\"file_name\":");
	polaris_json_string(b, file, file_len);
	strbuf_adds(b, ",\"version\":\"");
	char field[POLARIS_VERSION_FIELD];
	put_version(field, version);
	if (at)
		*at = b->len;
	strbuf_add(b, field, sizeof field);
	return strbuf_add(b, "}", 1);
}

void polaris_watch_patch(char *body, size_t at, uint64_t version)
{
	put_version(body + at, version);
}

int polaris_watch_end(struct strbuf *b)
{
	return strbuf_adds(b, "]}");
}
