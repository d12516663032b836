/*
 * The table-driven walk of the configuration file (see config_walk.h): positioned
 * messages, the generic conversions, and the walk itself with its "did you mean"
 * suggestion for an unknown key.
 */
#include "config/config_walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/suggest.h"
#include "shared/units.h"

/* ---------------------------------------------------------------- messages */

int cfgw_err(struct loader *ld, const struct ynode *at, const char *path, const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return gw_errf(ld->err, "%s:%d:%d: %s%s%s", at->file, ytree_line(at), ytree_col(at),
	               path ? path : "", path && *path ? ": " : "", what);
}

/* A duration for a message, in the largest unit that states it exactly, preferring
 * seconds up to two minutes ("60s" reads better than "1m" next to a 60 s hold). */
void cfgw_fmt_duration(char *buf, size_t cap, int64_t ms)
{
	long long v = (long long)ms;
	if (v % 1000)
		snprintf(buf, cap, "%lldms", v);
	else if (v % 3600000 == 0 && v >= 7200000)
		snprintf(buf, cap, "%lldh", v / 3600000);
	else if (v % 60000 == 0 && v >= 120000)
		snprintf(buf, cap, "%lldm", v / 60000);
	else
		snprintf(buf, cap, "%llds", v / 1000);
}

void cfgw_path_join(char *buf, size_t cap, const char *parent, const char *key)
{
	if (parent && *parent)
		snprintf(buf, cap, "%s.%s", parent, key);
	else
		snprintf(buf, cap, "%s", key);
}

/* The text of a scalar, or NULL after an "expected ..." error. */
const char *cfgw_scalar(struct loader *ld, const struct ynode *v, const char *path,
                        const char *expected)
{
	if (v->type == YNODE_SCALAR)
		return v->text;
	cfgw_err(ld, v, path, "expected %s, got %s", expected, ytree_type_name(v));
	return NULL;
}

char **cfgw_field_str(void *base, const struct key *k)
{
	return (char **)((char *)base + k->off);
}

/* ---------------------------------------------------------------- generic loaders */

/* A string; empty is refused (use null or leave the key out for the default). */
int cfgw_string(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a string");
	if (!s)
		return -1;
	if (!*s)
		return cfgw_err(ld, v, path,
		                "must not be empty (leave the key out for the default)");
	if (!base)
		return 0;
	char **dst = cfgw_field_str(base, k);
	char *copy = strdup(s);
	if (!copy)
		return cfgw_err(ld, v, path, "out of memory");
	free(*dst);
	*dst = copy;
	return 0;
}

/* A string where empty means "none" (username). */
int cfgw_optional_string(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a string");
	if (!s)
		return -1;
	return *s ? cfgw_string(ld, k, v, path, base) : 0;
}

int cfgw_duration(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                  void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a duration like 200ms, 5s, 2m or 1h");
	int64_t ms;
	if (!s)
		return -1;
	if (units_duration_ms(s, &ms) < 0) {
		if (units_duration_fraction_ms(s, &ms) == 0) {
			char whole[32];
			cfgw_fmt_duration(whole, sizeof whole, ms);
			return cfgw_err(ld, v, path,
			                "fractions are not accepted: write %s for '%.100s'", whole,
			                s);
		}
		/* a bare number is the commonest slip: the unit it most likely meant */
		int bare = *s && strspn(s, "0123456789") == strlen(s) && strlen(s) < 12;
		return cfgw_err(
		    ld, v, path,
		    "expected a duration like 200ms, 5s, 2m or 1h (a unit is required), "
		    "got '%.100s'%s%s%s",
		    s, bare ? " (did you mean '" : "", bare ? s : "", bare ? "s'?)" : "");
	}
	if (ms < k->min) {
		char min[32];
		cfgw_fmt_duration(min, sizeof min, k->min);
		return cfgw_err(ld, v, path, "must be at least %s", min);
	}
	if (k->max > k->min && ms > k->max) {
		char max[32];
		cfgw_fmt_duration(max, sizeof max, k->max);
		return cfgw_err(ld, v, path, "must be at most %s", max);
	}
	if (base)
		*(int64_t *)((char *)base + k->off) = ms;
	return 0;
}

int cfgw_size(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a size like 65536, 512KiB or 64MiB");
	int64_t n;
	if (!s)
		return -1;
	if (units_size(s, &n) < 0)
		return cfgw_err(
		    ld, v, path,
		    "expected a size in bytes, or with KiB, MiB or GiB (64MiB), got '%.100s'", s);
	if (n < k->min)
		return cfgw_err(ld, v, path, "must be at least %lld bytes", (long long)k->min);
	if (base)
		*(int64_t *)((char *)base + k->off) = n;
	return 0;
}

int cfgw_mode(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "an octal file mode like \"0640\"");
	unsigned m;
	if (!s)
		return -1;
	if (units_mode(s, &m) < 0)
		return cfgw_err(
		    ld, v, path,
		    "expected an octal file mode like \"0640\" (quote it), got '%.100s'", s);
	if (base)
		*(unsigned *)((char *)base + k->off) = m;
	return 0;
}

int cfgw_int(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
             void *base)
{
	const char *s = cfgw_scalar(ld, v, path, "a whole number");
	int64_t n;
	if (!s)
		return -1;
	if (units_int(s, &n) < 0)
		return cfgw_err(ld, v, path, "expected a whole number, got '%.100s'", s);
	if (n < k->min || n > k->max)
		return cfgw_err(ld, v, path, "must be between %lld and %lld, got %lld",
		                (long long)k->min, (long long)k->max, (long long)n);
	if (base)
		*(int *)((char *)base + k->off) = (int)n;
	return 0;
}

int cfgw_bool(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
              void *base)
{
	const char *s = cfgw_scalar(ld, v, path, UNITS_BOOL_FORMS);
	int b;
	if (!s)
		return -1;
	if (units_bool(s, &b) < 0)
		return cfgw_err(ld, v, path, "expected " UNITS_BOOL_FORMS ", got '%.100s'", s);
	if (base)
		*(int *)((char *)base + k->off) = b;
	return 0;
}

int cfgw_submap(struct loader *ld, const struct key *k, const struct ynode *v, const char *path,
                void *base)
{
	return cfgw_map(ld, v, k->sub, path, base);
}

int cfgw_resync_interval(struct loader *ld, const struct key *k, const struct ynode *v,
                         const char *path, void *base)
{
	if (cfgw_duration(ld, k, v, path, base) < 0)
		return -1;
	int64_t ms = *(int64_t *)((char *)base + k->off);
	if (ms > 0 && ms < 1000)
		return cfgw_err(ld, v, path, "must be 0 (off) or at least 1s");
	return 0;
}

/* ---------------------------------------------------------------- the walk */

static const struct key *find_key(const struct key *keys, const char *name)
{
	for (const struct key *k = keys; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

/* Where else `name` is a key: the first path of a table under `keys` (depth first, as
 * "status.listen") that has it, other than the table `here`. 1 found, 0 not. */
static int key_elsewhere(const struct key *keys, const struct key *here, const char *name,
                         const char *prefix, char *out, size_t cap, int depth)
{
	if (!keys || depth > 4)
		return 0;
	if (keys != here && find_key(keys, name)) {
		cfgw_path_join(out, cap, prefix, name);
		return 1;
	}
	for (const struct key *k = keys; k->name; k++) {
		char sub[200];
		cfgw_path_join(sub, sizeof sub, prefix, k->name);
		if (k->sub && key_elsewhere(k->sub, here, name, sub, out, cap, depth + 1))
			return 1;
	}
	return 0;
}

static int unknown_key(struct loader *ld, const struct ynode *key, const struct key *keys,
                       const char *path)
{
	/* a key valid at another level (a line indented wrongly, usually): say where */
	char there[256];
	if (key_elsewhere(ld->root_keys, keys, key->text, "", there, sizeof there, 0)) {
		const char *dot = strrchr(there, '.');
		char where[300] = "";
		if (path && *path)
			snprintf(where, sizeof where, " in %s", path);
		if (dot)
			return cfgw_err(ld, key, NULL,
			                "unknown key '%.100s'%s: it belongs under `%.*s:` (%s); "
			                "check its indentation",
			                key->text, where, (int)(dot - there), there, there);
		return cfgw_err(ld, key, NULL,
		                "unknown key '%.100s'%s: it is a top-level key; check its "
		                "indentation",
		                key->text, where);
	}
	const char *names[32];
	size_t n = 0;
	char list[512] = "";
	size_t pos = 0;
	for (const struct key *k = keys; k->name && n < 32; k++) {
		names[n++] = k->name;
		if (pos < sizeof list)
			pos += (size_t)snprintf(list + pos, sizeof list - pos, "%s%s",
			                        pos ? ", " : "", k->name);
	}
	const char *best = suggest_closest(key->text, names, n);
	char where[300] = "";
	if (path && *path)
		snprintf(where, sizeof where, " in %s", path);
	if (best)
		return cfgw_err(ld, key, NULL, "unknown key '%.100s'%s (did you mean '%s'?)",
		                key->text, where, best);
	return cfgw_err(ld, key, NULL, "unknown key '%.100s'%s (valid keys here: %s)", key->text,
	                where, list);
}

/* Walk a map against its key table. A null value counts as absent: the default stays. */
int cfgw_map(struct loader *ld, const struct ynode *map, const struct key *keys, const char *path,
             void *base)
{
	if (map->type != YNODE_MAP)
		return cfgw_err(ld, map, path, "expected a map of keys, got %s",
		                ytree_type_name(map));
	for (size_t i = 0; i < map->n; i++) {
		const struct ynode *kn = map->keys[i], *v = map->items[i];
		const struct key *k = find_key(keys, kn->text);
		if (!k)
			return unknown_key(ld, kn, keys, path);
		if (v->type == YNODE_SCALAR && v->null)
			continue;
		char child[256];
		cfgw_path_join(child, sizeof child, path, k->name);
		if (k->load(ld, k, v, child, k->in_cfg ? (void *)ld->cfg : base) < 0)
			return -1;
	}
	return 0;
}

int cfgw_each_word(struct loader *ld, const struct ynode *v, const char *path, const char *what,
                   word_fn each, void *base)
{
	if (v->type == YNODE_MAP)
		return cfgw_err(ld, v, path, "expected a list of %s, got a map", what);
	if (v->type == YNODE_SEQ) {
		if (v->n == 0)
			return cfgw_err(ld, v, path, "the list is empty: name at least one");
		for (size_t i = 0; i < v->n; i++) {
			const struct ynode *it = v->items[i];
			char ipath[280];
			snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
			if (it->type != YNODE_SCALAR || it->null || !*it->text)
				return cfgw_err(ld, it, ipath, "expected %s, got %s", what,
				                it->type == YNODE_SCALAR && !it->null
				                    ? "an empty string"
				                    : ytree_type_name(it));
			if (each(ld, it, ipath, it->text, it->len, base) < 0)
				return -1;
		}
		return 0;
	}
	const char *s = v->text;
	for (;;) {
		const char *end = strchr(s, ',');
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *w = s;
		while (len && (*w == ' ' || *w == '\t'))
			w++, len--;
		while (len && (w[len - 1] == ' ' || w[len - 1] == '\t'))
			len--;
		if (!len)
			return cfgw_err(ld, v, path,
			                "empty entry in the comma-separated list of %s", what);
		if (each(ld, v, path, w, len, base) < 0)
			return -1;
		if (!end)
			return 0;
		s = end + 1;
	}
}
