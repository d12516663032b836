/*
 * ${VAR} expansion (see envexpand.h for the rules). A single left-to-right pass into a
 * growing buffer: values are short, and no expansion result is ever re-scanned, so a
 * variable whose value contains "${" cannot trigger further lookups.
 */
#include "config/envexpand.h"

#include <stdlib.h>
#include <string.h>

#include "shared/strbuf.h"

static const char *lookup_getenv(const char *name, void *ctx)
{
	(void)ctx;
	return getenv(name);
}

static int is_name_start(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int is_name_char(char c)
{
	return is_name_start(c) || (c >= '0' && c <= '9');
}

int env_has_refs(const char *in)
{
	for (const char *p = strchr(in, '$'); p; p = strchr(p + 1, '$'))
		if (p[1] == '{' || p[1] == '$')
			return 1;
	return 0;
}

/* Expand one "${...}" starting at `p` (pointing at '$'); on success *end points past '}'. */
static int expand_ref(const char *p, const char **end, struct strbuf *b, env_lookup_fn lookup,
                      void *ctx, struct gw_err *err)
{
	const char *name = p + 2, *q = name;
	if (!is_name_start(*q))
		return gw_errf(err, "'${' must be followed by a variable name "
		                    "(write $$ for a literal '$')");
	while (is_name_char(*q))
		q++;
	size_t nlen = (size_t)(q - name);
	char var[256];
	if (nlen >= sizeof var)
		return gw_errf(err, "variable name longer than %zu characters", sizeof var - 1);
	memcpy(var, name, nlen);
	var[nlen] = '\0';

	const char *def = NULL;
	size_t dlen = 0;
	if (q[0] == ':' && q[1] == '-') {
		def = q + 2;
		const char *close = strchr(def, '}');
		if (!close)
			return gw_errf(err, "unterminated '${%s:-' (missing '}')", var);
		dlen = (size_t)(close - def);
		for (size_t i = 0; i + 1 < dlen; i++)
			if (def[i] == '$' && def[i + 1] == '{')
				return gw_errf(err, "the default of ${%s:-...} cannot contain '${'",
				               var);
		q = close;
	}
	if (*q != '}') {
		if (!*q)
			return gw_errf(err, "unterminated '${%s' (missing '}')", var);
		return gw_errf(err, "bad reference to %s: expected ${%s} or ${%s:-default}", var,
		               var, var);
	}
	*end = q + 1;

	const char *val = lookup(var, ctx);
	if (def && (!val || !*val))
		return strbuf_add(b, def, dlen) < 0 ? gw_errf(err, "out of memory") : 0;
	if (!val)
		return gw_errf(err, "environment variable '%s' is not set", var);
	return strbuf_add(b, val, strlen(val)) < 0 ? gw_errf(err, "out of memory") : 0;
}

int env_expand(const char *in, char **out, env_lookup_fn lookup, void *ctx, struct gw_err *err)
{
	struct strbuf b = {0};
	if (!lookup)
		lookup = lookup_getenv;
	if (strbuf_add(&b, "", 0) < 0)
		return gw_errf(err, "out of memory");
	const char *p = in;
	while (*p) {
		const char *dollar = strchr(p, '$');
		if (!dollar) {
			if (strbuf_add(&b, p, strlen(p)) < 0)
				goto oom;
			break;
		}
		if (strbuf_add(&b, p, (size_t)(dollar - p)) < 0)
			goto oom;
		if (dollar[1] == '$') {
			if (strbuf_add(&b, "$", 1) < 0)
				goto oom;
			p = dollar + 2;
		} else if (dollar[1] == '{') {
			if (expand_ref(dollar, &p, &b, lookup, ctx, err) < 0) {
				strbuf_reset(&b);
				return -1;
			}
		} else {
			if (strbuf_add(&b, "$", 1) < 0)
				goto oom;
			p = dollar + 1;
		}
	}
	*out = strbuf_finish(&b);
	if (*out)
		return 0;
oom:
	strbuf_reset(&b);
	return gw_errf(err, "out of memory");
}
