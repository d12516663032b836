/*
 * A small, read-only YAML document tree built from libyaml's event parser. The agent needs
 * positions for every message ("FILE:LINE:COL: key: ...") and needs to tell a plain `null`
 * from a quoted "null", which libyaml's own document API does not make convenient; this
 * tree keeps both. Scalars are not typed here: they stay text, and the reader of a key
 * decides what it must be (config.c, plugin_config.c), so "0640" stays "0640" and never
 * becomes the YAML 1.1 integer 416.
 *
 * Deliberately refused, each with a positioned message: anchors and aliases (a config file
 * does not need them and they make positions ambiguous), tags other than !!str, non-scalar
 * map keys, duplicate keys in a map, NUL characters in scalars, more than one document,
 * nesting deeper than YTREE_MAX_DEPTH.
 */
#ifndef GW_YTREE_H
#define GW_YTREE_H

#include <stddef.h>

#include "core/error.h"

#define YTREE_MAX_DEPTH 64
#define YTREE_MAX_FILE  (4 * 1024 * 1024) /* bytes; a config file is a few KiB */

enum ynode_type { YNODE_SCALAR = 1, YNODE_MAP, YNODE_SEQ };

struct ynode {
	enum ynode_type type;
	const char *file;        /* the document's name, for messages; owned by the root */
	char *own_file;          /* the root's: `file`, freed with it; NULL elsewhere */
	int line, col;           /* 1-based; where the node starts (a block map or list starts at
	                          * its first entry: ytree_line() says where a message points) */
	const struct ynode *key; /* in a map: the key this node is the value of; else NULL */

	/* YNODE_SCALAR */
	const char *text; /* NUL-terminated, never NULL */
	char *own_text;   /* `text` when the node owns it (freed with it); NULL when the text is
	                   * borrowed, as a declared default's is */
	size_t len;
	int plain; /* written without quotes or block indicator */
	int null;  /* YAML null: a plain "", "~", "null", "Null" or "NULL" */

	/* YNODE_MAP: keys[i] (always scalars) maps to items[i], in file order.
	 * YNODE_SEQ: items[i]. */
	struct ynode **keys;
	struct ynode **items;
	size_t n;
};

/*
 * Parse `len` bytes of YAML text named `name` (used in messages). A stream with no
 * document at all (empty, or only comments) gives an empty map at 1:1. On error returns -1
 * with err->msg "NAME:LINE:COL: message".
 */
int ytree_parse(const char *name, const char *text, size_t len, struct ynode **out,
                struct gw_err *err);

/* Read and parse a file (at most YTREE_MAX_FILE bytes). */
int ytree_parse_file(const char *path, struct ynode **out, struct gw_err *err);

/* Free a tree returned by ytree_parse*() (the root only). NULL is fine. */
void ytree_free(struct ynode *root);

/* A new empty map, a root of its own (free with ytree_free), for "absent means empty". */
struct ynode *ytree_new_map(const char *file, int line, int col);

/* The value of `key` in a map, or NULL if absent (or `map` is not a map). */
const struct ynode *ytree_get(const struct ynode *map, const char *key);

/* Where a message about `n` points: a block map or list that is the value of a key at that
 * key (the section `zookeeper:` is named by its key's line, not by its first child's);
 * anything else at the node itself (a scalar, or a flow "[...]" on its key's line). */
int ytree_line(const struct ynode *n);
int ytree_col(const struct ynode *n);

/* "a string", "a map", "a list" or "null": for "expected X, got Y" messages. */
const char *ytree_type_name(const struct ynode *n);

#endif
