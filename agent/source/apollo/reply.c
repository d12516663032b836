/*
 * The config service's replies (see reply.h).
 */
#include "source/apollo/reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "source/failure.h"

static json_t *load(const char *body, size_t len, const char *what, struct gw_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		err->kind = SYNC_FAIL_PARSE;
		gw_errf(err, "%s is not JSON: %s at byte %d", what, je.text, je.position);
	}
	return j;
}

static int fail(struct gw_err *err, json_t *j, const char *fmt, const char *what)
{
	json_decref(j);
	err->kind = SYNC_FAIL_PARSE;
	return gw_errf(err, fmt, what);
}

int apollo_parse_notifications(const char *body, size_t len, const char *namespace_name,
                               int64_t *id, struct gw_err *err)
{
	const char *what = "the notifications reply";
	json_t *j = load(body, len, what, err);
	if (!j)
		return -1;
	if (!json_is_array(j))
		return fail(err, j, "%s is not a list of notifications", what);
	int found = 0;
	size_t i;
	json_t *n;
	json_array_foreach(j, i, n)
	{
		json_t *name = json_object_get(n, "namespaceName");
		json_t *nid = json_object_get(n, "notificationId");
		if (!json_is_string(name) || !json_is_integer(nid))
			return fail(err, j,
			            "%s has an entry without a namespaceName string and a "
			            "notificationId number",
			            what);
		/* the server answers with the name the client sent, normalized back
		 * (DeferredResultWrapper.recordNamespaceNameNormalizedResult) */
		if (strcmp(json_string_value(name), namespace_name) == 0 ||
		    strcasecmp(json_string_value(name), namespace_name) == 0) {
			int64_t v = (int64_t)json_integer_value(nid);
			if (!found || v > *id)
				*id = v;
			found = 1;
		}
	}
	json_decref(j);
	return found;
}

/* Every entry of configurationChanges is {key, configurationChangeType} with a newValue
 * string unless DELETED. 0, or -1 with err. */
static int check_changes(const json_t *changes, struct gw_err *err)
{
	size_t i;
	json_t *c;
	json_array_foreach(changes, i, c)
	{
		json_t *key = json_object_get(c, "key");
		const char *t = json_string_value(json_object_get(c, "configurationChangeType"));
		if (!json_is_string(key) || !t)
			goto bad;
		if (strcmp(t, "DELETED") == 0)
			continue;
		if ((strcmp(t, "ADDED") != 0 && strcmp(t, "MODIFIED") != 0) ||
		    !json_is_string(json_object_get(c, "newValue")))
			goto bad;
	}
	return 0;
bad:
	err->kind = SYNC_FAIL_PARSE;
	return gw_errf(err, "the configs reply has a configurationChanges entry that is not {key, "
	                    "newValue, configurationChangeType ADDED|MODIFIED|DELETED}");
}

int apollo_parse_release(const char *body, size_t len, struct apollo_release *out,
                         struct gw_err *err)
{
	memset(out, 0, sizeof *out);
	const char *what = "the configs reply";
	json_t *j = load(body, len, what, err);
	if (!j)
		return -1;
	if (!json_is_object(j))
		return fail(err, j, "%s is not an object", what);
	json_t *rk = json_object_get(j, "releaseKey");
	if (!json_is_string(rk))
		return fail(err, j, "%s has no releaseKey string", what);
	json_t *conf = json_object_get(j, "configurations");
	json_t *changes = json_object_get(j, "configurationChanges");
	if (json_is_object(conf)) {
		const char *k;
		json_t *v;
		json_object_foreach(conf, k, v)
		{
			if (!json_is_string(v)) {
				/* the message first: k lives in j */
				err->kind = SYNC_FAIL_PARSE;
				gw_errf(err,
				        "%s: configurations[\"%.200s\"] is not a string (an Apollo "
				        "item's value is text)",
				        what, k);
				json_decref(j);
				return -1;
			}
		}
		out->configurations = json_incref(conf);
	} else if (json_is_array(changes)) {
		if (check_changes(changes, err) != 0) {
			json_decref(j);
			return -1;
		}
		out->changes = json_incref(changes);
	} else {
		return fail(err, j,
		            "%s has neither a configurations object nor configurationChanges",
		            what);
	}
	out->release_key = strdup(json_string_value(rk));
	json_decref(j);
	if (!out->release_key) {
		apollo_release_free(out);
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "out of memory");
	}
	return 0;
}

void apollo_release_free(struct apollo_release *r)
{
	json_decref(r->configurations);
	json_decref(r->changes);
	free(r->release_key);
	memset(r, 0, sizeof *r);
}

int apollo_parse_services(const char *body, size_t len, char ***urls, size_t *n, struct gw_err *err)
{
	*urls = NULL;
	*n = 0;
	const char *what = "the meta service's reply";
	json_t *j = load(body, len, what, err);
	if (!j)
		return -1;
	if (!json_is_array(j))
		return fail(err, j, "%s is not a list of services", what);
	size_t cap = json_array_size(j);
	char **out = calloc(cap ? cap : 1, sizeof *out);
	if (!out)
		return fail(err, j, "%s: out of memory", what);
	size_t i, k = 0;
	json_t *s;
	json_array_foreach(j, i, s)
	{
		json_t *home = json_object_get(s, "homepageUrl");
		const char *u = json_string_value(home);
		if (!u || (strncasecmp(u, "http://", 7) != 0 && strncasecmp(u, "https://", 8) != 0))
			continue; /* not a service a client can reach: skipped */
		size_t l = strlen(u);
		while (l > 8 && u[l - 1] == '/')
			l--;
		if (!(out[k] = strndup(u, l))) {
			apollo_urls_free(out, k);
			return fail(err, j, "%s: out of memory", what);
		}
		k++;
	}
	json_decref(j);
	if (k == 0) {
		free(out);
		err->kind = SYNC_FAIL_PARSE;
		return gw_errf(err, "%s lists no config service with an http(s) homepageUrl", what);
	}
	*urls = out;
	*n = k;
	return 0;
}

void apollo_urls_free(char **urls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
}
