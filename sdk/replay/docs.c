/* Reading group documents for gwsync-replay (see docs.h). */
#include "docs.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/jspan.h"
#include "model/groups.h"
#include "model/model.h"
#include "store/journal.h"
#include "store/snapshot.h"

static int group_of(const char *name, size_t len)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (strlen(gw_group_name((enum gw_group)g)) == len &&
		    strncmp(gw_group_name((enum gw_group)g), name, len) == 0)
			return g;
	return -1;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n - 1, f);
		if (n < cap - 1)
			break;
		char *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	int bad = ferror(f);
	fclose(f);
	if (!buf || bad) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The group of a document: its "group" member, else its file's name (RULE.json). The
 * member is found by a walk of the top-level object (core/jspan.h), not by a parse of the
 * whole document: a snapshot may be tens of megabytes, and the model parses it anyway.
 * A document that is not JSON is the model's to refuse, with its reason. */
static int doc_group(const char *path, const char *text, size_t len, struct gw_err *err)
{
	const char *end = text + len, *p = jspan_ws(text, end);
	const char *v = p < end && *p == '{' ? jspan_member(p, end, "group") : NULL;
	const char *vend = v ? jspan_skip(v, end) : NULL;
	json_t *member = vend ? json_loadb(v, (size_t)(vend - v), JSON_DECODE_ANY, NULL) : NULL;
	const char *name = json_string_value(member);
	int g;
	if (name) {
		g = group_of(name, strlen(name));
		if (g < 0)
			gw_errf(err, "%s: unknown group \"%s\"", path, name);
		json_decref(member);
		return g;
	}
	json_decref(member);
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	const char *dot = strchr(base, '.');
	g = group_of(base, dot ? (size_t)(dot - base) : strlen(base));
	if (g < 0)
		gw_errf(err, "%s: no \"group\" member and the file is not named GROUP.json", path);
	return g;
}

int replay_doc_group(const char *path, struct gw_err *err)
{
	size_t len = 0;
	char *text = slurp(path, &len);
	if (!text)
		return gw_errf(err, "%s: cannot read", path);
	int g = doc_group(path, text, len, err);
	free(text);
	return g;
}

/* path is DIR/GROUP.json with DIR/GROUP.journal beside it: the group, else -1. */
static int journaled(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	const char *dot = strrchr(base, '.');
	if (!dot || strcmp(dot, ".json") != 0)
		return -1;
	int g = group_of(base, (size_t)(dot - base));
	if (g < 0)
		return -1;
	snprintf(dir, cap, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
	char journal[4200];
	journal_path(journal, sizeof journal, dir, (enum gw_group)g);
	struct stat sb;
	return stat(journal, &sb) == 0 ? g : -1;
}

int replay_read_doc(const char *path, struct group_data **out, char *note, size_t cap,
                    struct gw_err *err)
{
	char dir[4096];
	note[0] = '\0';
	int jg = journaled(path, dir, sizeof dir);
	if (jg >= 0) {
		size_t replayed = 0;
		struct gw_err tail = {0};
		int rc = snapshot_read_journal(dir, (enum gw_group)jg, out, &replayed, &tail, err);
		if (rc != 0)
			return rc < 0 ? -1 : gw_errf(err, "%s: cannot read", path);
		(*out)->provisional = 0; /* played as a version, like every document */
		snprintf(note, cap, "%s/%s.journal: %zu change(s) after the file applied%s%s", dir,
		         gw_group_name((enum gw_group)jg), replayed,
		         tail.msg[0] ? "; its end ignored, as the agent ignores it: " : "",
		         tail.msg);
		return 0;
	}
	size_t len = 0;
	char *text = slurp(path, &len);
	if (!text)
		return gw_errf(err, "%s: cannot read", path);
	int g = doc_group(path, text, len, err);
	if (g < 0) {
		free(text);
		return -1;
	}
	int rc = model_parse_group((enum gw_group)g, text, len, path, out, err);
	free(text);
	if (rc < 0)
		gw_err_prefix(err, "%s", path);
	return rc < 0 ? -1 : 0;
}

static const enum gw_group order[] = {
    GW_GROUP_PLUGIN,
    GW_GROUP_SELECTOR,
    GW_GROUP_RULE,
    GW_GROUP_APP_AUTH,
    GW_GROUP_META_DATA,
    GW_GROUP_PROXY_SELECTOR,
    GW_GROUP_DISCOVER_UPSTREAM,
    GW_GROUP_AI_PROXY_API_KEY,
};

int replay_expand(const char *arg, char ***paths, size_t *n, struct gw_err *err)
{
	struct stat sb;
	*paths = calloc(GW_GROUP_COUNT, sizeof **paths);
	*n = 0;
	if (!*paths)
		return gw_errf(err, "out of memory");
	if (stat(arg, &sb) != 0)
		return gw_errf(err, "%s: no such file or directory", arg);
	if (!S_ISDIR(sb.st_mode)) {
		if (!((*paths)[(*n)++] = strdup(arg)))
			return gw_errf(err, "out of memory");
		return 0;
	}
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		char p[4096];
		snprintf(p, sizeof p, "%s/%s.json", arg, gw_group_name(order[i]));
		if (stat(p, &sb) != 0)
			continue;
		if (!((*paths)[(*n)++] = strdup(p)))
			return gw_errf(err, "out of memory");
	}
	if (*n == 0)
		return gw_errf(err, "%s: no GROUP.json document in this directory", arg);
	return 0;
}

void replay_free_paths(char **paths, size_t n)
{
	for (size_t i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}
