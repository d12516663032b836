/*
 * Builds struct ynode trees from libyaml parser events (see ytree.h for what is kept and
 * what is refused). A recursive descent over the event stream, bounded by
 * YTREE_MAX_DEPTH so that hostile input cannot exhaust the stack; every node is linked into
 * its parent as soon as it exists, so one free on the error path releases everything.
 */
#include "config/ytree.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/readfile.h"

#define TAG_STR "tag:yaml.org,2002:str"
#define TAG_MAP "tag:yaml.org,2002:map"
#define TAG_SEQ "tag:yaml.org,2002:seq"

struct yp {
	yaml_parser_t parser;
	const char *file;
	const char *text; /* the input, for hints about the character at an error */
	size_t len;
	struct gw_err *err;
};

static void node_free(struct ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		if (n->keys)
			node_free(n->keys[i]);
		node_free(n->items[i]);
	}
	free(n->keys);
	free(n->items);
	free(n->own_text);
	free(n->own_file);
	free(n);
}

void ytree_free(struct ynode *root)
{
	if (!root)
		return;
	node_free(root);
}

static struct ynode *node_new(enum ynode_type type, const char *file, int line, int col)
{
	struct ynode *n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	n->type = type;
	n->file = file;
	n->line = line;
	n->col = col;
	return n;
}

struct ynode *ytree_new_map(const char *file, int line, int col)
{
	char *f = strdup(file ? file : "");
	struct ynode *n = f ? node_new(YNODE_MAP, f, line, col) : NULL;
	if (!n)
		free(f);
	else
		n->own_file = f;
	return n;
}

/* Make room for one more entry in an array of n entries (capacity: powers of two >= 4). */
static int grow(struct ynode ***arr, size_t n)
{
	size_t cap;
	if (n == 0)
		cap = 4;
	else if (n >= 4 && (n & (n - 1)) == 0)
		cap = n * 2;
	else
		return 0;
	struct ynode **p = realloc(*arr, cap * sizeof *p);
	if (!p)
		return -1;
	*arr = p;
	return 0;
}

static int perr(struct yp *p, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A positioned error: "FILE:LINE:COL: message". */
static int perr(struct yp *p, int line, int col, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return gw_errf(p->err, "%s:%d:%d: %s", p->file, line, col, what);
}

/* ---------------------------------------------------------------- syntax errors in words */

/* One line of the input: its text (up to a comment), indentation and key. */
struct yline {
	int no;       /* 1-based; 0: none */
	int indent;   /* columns before the key (after a "- " list marker) */
	char key[64]; /* "level" for "  level: info"; "" when the line is no `key:` */
	int opens;    /* `key:` and nothing else: a block follows */
	int nospace;  /* `key:value`: the column of the character after the ':' (1-based) */
};

/* Line `no` (1-based) of the text, parsed as above; 0 if there is no such line. A blank or
 * comment-only line has an empty key and indent -1. */
static int line_at(const struct yp *p, int no, struct yline *out)
{
	memset(out, 0, sizeof *out);
	const char *s = p->text, *end = p->text + p->len;
	for (int n = 1; n < no && s < end; n++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		s = nl ? nl + 1 : end;
	}
	if (s >= end)
		return 0;
	const char *eol = memchr(s, '\n', (size_t)(end - s));
	if (!eol)
		eol = end;
	out->no = no;
	const char *c = s;
	while (c < eol && *c == ' ')
		c++;
	if (eol - c > 1 && c[0] == '-' && c[1] == ' ')
		for (c += 2; c < eol && *c == ' ';)
			c++;
	if (c >= eol || *c == '#' || *c == '\r') {
		out->indent = -1;
		return 1;
	}
	out->indent = (int)(c - s);
	const char *k = c;
	while (k < eol && (isalnum((unsigned char)*k) || *k == '_' || *k == '-' || *k == '.'))
		k++;
	if (k == c || k >= eol || *k != ':' || (size_t)(k - c) >= sizeof out->key)
		return 1;
	snprintf(out->key, sizeof out->key, "%.*s", (int)(k - c), c);
	const char *v = k + 1;
	/* not a URL's "http://" nor a time's "12:30" */
	if (v < eol && *v != ' ' && *v != '\t' && *v != '\r' && *v != '#' && *v != '/' &&
	    !isdigit((unsigned char)*v))
		out->nospace = (int)(v - s) + 1;
	while (v < eol && (*v == ' ' || *v == '\t' || *v == '\r'))
		v++;
	out->opens = !out->nospace && (v >= eol || *v == '#');
	return 1;
}

/* The nearest line before `no` with content (a key, a value, a list item). */
static int content_before(const struct yp *p, int no, struct yline *out)
{
	for (int n = no - 1; n >= 1; n--)
		if (line_at(p, n, out) && out->indent >= 0)
			return 1;
	return 0;
}

/*
 * What the commonest indentation slips look like to a person, found in the lines at and just
 * before where libyaml stopped (which is often the line after the slip): `key:value` with
 * no space, and a key not indented under the `parent:` just above it (so what follows
 * cannot be read). 1 with err set, or 0: no translation, libyaml's words are used.
 */
static int in_words(struct yp *p, int problem_line)
{
	struct yline l, prev;
	int no = problem_line;
	for (int tries = 0; tries < 3 && no >= 1; tries++) {
		if (!line_at(p, no, &l))
			break;
		if (l.indent < 0) {
			no--;
			continue;
		}
		if (l.nospace) {
			perr(p, l.no, l.nospace,
			     "YAML syntax error: a space is needed after `%s:` (YAML reads "
			     "`%s:VALUE` as one word, not a key and its value)",
			     l.key, l.key);
			return 1;
		}
		if (l.key[0] && content_before(p, no, &prev) && prev.opens && prev.key[0] &&
		    l.indent <= prev.indent) {
			perr(p, l.no, l.indent + 1,
			     "YAML syntax error: `%s` is not indented under `%s:` (line %d): a "
			     "key inside `%s` "
			     "goes further right than `%s` itself",
			     l.key, prev.key, prev.no, prev.key, prev.key);
			return 1;
		}
		if (!content_before(p, no, &prev))
			break;
		no = prev.no;
	}
	return 0;
}

static int syntax_error(struct yp *p)
{
	yaml_parser_t *y = &p->parser;
	if (y->error == YAML_MEMORY_ERROR)
		return gw_errf(p->err, "%s: out of memory while parsing", p->file);
	if (y->problem && in_words(p, (int)y->problem_mark.line + 1))
		return -1;
	const char *problem = y->problem ? y->problem : "malformed YAML";
	size_t at = y->problem_mark.index;
	/* the commonest YAML mistake gets a plain-words hint */
	const char *hint = at < p->len && p->text[at] == '\t'
	                       ? " (YAML does not allow tabs for indentation: use spaces)"
	                       : "";
	if (y->context)
		return gw_errf(p->err, "%s:%d:%d: YAML syntax error: %s %s (started at line %d)%s",
		               p->file, (int)y->problem_mark.line + 1,
		               (int)y->problem_mark.column + 1, problem, y->context,
		               (int)y->context_mark.line + 1, hint);
	return gw_errf(p->err, "%s:%d:%d: YAML syntax error: %s%s", p->file,
	               (int)y->problem_mark.line + 1, (int)y->problem_mark.column + 1, problem,
	               hint);
}

static int next_event(struct yp *p, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&p->parser, ev))
		return syntax_error(p);
	return 0;
}

/* Anchors and tags are refused (except the type's own tag, which changes nothing). */
static int check_props(struct yp *p, int line, int col, const yaml_char_t *anchor,
                       const yaml_char_t *tag, const char *allowed_tag)
{
	if (anchor)
		return perr(p, line, col,
		            "YAML anchors (&%s) are not supported: write the value out in full",
		            (const char *)anchor);
	if (tag && strcmp((const char *)tag, allowed_tag) != 0)
		return perr(p, line, col, "YAML tags (%s) are not supported", (const char *)tag);
	return 0;
}

static int is_null_text(const char *s, size_t len)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
		if (strlen(nulls[i]) == len && memcmp(nulls[i], s, len) == 0)
			return 1;
	return 0;
}

static int parse_node(struct yp *p, yaml_event_t *ev, int depth, struct ynode **out);

static int parse_scalar(struct yp *p, yaml_event_t *ev, int line, int col, struct ynode **out)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	if (check_props(p, line, col, ev->data.scalar.anchor, ev->data.scalar.tag, TAG_STR) < 0)
		return -1;
	if (memchr(v, '\0', len))
		return perr(p, line, col, "NUL characters are not allowed in values");
	struct ynode *n = node_new(YNODE_SCALAR, p->file, line, col);
	if (!n || !(n->own_text = malloc(len + 1))) {
		free(n);
		return gw_errf(p->err, "%s: out of memory", p->file);
	}
	memcpy(n->own_text, v, len);
	n->own_text[len] = '\0';
	n->text = n->own_text;
	n->len = len;
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag;
	n->null = n->plain && is_null_text(v, len);
	*out = n;
	return 0;
}

static int parse_seq(struct yp *p, int line, int col, int depth, struct ynode *n)
{
	for (;;) {
		yaml_event_t e;
		if (next_event(p, &e) < 0)
			return -1;
		if (e.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&e);
			return 0;
		}
		struct ynode *item;
		if (grow(&n->items, n->n) < 0) {
			yaml_event_delete(&e);
			return gw_errf(p->err, "%s:%d:%d: out of memory", p->file, line, col);
		}
		if (parse_node(p, &e, depth + 1, &item) < 0)
			return -1;
		n->items[n->n++] = item;
	}
}

static int parse_map(struct yp *p, int line, int col, int depth, struct ynode *n)
{
	for (;;) {
		yaml_event_t e;
		if (next_event(p, &e) < 0)
			return -1;
		if (e.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&e);
			return 0;
		}
		if (e.type != YAML_SCALAR_EVENT) {
			int kl = (int)e.start_mark.line + 1, kc = (int)e.start_mark.column + 1;
			yaml_event_delete(&e);
			return perr(p, kl, kc,
			            "a map key must be a plain value, not a map or a list");
		}
		if (grow(&n->keys, n->n) < 0 || grow(&n->items, n->n) < 0) {
			yaml_event_delete(&e);
			return gw_errf(p->err, "%s:%d:%d: out of memory", p->file, line, col);
		}
		struct ynode *key, *val;
		if (parse_node(p, &e, depth + 1, &key) < 0)
			return -1;
		for (size_t i = 0; i < n->n; i++) {
			if (strcmp(n->keys[i]->text, key->text) == 0) {
				perr(p, key->line, key->col,
				     "duplicate key '%.200s' (first at line %d)", key->text,
				     n->keys[i]->line);
				node_free(key);
				return -1;
			}
		}
		if (next_event(p, &e) < 0 || parse_node(p, &e, depth + 1, &val) < 0) {
			node_free(key);
			return -1;
		}
		val->key = key;
		n->keys[n->n] = key;
		n->items[n->n++] = val;
	}
}

/* Consumes *ev (deletes it). */
static int parse_node(struct yp *p, yaml_event_t *ev, int depth, struct ynode **out)
{
	int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
	int rc = -1;
	struct ynode *n = NULL;

	if (depth > YTREE_MAX_DEPTH) {
		perr(p, line, col, "nesting deeper than %d levels", YTREE_MAX_DEPTH);
		goto out;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		rc = parse_scalar(p, ev, line, col, out);
		goto out;
	case YAML_ALIAS_EVENT:
		perr(p, line, col,
		     "YAML aliases (*%s) are not supported: write the value out in full",
		     (const char *)ev->data.alias.anchor);
		goto out;
	case YAML_SEQUENCE_START_EVENT:
		if (check_props(p, line, col, ev->data.sequence_start.anchor,
		                ev->data.sequence_start.tag, TAG_SEQ) < 0)
			goto out;
		n = node_new(YNODE_SEQ, p->file, line, col);
		break;
	case YAML_MAPPING_START_EVENT:
		if (check_props(p, line, col, ev->data.mapping_start.anchor,
		                ev->data.mapping_start.tag, TAG_MAP) < 0)
			goto out;
		n = node_new(YNODE_MAP, p->file, line, col);
		break;
	default:
		perr(p, line, col, "unexpected YAML structure");
		goto out;
	}
	if (!n) {
		gw_errf(p->err, "%s: out of memory", p->file);
		goto out;
	}
	yaml_event_delete(ev);
	if ((n->type == YNODE_SEQ ? parse_seq : parse_map)(p, line, col, depth, n) < 0) {
		node_free(n);
		return -1;
	}
	*out = n;
	return 0;
out:
	yaml_event_delete(ev);
	return rc;
}

/* Expect an event of `type`; anything else is reported with `what`. */
static int expect(struct yp *p, yaml_event_type_t type, const char *what)
{
	yaml_event_t e;
	if (next_event(p, &e) < 0)
		return -1;
	int ok = e.type == type;
	int line = (int)e.start_mark.line + 1, col = (int)e.start_mark.column + 1;
	yaml_event_delete(&e);
	return ok ? 0 : perr(p, line, col, "%s", what);
}

int ytree_parse(const char *name, const char *text, size_t len, struct ynode **out,
                struct gw_err *err)
{
	struct yp p = {.err = err, .text = text, .len = len};
	char *file = strdup(name ? name : "<config>");
	struct ynode *root = NULL;
	yaml_event_t e;

	if (!file)
		return gw_errf(err, "out of memory");
	p.file = file;
	if (!yaml_parser_initialize(&p.parser)) {
		free(file);
		return gw_errf(err, "%s: out of memory", name);
	}
	yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, len);

	if (expect(&p, YAML_STREAM_START_EVENT, "expected the start of a YAML stream") < 0 ||
	    next_event(&p, &e) < 0)
		goto fail;
	if (e.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&e);
		if (!(root = node_new(YNODE_MAP, file, 1, 1))) {
			gw_errf(err, "%s: out of memory", file);
			goto fail;
		}
		goto done;
	}
	yaml_event_delete(&e); /* DOCUMENT_START: the parser emits nothing else here */
	if (next_event(&p, &e) < 0 || parse_node(&p, &e, 1, &root) < 0)
		goto fail;
	if (expect(&p, YAML_DOCUMENT_END_EVENT, "expected the end of the document") < 0 ||
	    expect(&p, YAML_STREAM_END_EVENT,
	           "only one YAML document is allowed (remove the second '---')") < 0)
		goto fail;
done:
	yaml_parser_delete(&p.parser);
	root->own_file = file;
	*out = root;
	return 0;
fail:
	yaml_parser_delete(&p.parser);
	node_free(root);
	free(file);
	return -1;
}

int ytree_parse_file(const char *path, struct ynode **out, struct gw_err *err)
{
	char *buf;
	size_t len;
	/* a regular file only: a FIFO or a device given as the configuration must not hang
	 * start-up (core/readfile.h) */
	if (readfile(path, YTREE_MAX_FILE, &buf, &len, err) < 0) {
		if (errno == EFBIG)
			gw_errf(err, "%s: larger than %d MiB; is this a configuration file?", path,
			        YTREE_MAX_FILE / (1024 * 1024));
		return -1;
	}
	int rc = ytree_parse(path, buf, len, out, err);
	free(buf);
	return rc;
}

/* A block map or list starts at its first entry, on a line below its key: a message about
 * it points at the key. One written in flow style on the key's line ("groups: []") points
 * at itself, where the wrong thing is. */
static const struct ynode *pointed(const struct ynode *n)
{
	return n->type != YNODE_SCALAR && n->key && n->line != n->key->line ? n->key : n;
}

int ytree_line(const struct ynode *n)
{
	return pointed(n)->line;
}

int ytree_col(const struct ynode *n)
{
	return pointed(n)->col;
}

const struct ynode *ytree_get(const struct ynode *map, const char *key)
{
	if (!map || map->type != YNODE_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i]->text, key) == 0)
			return map->items[i];
	return NULL;
}

const char *ytree_type_name(const struct ynode *n)
{
	if (!n)
		return "nothing";
	switch (n->type) {
	case YNODE_MAP:
		return "a map";
	case YNODE_SEQ:
		return "a list";
	case YNODE_SCALAR:
		return n->null ? "null" : "a string";
	}
	return "?";
}
