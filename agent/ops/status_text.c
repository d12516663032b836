/*
 * The terminal summary (see status_text.h). Every line is built from the two documents
 * alone; the wording of "behind ... and why" is the page's (status_page.c).
 */
#include "ops/status_text.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ops/history_list.h"

static const char *str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static long long integer(const json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

/* `s` with control characters shown as \n, \t, \xHH: a terminal never obeys the admin's text. */
static void put(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

static const char *age(double seconds, char buf[32])
{
	long long s = (long long)seconds;
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(buf, 32, "%llds", s);
	else if (s < 3600)
		snprintf(buf, 32, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, 32, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else
		snprintf(buf, 32, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
	return buf;
}

static const char *when(long long ms, char buf[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%d %H:%M:%SZ", &tm);
	return buf;
}

static void source(FILE *out, const json_t *st)
{
	const json_t *src = json_object_get(st, "source");
	fprintf(out, "source:  ");
	put(out, str(src, "name"));
	fprintf(out, " (");
	put(out, str(src, "type"));
	fprintf(out, ")\n");
	const json_t *c;
	size_t i;
	char buf[32];
	json_array_foreach(json_object_get(src, "connections"), i, c)
	{
		fprintf(out, "  ");
		put(out, str(c, "url"));
		fprintf(out, "  ");
		put(out, str(c, "state"));
		const json_t *since = json_object_get(c, "secondsSinceSuccess");
		if (json_is_number(since))
			fprintf(out, ", last success %s ago", age(json_number_value(since), buf));
		else
			fprintf(out, ", no success yet");
		if (integer(c, "consecutiveFailures") > 0) {
			fprintf(out,
			        ", %lld failure(s) in a row: ", integer(c, "consecutiveFailures"));
			put(out, str(c, "lastError"));
		}
		fputc('\n', out);
	}
}

static void groups(FILE *out, const json_t *st)
{
	fprintf(out, "groups:\n");
	const char *name;
	const json_t *g;
	char buf[32];
	json_object_foreach((json_t *)json_object_get(st, "groups"), name, g)
	{
		fprintf(out, "  %-18s ", name);
		if (!json_is_object(g)) {
			fprintf(out, "nothing held yet\n");
			continue;
		}
		fprintf(out, "%.8s  lastModifyTime %lld  %lld items  age %s  from ", str(g, "md5"),
		        integer(g, "lastModifyTime"), integer(g, "items"),
		        age(json_number_value(json_object_get(g, "ageSeconds")), buf));
		if (json_is_true(json_object_get(g, "fromSnapshot")))
			fprintf(out, "the snapshot (stale until an admin answers)");
		else
			put(out, str(g, "source"));
		fputc('\n', out);
	}
}

static void subscribers(FILE *out, const json_t *st)
{
	const json_t *subs = json_object_get(st, "subscribers");
	fprintf(out, "subscribers:%s\n", json_array_size(subs) ? "" : " none");
	const json_t *s;
	size_t i;
	json_array_foreach(subs, i, s)
	{
		fprintf(out, "  ");
		put(out, str(s, "name"));
		fprintf(out, " (");
		put(out, str(s, "plugin"));
		fprintf(out, "): ");
		if (json_is_true(json_object_get(s, "inStep"))) {
			fprintf(out, "in step\n");
			continue;
		}
		fprintf(out, "behind\n");
		const char *name;
		const json_t *g;
		json_object_foreach((json_t *)json_object_get(s, "groups"), name, g)
		{
			if (json_is_true(json_object_get(g, "inStep")))
				continue;
			fprintf(out, "    %s: ", name);
			if (json_is_true(json_object_get(st, "paused")))
				fprintf(out, "paused");
			else if (integer(g, "consecutiveFailures") > 0) {
				fprintf(out, "refused %lld in a row: ",
				        integer(g, "consecutiveFailures"));
				put(out, str(g, "lastError"));
			} else if (!json_is_string(json_object_get(g, "md5")))
				fprintf(out, "not delivered yet");
			else
				fprintf(out, "delivering");
			fputc('\n', out);
		}
	}
}

/* The keys of one entry: " +a +b ~c (~2 more)". */
static void keys(FILE *out, const struct history_kind kinds[HISTORY_KINDS])
{
	for (size_t k = 0; k < HISTORY_KINDS; k++) {
		const json_t *key;
		size_t i;
		json_array_foreach(kinds[k].first, i, key)
		{
			fprintf(out, " %s", kinds[k].sign);
			put(out, json_string_value(key) ? json_string_value(key) : "");
		}
		if (kinds[k].more)
			fprintf(out, " (%s%lld more)", kinds[k].sign, kinds[k].more);
	}
}

static int changes(FILE *out, const json_t *hist, int64_t now_ms)
{
	struct history_change *all;
	size_t n;
	if (history_list(hist, &all, &n) != 0)
		return -1;
	fprintf(out, "last changes:%s\n", n ? "" : " none recorded");
	char buf[32], ago[32];
	for (size_t i = 0; i < n && i < STATUS_TEXT_CHANGES; i++) {
		const json_t *e = all[i].e;
		struct history_kind kinds[HISTORY_KINDS];
		fprintf(out, "  %s (%s ago)  %-18s %.8s  ", when(all[i].at, buf),
		        age((double)(now_ms - all[i].at) / 1000.0, ago), all[i].group,
		        str(e, "md5"));
		if (history_kinds(e, kinds))
			fprintf(out, "+%lld ~%lld -%lld", kinds[HISTORY_ADDED].count,
			        kinds[HISTORY_UPDATED].count, kinds[HISTORY_REMOVED].count);
		else
			fprintf(out, "(not counted)");
		keys(out, kinds);
		fprintf(out, "  from ");
		put(out, str(e, "source"));
		fputc('\n', out);
		const char *sub;
		const json_t *o;
		json_object_foreach((json_t *)json_object_get(e, "subscribers"), sub, o)
		{
			fprintf(out, "      ");
			put(out, sub);
			fprintf(out, ": %s", str(o, "state"));
			if (integer(o, "at") > 0)
				fprintf(out, " %s", when(integer(o, "at"), buf));
			if (!strcmp(str(o, "state"), "refused")) {
				fprintf(out, ": ");
				put(out, str(o, "reason"));
			} else if (integer(o, "refusals") > 0)
				fprintf(out, " (after %lld refusal(s))", integer(o, "refusals"));
			fputc('\n', out);
		}
	}
	free(all);
	return 0;
}

int status_text_render(const json_t *reply, int64_t now_ms, FILE *out)
{
	const json_t *st = json_object_get(reply, "status");
	const json_t *hist = json_object_get(reply, "history");
	if (!json_is_object(st) || !json_is_object(json_object_get(st, "groups")))
		return -1;
	char buf[32];
	int healthy = json_is_true(json_object_get(st, "healthy"));
	fprintf(out, "gwsyncd %s, up %s: %s (", str(st, "version"),
	        age(json_number_value(json_object_get(st, "uptimeSeconds")), buf),
	        healthy ? "healthy" : "UNHEALTHY");
	put(out, str(st, "health"));
	fprintf(out, ")\n");
	fprintf(out, "delivery: %s\n",
	        json_is_true(json_object_get(st, "paused"))
	            ? "PAUSED (gwsyncd --resume delivers again)"
	            : "running");
	source(out, st);
	groups(out, st);
	subscribers(out, st);
	if (json_is_object(hist) && changes(out, hist, now_ms) != 0)
		return -1;
	return 0;
}
