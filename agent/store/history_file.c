/*
 * The change history as a file, STATE_DIR/history (see history_file.h): the /history
 * document of every entry, plus its format and version, replaced atomically; and read back
 * whole or not at all. The entry's JSON form is here because the file is that document:
 * /history (ops/history_json.c) shows the same entries the same way.
 */
#include "store/history_file.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/readfile.h"
#include "model/groups.h"
#include "shared/atomic_file.h"
#include "store/history_ring.h"

static json_t *change_json(const struct history_entry *e, const struct history_change *c)
{
	if (!e->counted)
		return json_null();
	json_t *first = json_array(), *names = json_array();
	for (size_t i = 0; first && i < c->n_first; i++)
		json_array_append_new(first, json_string(c->first[i]));
	for (size_t i = 0; names && i < c->n_first; i++) /* null: no name */
		json_array_append_new(names,
		                      c->names[i][0] ? json_string(c->names[i]) : json_null());
	return json_pack("{s:I, s:o*, s:o*}", "count", (json_int_t)c->count, "first", first,
	                 "names", names);
}

static json_t *outcome_json(const struct history_outcome *o)
{
	return json_pack("{s:s, s:o, s:I, s:o}", "state", history_state_name(o->state), "at",
	                 o->at_ms > 0 && o->state != HISTORY_SUPERSEDED
	                     ? json_integer((json_int_t)o->at_ms)
	                     : json_null(),
	                 "refusals", (json_int_t)o->refusals, "reason",
	                 o->reason[0] ? json_string(o->reason) : json_null());
}

json_t *history_entry_json(const struct history *h, const struct history_entry *e)
{
	json_t *subs = json_object();
	for (size_t i = 0; subs && i < h->n_subs; i++)
		if (!(h->takes[i] & (1u << e->group)))
			continue; /* not one of its groups: nothing to say */
		else if (json_object_set_new(subs, h->subs[i], outcome_json(&e->subs[i])) != 0) {
			json_decref(subs);
			subs = NULL;
		}
	return json_pack("{s:s, s:I, s:I, s:s, s:o*, s:o*, s:o*, s:o*}", "md5", e->md5,
	                 "lastModifyTime", (json_int_t)e->last_modify_time, "acceptedAt",
	                 (json_int_t)e->accepted_ms, "source", e->source, "added",
	                 change_json(e, &e->added), "updated", change_json(e, &e->updated),
	                 "removed", change_json(e, &e->removed), "subscribers", subs);
}

json_t *history_doc(const struct history *h, const void *copy, const size_t *per,
                    const enum gw_group *order, size_t n_order, unsigned groups, int64_t cut,
                    size_t limit)
{
	size_t eb = history_entry_bytes(h);
	json_t *subs = json_array();
	for (size_t i = 0; subs && i < h->n_subs; i++)
		json_array_append_new(subs, json_string(h->subs[i]));
	json_t *out = json_object(), *gs = json_object();
	int ok = out && gs && subs;
	size_t at = 0, kept = 0;
	for (size_t k = 0; ok && k < n_order; k++) {
		if ((unsigned)order[k] >= GW_GROUP_COUNT || !(groups & (1u << order[k])))
			continue;
		json_t *list = json_array();
		ok = list && json_object_set_new(gs, gw_group_name(order[k]), list) == 0;
		for (size_t i = 0; ok && i < per[k]; i++, at++) {
			const struct history_entry *e =
			    (const void *)((const char *)copy + at * eb);
			if (e->accepted_ms < cut || (limit && kept >= limit))
				continue;
			kept++;
			json_t *ej = history_entry_json(h, e);
			ok = ej && json_array_append_new(list, ej) == 0;
		}
	}
	if (ok)
		ok = json_object_set_new(out, "size", json_integer((json_int_t)h->size)) == 0 &&
		     json_object_set_new(out, "subscribers", subs) == 0 &&
		     json_object_set_new(out, "groups", gs) == 0;
	else {
		json_decref(subs);
		json_decref(gs);
	}
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

int history_save(struct history *h, const char *dir, struct gw_err *err)
{
	history_settle(h);
	pthread_mutex_lock(&h->mu);
	h->dirty = 0;
	pthread_mutex_unlock(&h->mu);
	enum gw_group all[GW_GROUP_COUNT];
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		all[g] = (enum gw_group)g;
	size_t per[GW_GROUP_COUNT], n;
	void *copy = history_copy(h, all, GW_GROUP_COUNT, ~0u, INT64_MIN, per, &n);
	json_t *doc =
	    copy ? history_doc(h, copy, per, all, GW_GROUP_COUNT, ~0u, INT64_MIN, 0) : NULL;
	free(copy);
	if (doc &&
	    (json_object_set_new(doc, "format", json_string(HISTORY_FORMAT)) != 0 ||
	     json_object_set_new(doc, "version", json_integer(HISTORY_FORMAT_VERSION)) != 0)) {
		json_decref(doc);
		doc = NULL;
	}
	struct atomic_file af;
	int rc = -1;
	if (!doc)
		gw_errf(err, "history: out of memory");
	else if (make_dirs(dir, 0750, err) != 0 ||
	         atomic_file_open(&af, dir, HISTORY_FILE, 0600, err) != 0)
		gw_err_prefix(err, "history");
	else if (json_dumpf(doc, af.fp, JSON_COMPACT) != 0 || fputc('\n', af.fp) == EOF) {
		atomic_file_abort(&af);
		gw_errf(err, "history: %s/%s: cannot write", dir, HISTORY_FILE);
	} else if (atomic_file_finish(&af, err) != 0 || atomic_file_commit(&af, err) != 0) {
		atomic_file_abort(&af);
		gw_err_prefix(err, "history: %s/%s", dir, HISTORY_FILE);
	} else
		rc = 0;
	json_decref(doc);
	if (rc != 0) {
		pthread_mutex_lock(&h->mu);
		h->dirty = 1;
		pthread_mutex_unlock(&h->mu);
	}
	return rc;
}

static int text_field(const json_t *o, const char *name, char *out, size_t cap, int nullable,
                      struct gw_err *err)
{
	const json_t *v = json_object_get(o, name);
	if (nullable && (!v || json_is_null(v))) {
		out[0] = '\0';
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) >= cap ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return gw_errf(err, "\"%s\" is not a string of at most %zu bytes", name, cap - 1);
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int int_field(const json_t *o, const char *name, int64_t min, int nullable, int64_t *out,
                     struct gw_err *err)
{
	const json_t *v = json_object_get(o, name);
	if (nullable && (!v || json_is_null(v))) {
		*out = 0;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < min)
		return gw_errf(err, "\"%s\" is not a whole number of at least %lld", name,
		               (long long)min);
	*out = json_integer_value(v);
	return 0;
}

static int change_from(const json_t *e, const char *name, struct history_change *c, int *counted,
                       struct gw_err *err)
{
	const json_t *v = json_object_get(e, name);
	if (!v || json_is_null(v)) {
		*counted = 0;
		return 0;
	}
	int64_t count;
	const json_t *first = json_object_get(v, "first");
	if (!json_is_object(v) || int_field(v, "count", 0, 0, &count, err) != 0)
		return gw_err_prefix(err, "\"%s\"", name);
	if (!json_is_array(first) || json_array_size(first) > HISTORY_KEYS ||
	    json_array_size(first) > (size_t)count)
		return gw_errf(err, "\"%s\".first is not a list of at most %d keys", name,
		               HISTORY_KEYS);
	c->count = (size_t)count;
	c->n_first = json_array_size(first);
	for (size_t i = 0; i < c->n_first; i++) {
		const json_t *k = json_array_get(first, i);
		if (!json_is_string(k) || json_string_length(k) >= HISTORY_KEY_MAX ||
		    strlen(json_string_value(k)) != json_string_length(k))
			return gw_errf(err, "\"%s\".first[%zu] is not a key", name, i);
		memcpy(c->first[i], json_string_value(k), json_string_length(k) + 1);
		/* names: optional (a file from before them has none); a bad one is dropped */
		const json_t *n = json_array_get(json_object_get(v, "names"), i);
		c->names[i][0] = '\0';
		if (json_is_string(n) && json_string_length(n) < HISTORY_NAME_MAX &&
		    strlen(json_string_value(n)) == json_string_length(n))
			memcpy(c->names[i], json_string_value(n), json_string_length(n) + 1);
	}
	return 0;
}

static int outcome_from(const struct history *h, json_t *subs, struct history_entry *e,
                        struct gw_err *err)
{
	if (!subs || json_is_null(subs))
		return 0;
	if (!json_is_object(subs))
		return gw_errf(err, "\"subscribers\" is not an object");
	const char *name;
	const json_t *o;
	json_object_foreach(subs, name, o)
	{
		const char *state = json_string_value(json_object_get(o, "state"));
		int st = -1;
		for (int s = 0; state && s <= HISTORY_SUPERSEDED; s++)
			if (strcmp(state, history_state_name(s)) == 0)
				st = s;
		int64_t at, refusals;
		struct history_outcome out = {0};
		if (!json_is_object(o) || st < 0)
			return gw_errf(err,
			               "subscriber \"%.64s\": \"state\" is not one of pending, "
			               "applied, refused, superseded",
			               name);
		if (int_field(o, "at", 0, 1, &at, err) != 0 ||
		    int_field(o, "refusals", 0, 0, &refusals, err) != 0 ||
		    text_field(o, "reason", out.reason, sizeof out.reason, 1, err) != 0)
			return gw_err_prefix(err, "subscriber \"%.64s\"", name);
		out.state = (uint8_t)st;
		out.at_ms = at;
		out.refusals = refusals > UINT32_MAX ? UINT32_MAX : (uint32_t)refusals;
		for (size_t i = 0; i < h->n_subs; i++)
			if (strcmp(h->subs[i], name) == 0)
				e->subs[i] = out; /* a subscriber configured no longer is dropped */
	}
	return 0;
}

static int entry_from(const struct history *h, const json_t *j, struct history_entry *e,
                      struct gw_err *err)
{
	if (!json_is_object(j))
		return gw_errf(err, "not an object");
	int counted[3] = {1, 1, 1};
	if (text_field(j, "md5", e->md5, sizeof e->md5, 0, err) != 0)
		return -1;
	if (!e->md5[0])
		return gw_errf(err, "\"md5\" is empty");
	if (int_field(j, "lastModifyTime", INT64_MIN, 0, &e->last_modify_time, err) != 0 ||
	    int_field(j, "acceptedAt", 0, 0, &e->accepted_ms, err) != 0 ||
	    text_field(j, "source", e->source, sizeof e->source, 0, err) != 0 ||
	    change_from(j, "added", &e->added, &counted[0], err) != 0 ||
	    change_from(j, "updated", &e->updated, &counted[1], err) != 0 ||
	    change_from(j, "removed", &e->removed, &counted[2], err) != 0 ||
	    outcome_from(h, json_object_get(j, "subscribers"), e, err) != 0)
		return -1;
	if (counted[0] != counted[1] || counted[1] != counted[2])
		return gw_errf(err, "added, updated and removed must all be counted or all null");
	e->counted = counted[0];
	return 0;
}

static int group_index(const char *name)
{
	for (int g = 0; g < GW_GROUP_COUNT; g++)
		if (strcmp(name, gw_group_name((enum gw_group)g)) == 0)
			return g;
	return -1;
}

/* Check the whole document and put what it holds into the rings (which are empty). */
static int load_doc(struct history *h, const json_t *doc, const enum gw_group *groups, size_t n,
                    size_t *loaded, struct gw_err *err)
{
	json_t *gs = json_object_get(doc, "groups");
	if (!json_is_object(doc) || !json_is_string(json_object_get(doc, "format")) ||
	    strcmp(json_string_value(json_object_get(doc, "format")), HISTORY_FORMAT) != 0)
		return gw_errf(err, "not a gwsync history (no \"format\": \"%s\")", HISTORY_FORMAT);
	if (!json_is_integer(json_object_get(doc, "version")) ||
	    json_integer_value(json_object_get(doc, "version")) != HISTORY_FORMAT_VERSION)
		return gw_errf(err, "format version is not %d", HISTORY_FORMAT_VERSION);
	if (!json_is_object(gs))
		return gw_errf(err, "\"groups\" is not an object");
	size_t eb = history_entry_bytes(h);
	struct history_entry *e = malloc(eb);
	if (!e)
		return gw_errf(err, "out of memory");
	/* every entry is checked before any is kept: a file is taken whole or not at all */
	for (int pass = 0; pass < 2; pass++) {
		const char *name;
		const json_t *list;
		json_object_foreach(gs, name, list)
		{
			int g = group_index(name);
			if (g < 0) {
				free(e);
				return gw_errf(err, "unknown group \"%.64s\"", name);
			}
			if (!json_is_array(list)) {
				free(e);
				return gw_errf(err, "%s: not a list of versions", name);
			}
			int wanted = 0;
			for (size_t k = 0; k < n; k++)
				wanted |= groups[k] == (enum gw_group)g;
			size_t count = json_array_size(list),
			       keep = count < h->size ? count : h->size;
			/* newest first in the file; the ring is filled oldest first */
			for (size_t i = pass ? keep : count; i-- > 0;) {
				memset(e, 0, eb);
				if (entry_from(h, json_array_get(list, i), e, err) != 0) {
					gw_err_prefix(err, "%s[%zu]", name, i);
					free(e);
					return -1;
				}
				if (!pass || !wanted)
					continue;
				struct group_data *drop[2] = {NULL, NULL};
				struct slot *s = history_push(h, (enum gw_group)g, drop);
				if (!s) {
					free(e);
					return gw_errf(err, "out of memory");
				}
				e->group = (enum gw_group)g;
				memcpy(s->e, e, eb);
				(*loaded)++;
			}
		}
	}
	free(e);
	return 0;
}

int history_load(struct history *h, const char *dir, const enum gw_group *groups, size_t n,
                 struct gw_err *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, HISTORY_FILE);
	char *buf = NULL;
	size_t len = 0;
	struct gw_err ferr;
	if (readfile(path, HISTORY_FILE_MAX, &buf, &len, &ferr) < 0) {
		if (errno == ENOENT)
			return 1;
		gw_errf(err, "%s", ferr.msg);
	} else {
		json_error_t jerr;
		json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
		free(buf);
		size_t loaded = 0;
		if (!doc)
			gw_errf(err, "not JSON: %s (line %d)", jerr.text, jerr.line);
		else {
			pthread_mutex_lock(&h->mu);
			int rc = load_doc(h, doc, groups, n, &loaded, err);
			if (rc != 0) /* back to empty */
				for (int g = 0; g < GW_GROUP_COUNT; g++) {
					h->rings[g].n = h->rings[g].head = h->rings[g].pending = 0;
				}
			pthread_mutex_unlock(&h->mu);
			json_decref(doc);
			if (rc == 0) {
				LOG_I(h->log, "history", "loaded %zu version(s) of history from %s",
				      loaded, path);
				return 0;
			}
		}
		gw_err_prefix(err, "%s", path);
	}
	LOG_W(h->log, "history", "ignoring %s; starting with an empty history", err->msg);
	return -1;
}
