/*
 * The status page (see status_page.h). The markup here and the page's script build the same
 * ids and classes from the same documents; what the admin sent is always escaped. The
 * policy's hashes are computed from the built-in template on each request (two SHA-256 of a
 * few kilobytes): nothing to keep in step by hand, and no state.
 */
#include "ops/status_page.h"

#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/history_list.h"
#include "shared/strbuf.h"

#define MARKER "<!--@DATA@-->"

/* ---------------------------------------------------------------- the policy */

/* The text between <TAG> (at the start of a line) and </TAG> in the template. */
static int inline_block(const char *tag, const char **start, size_t *len)
{
	char open[16], close[16];
	snprintf(open, sizeof open, "\n<%s>", tag);
	snprintf(close, sizeof close, "</%s>", tag);
	const char *a = strstr(status_page_html, open);
	const char *b = a ? strstr(a, close) : NULL;
	if (!a || !b)
		return -1;
	*start = a + strlen(open);
	*len = (size_t)(b - *start);
	return 0;
}

static int sha256_b64(const char *tag, char out[64])
{
	const char *text;
	size_t len;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	if (inline_block(tag, &text, &len) != 0 ||
	    EVP_Digest(text, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32)
		return -1;
	EVP_EncodeBlock((unsigned char *)out, md, (int)n); /* 44 characters and a NUL */
	return 0;
}

int status_page_csp(char *buf, size_t cap)
{
	char script[64], style[64];
	if (sha256_b64("script", script) != 0 || sha256_b64("style", style) != 0)
		return -1;
	int n = snprintf(buf, cap,
	                 "default-src 'none'; script-src 'sha256-%s'; style-src 'sha256-%s'; "
	                 "connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; "
	                 "frame-ancestors 'none'",
	                 script, style);
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* ---------------------------------------------------------------- text */

static void esc(struct strbuf *b, const char *s)
{
	for (const char *p = s ? s : ""; *p; p++) {
		switch (*p) {
		case '&':
			strbuf_adds(b, "&amp;");
			break;
		case '<':
			strbuf_adds(b, "&lt;");
			break;
		case '>':
			strbuf_adds(b, "&gt;");
			break;
		case '"':
			strbuf_adds(b, "&quot;");
			break;
		case '\'':
			strbuf_adds(b, "&#39;");
			break;
		default:
			strbuf_add(b, p, 1);
		}
	}
}

/* <TAG class="CLS">text</TAG>, the text escaped. */
static void elem(struct strbuf *b, const char *tag, const char *cls, const char *text)
{
	strbuf_addf(b, "<%s", tag);
	if (cls)
		strbuf_addf(b, " class=\"%s\"", cls);
	strbuf_adds(b, ">");
	esc(b, text);
	strbuf_addf(b, "</%s>", tag);
}

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int64_t integer(const json_t *o, const char *key)
{
	return (int64_t)json_integer_value(json_object_get(o, key));
}

/* As the script's age(): "4s", "3m 2s", "1h 2m", "2d 3h". */
static const char *age(const json_t *v, char buf[48])
{
	if (!json_is_number(v))
		return "-";
	long long s = (long long)json_number_value(v);
	if (s < 60)
		snprintf(buf, 48, "%llds", s);
	else if (s < 3600)
		snprintf(buf, 48, "%lldm %llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, 48, "%lldh %lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, 48, "%lldd %lldh", s / 86400, s % 86400 / 3600);
	return buf;
}

/* As the script's when(): "2024-05-01 12:00:01Z". */
static const char *when(int64_t ms, char buf[48])
{
	if (ms <= 0)
		return "-";
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, 48, "%Y-%m-%d %H:%M:%SZ", &tm);
	return buf;
}

static void md5cell(struct strbuf *b, const char *md5)
{
	strbuf_adds(b, "<code class=\"md5\" title=\"");
	esc(b, md5);
	strbuf_adds(b, "\" data-md5=\"");
	esc(b, md5);
	strbuf_adds(b, "\">");
	char shortened[9];
	snprintf(shortened, sizeof shortened, "%s", md5 && *md5 ? md5 : "-");
	esc(b, shortened);
	strbuf_adds(b, "</code>");
}

static void td(struct strbuf *b, const char *cls, const char *text)
{
	strbuf_adds(b, "<td>");
	if (cls)
		elem(b, "span", cls, text);
	else
		esc(b, text);
	strbuf_adds(b, "</td>");
}

static void table_head(struct strbuf *b, const char *id, const char *const *heads)
{
	strbuf_addf(b, "<table id=\"%s\"><thead><tr>", id);
	for (; *heads; heads++)
		elem(b, "th", NULL, *heads);
	strbuf_adds(b, "</tr></thead><tbody>");
}

/* ---------------------------------------------------------------- sections */

static void overview(struct strbuf *b, const json_t *st)
{
	int healthy = json_is_true(json_object_get(st, "healthy"));
	int paused = json_is_true(json_object_get(st, "paused"));
	char up[48], line[160];
	snprintf(line, sizeof line, "version %s, up %s",
	         str(st, "version") ? str(st, "version") : "?",
	         age(json_object_get(st, "uptimeSeconds"), up));
	strbuf_adds(b, "<div id=\"overview\">");
	elem(b, "span", healthy ? "badge ok" : "badge bad", healthy ? "healthy" : "unhealthy");
	strbuf_adds(b, " ");
	elem(b, "span", paused ? "badge warn" : "badge ok", paused ? "paused" : "delivering");
	strbuf_adds(b, " ");
	elem(b, "span", "muted", line);
	if (!healthy) { /* the reason; a healthy agent's is "ok", which the badge says */
		strbuf_adds(b, " ");
		elem(b, "span", "bad", str(st, "health"));
	}
	strbuf_adds(b, "</div>\n");
}

static void source(struct strbuf *b, const json_t *st)
{
	const json_t *src = json_object_get(st, "source");
	char title[256], buf[48];
	snprintf(title, sizeof title, "Source: %s (%s)", str(src, "name") ? str(src, "name") : "?",
	         str(src, "type") ? str(src, "type") : "?");
	strbuf_adds(b, "<section id=\"source\">");
	elem(b, "h2", NULL, title);
	static const char *const heads[] = {"connection",        "state",      "last success",
	                                    "failures in a row", "last error", NULL};
	table_head(b, "connections", heads);
	const json_t *c;
	size_t i;
	json_array_foreach(json_object_get(src, "connections"), i, c)
	{
		const char *state = str(c, "state");
		int ok = state && (!strcmp(state, "polling") || !strcmp(state, "connected")) &&
		         integer(c, "consecutiveFailures") == 0;
		char since[64], fails[32];
		const json_t *s = json_object_get(c, "secondsSinceSuccess");
		if (json_is_number(s))
			snprintf(since, sizeof since, "%s ago", age(s, buf));
		else
			snprintf(since, sizeof since, "-");
		snprintf(fails, sizeof fails, "%lld", (long long)integer(c, "consecutiveFailures"));
		strbuf_adds(b, "<tr><td>");
		elem(b, "code", NULL, str(c, "url"));
		strbuf_adds(b, "</td>");
		td(b, ok ? "ok" : "warn", state);
		td(b, NULL, since);
		td(b, NULL, fails);
		td(b, str(c, "lastError") ? "bad" : NULL,
		   str(c, "lastError") ? str(c, "lastError") : "-");
		strbuf_adds(b, "</tr>");
	}
	strbuf_adds(b, "</tbody></table></section>\n");
}

static void groups(struct strbuf *b, const json_t *st)
{
	strbuf_adds(b, "<section id=\"groups\">");
	elem(b, "h2", NULL, "Groups");
	static const char *const heads[] = {"group", "version", "lastModifyTime", "items", "age",
	                                    "from",  NULL};
	table_head(b, "groups-table", heads);
	const char *name;
	const json_t *g;
	json_object_foreach((json_t *)json_object_get(st, "groups"), name, g)
	{
		strbuf_adds(b, "<tr id=\"group-");
		esc(b, name);
		strbuf_adds(b, "\"><td>");
		elem(b, "span", "g", name);
		strbuf_adds(b, "</td>");
		if (!json_is_object(g)) {
			td(b, "bad", "nothing held");
			for (int k = 0; k < 4; k++)
				td(b, NULL, "-");
			strbuf_adds(b, "</tr>");
			continue;
		}
		char date[48], items[32], buf[48];
		const char *lmt =
		    when(integer(g, "lastModifyTime"), date); /* epoch ms, as a date */
		snprintf(items, sizeof items, "%lld", (long long)integer(g, "items"));
		strbuf_adds(b, "<td>");
		md5cell(b, str(g, "md5"));
		strbuf_adds(b, "</td>");
		td(b, NULL, lmt);
		td(b, NULL, items);
		td(b, NULL, age(json_object_get(g, "ageSeconds"), buf));
		if (json_is_true(json_object_get(g, "fromSnapshot")))
			td(b, "warn", "snapshot (stale)");
		else
			td(b, NULL, str(g, "source"));
		strbuf_adds(b, "</tr>");
	}
	strbuf_adds(b, "</tbody></table></section>\n");
}

/* Why a subscriber's group is not in step (the script's behind()). */
static void behind(struct strbuf *b, const json_t *st, const json_t *g)
{
	long long fails = (long long)integer(g, "consecutiveFailures");
	if (json_is_true(json_object_get(st, "paused")))
		esc(b, "paused");
	else if (fails > 0) {
		strbuf_addf(b, "refused %lld in a row: ", fails);
		esc(b, str(g, "lastError"));
	} else if (!str(g, "md5"))
		esc(b, "not delivered yet");
	else
		esc(b, "delivering");
}

static void subscribers(struct strbuf *b, const json_t *st)
{
	strbuf_adds(b, "<section id=\"subscribers\">");
	elem(b, "h2", NULL, "Subscribers");
	static const char *const heads[] = {"subscriber", "plugin",  "state",
	                                    "applied",    "refused", NULL};
	table_head(b, "subscribers-table", heads);
	const json_t *s;
	size_t i;
	json_array_foreach(json_object_get(st, "subscribers"), i, s)
	{
		strbuf_adds(b, "<tr id=\"subscriber-");
		esc(b, str(s, "name"));
		strbuf_adds(b, "\"><td>");
		elem(b, "span", "g", str(s, "name"));
		strbuf_adds(b, "</td>");
		td(b, NULL, str(s, "plugin") ? str(s, "plugin") : "-");
		strbuf_adds(b, "<td><span>");
		const char *name;
		const json_t *g;
		int late = 0;
		json_object_foreach((json_t *)json_object_get(s, "groups"), name, g)
		{
			if (json_is_true(json_object_get(g, "inStep")))
				continue;
			if (late++)
				strbuf_adds(b, "<br>");
			char head[96];
			snprintf(head, sizeof head, "behind on %s: ", name);
			elem(b, "span", "warn", head);
			behind(b, st, g);
		}
		if (!late)
			elem(b, "span", "ok", "in step");
		strbuf_adds(b, "</span></td>");
		char n1[32], n2[32];
		snprintf(n1, sizeof n1, "%lld", (long long)integer(s, "applies"));
		snprintf(n2, sizeof n2, "%lld", (long long)integer(s, "failures"));
		td(b, NULL, n1);
		td(b, NULL, n2);
		strbuf_adds(b, "</tr>");
	}
	strbuf_adds(b, "</tbody></table></section>\n");
}

/* The keys of one entry: "+a, +b  ~c (+2 more)", the kinds it did not change left out. */
static void keys(struct strbuf *b, const struct history_kind kinds[HISTORY_KINDS])
{
	int any = 0;
	for (size_t k = 0; k < HISTORY_KINDS; k++) {
		if (!kinds[k].count)
			continue;
		if (any++)
			strbuf_adds(b, "  ");
		const json_t *key;
		size_t i;
		json_array_foreach(kinds[k].first, i, key)
		{
			if (i)
				strbuf_adds(b, ", ");
			esc(b, kinds[k].sign);
			esc(b, json_string_value(key));
			const char *name = json_string_value(json_array_get(kinds[k].names, i));
			if (name) { /* a selector's or rule's name beside its id, as the log shows
				     */
				strbuf_adds(b, " (");
				esc(b, name);
				strbuf_adds(b, ")");
			}
		}
		if (kinds[k].more)
			strbuf_addf(b, " (+%lld more)", kinds[k].more);
	}
}

static void change_item(struct strbuf *b, const struct history_change *c)
{
	const json_t *e = c->e;
	struct history_kind kinds[HISTORY_KINDS];
	int counted = history_kinds(e, kinds);
	char buf[48];
	strbuf_adds(b, "<li class=\"change\" data-group=\"");
	esc(b, c->group);
	strbuf_adds(b, "\" data-md5=\"");
	esc(b, str(e, "md5"));
	strbuf_adds(b, "\">");
	elem(b, "time", NULL, when(c->at, buf));
	strbuf_adds(b, " ");
	elem(b, "span", "g", c->group);
	strbuf_adds(b, " ");
	md5cell(b, str(e, "md5"));
	strbuf_adds(b, " <span class=\"counts\">");
	if (counted)
		strbuf_addf(b, "+%lld ~%lld -%lld", kinds[HISTORY_ADDED].count,
		            kinds[HISTORY_UPDATED].count, kinds[HISTORY_REMOVED].count);
	else
		strbuf_adds(b, "not counted");
	strbuf_adds(b, "</span> <span class=\"keys\">");
	if (counted)
		keys(b, kinds);
	strbuf_adds(b, "</span> <span class=\"muted\">from ");
	esc(b, str(e, "source"));
	strbuf_adds(b, "</span><ul class=\"outcomes\">");
	const char *name;
	const json_t *o;
	json_object_foreach((json_t *)json_object_get(e, "subscribers"), name, o)
	{
		const char *state = str(o, "state") ? str(o, "state") : "?";
		strbuf_adds(b, "<li class=\"");
		esc(b, state);
		strbuf_adds(b, "\">");
		esc(b, name);
		strbuf_adds(b, ": ");
		esc(b, state);
		if (integer(o, "at") > 0) {
			strbuf_adds(b, " ");
			esc(b, when(integer(o, "at"), buf));
		}
		if (!strcmp(state, "refused")) {
			strbuf_adds(b, ": ");
			esc(b, str(o, "reason"));
		} else if (integer(o, "refusals") > 0)
			strbuf_addf(b, " (after %lld refusal(s))",
			            (long long)integer(o, "refusals"));
		strbuf_adds(b, "</li>");
	}
	strbuf_adds(b, "</ul></li>");
}

static int timeline(struct strbuf *b, const json_t *hist)
{
	struct history_change *all;
	size_t n;
	if (history_list(hist, &all, &n) != 0)
		return -1;
	strbuf_adds(b, "<section id=\"timeline\">");
	elem(b, "h2", NULL, "Recent changes");
	if (!n)
		elem(b, "p", "muted", "No change recorded yet.");
	else {
		strbuf_adds(b, "<ol class=\"timeline\" id=\"timeline-list\">");
		for (size_t i = 0; i < n && i < STATUS_PAGE_TIMELINE; i++)
			change_item(b, &all[i]);
		strbuf_adds(b, "</ol>");
	}
	strbuf_adds(b, "</section>\n");
	free(all);
	return 0;
}

int status_page_render(const json_t *status, const json_t *history, char **out, size_t *len)
{
	const char *mark = strstr(status_page_html, MARKER);
	if (!mark)
		return -1;
	struct strbuf b = {0};
	strbuf_reserve(&b, strlen(status_page_html) + 16384);
	strbuf_add(&b, status_page_html, (size_t)(mark - status_page_html));
	overview(&b, status);
	source(&b, status);
	groups(&b, status);
	subscribers(&b, status);
	if (history && timeline(&b, history) != 0)
		b.oom = 1;
	strbuf_adds(&b, mark + strlen(MARKER));
	size_t n = b.len;
	char *text = strbuf_finish(&b);
	if (!text)
		return -1;
	*out = text;
	*len = n;
	return 0;
}
