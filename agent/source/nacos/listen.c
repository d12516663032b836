/*
 * The listener's wire forms (listen.h). The answer is decoded into one buffer and checked
 * whole before any key is handed out, so a half-bad answer changes nothing.
 */
#include "source/nacos/listen.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORD '\x02'
#define LINE '\x01'

void nacos_md5_hex(const char *s, size_t n, char out[NACOS_MD5_HEX])
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;
	out[0] = '\0';
	if (EVP_Digest(s, n, d, &dl, EVP_md5(), NULL) != 1 || dl != 16)
		return;
	for (unsigned i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

int nacos_listen_begin(struct strbuf *b)
{
	return strbuf_adds(b, "Listening-Configs=");
}

/* Percent-encode n bytes (strbuf_add_escaped wants a string) straight into the buffer:
 * bodies of 10,000 keys are built again for every change their listener reports. */
static int add_escaped_n(struct strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t need = b->len + 3 * n + 1;
	if (b->oom || (need > b->cap && strbuf_reserve(b, need > 2 * b->cap ? need : 2 * b->cap)))
		return -1;
	char *o = b->p + b->len;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	b->len = (size_t)(o - b->p);
	b->p[b->len] = '\0';
	return 0;
}

int nacos_listen_add(struct strbuf *b, const char *data_id, size_t id_len, const char *group,
                     const char *md5, const char *tenant)
{
	add_escaped_n(b, data_id, id_len);
	strbuf_add(b, "%02", 3);
	add_escaped_n(b, group, strlen(group));
	strbuf_add(b, "%02", 3);
	add_escaped_n(b, md5 ? md5 : "", md5 ? strlen(md5) : 0);
	if (tenant && *tenant) {
		strbuf_add(b, "%02", 3);
		add_escaped_n(b, tenant, strlen(tenant));
	}
	return strbuf_add(b, "%01", 3);
}

static int unhex(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* URL-decode (Java's URLDecoder: '+' is a space) into out (at least len bytes). */
static long url_decode(const char *s, size_t len, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '%') {
			if (i + 2 >= len)
				return -1;
			int h = unhex(s[i + 1]), l = unhex(s[i + 2]);
			if (h < 0 || l < 0)
				return -1;
			out[o++] = (char)(h << 4 | l);
			i += 2;
		} else {
			out[o++] = s[i] == '+' ? ' ' : s[i];
		}
	}
	return (long)o;
}

long nacos_listen_parse(const char *body, size_t len, const char *group, const char *tenant,
                        nacos_changed_fn fn, void *ctx)
{
	while (len && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	char *d = malloc(len + 1);
	if (!d)
		return -1;
	long n = url_decode(body, len, d);
	if (n < 0) {
		free(d);
		return -1;
	}
	/* check every line first: "id ^B group" or "id ^B group ^B tenant", ^A-ended */
	long keys = 0;
	for (long i = 0, start = 0; i < n; i++) {
		if (d[i] != LINE)
			continue;
		int words = 1;
		for (long j = start; j < i; j++)
			words += d[j] == WORD;
		if (words < 2 || words > 3 || d[start] == WORD) {
			free(d);
			return -1;
		}
		keys++;
		start = i + 1;
	}
	if (n > 0 && d[n - 1] != LINE) {
		free(d);
		return -1;
	}
	size_t glen = strlen(group), tlen = tenant ? strlen(tenant) : 0;
	for (long i = 0, start = 0; i < n; i++) {
		if (d[i] != LINE)
			continue;
		const char *id = d + start, *end = d + i;
		const char *w1 = memchr(id, WORD, (size_t)(end - id));
		const char *g = w1 + 1;
		const char *w2 = memchr(g, WORD, (size_t)(end - g));
		const char *t = w2 ? w2 + 1 : end;
		size_t gl = (size_t)((w2 ? w2 : end) - g), tl = (size_t)(end - t);
		start = i + 1;
		/* the public namespace's answer leaves the tenant out, whether it was asked as
		 * "" or (Nacos 2+) as "public" */
		int same_tenant = (tl == tlen && memcmp(t, tenant ? tenant : "", tl) == 0) ||
		                  (tl == 0 && tenant && strcmp(tenant, "public") == 0);
		if (gl != glen || memcmp(g, group, glen) != 0 || !same_tenant)
			continue;
		if (fn(ctx, id, (size_t)(w1 - id)) != 0)
			break;
	}
	free(d);
	return keys;
}
