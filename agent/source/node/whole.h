/*
 * The whole-group documents of ShenYu 2.4 to 2.6.0 (node.h, NODE_LAYOUT_WHOLE): one JSON
 * object per group whose members are one item (plugin, auth, meta) or an array of items
 * (selector, rule, proxy selector), exploded into one mirror node per item so that the
 * mirror patches a group at the cost of what changed in the document, and deletes what
 * left it. Private to source/node/.
 */
#ifndef GW_NODE_WHOLE_H
#define GW_NODE_WHOLE_H

#include <stddef.h>

#include "core/error.h"

/* One item of a document: its mirror path (dir + "/" + member [+ "/" + the item's id or
 * its index]) and its JSON. */
typedef int (*node_item_fn)(void *ctx, const char *path, size_t plen, const char *value,
                            size_t vlen);

/*
 * Explode the document [doc, doc + len) into items under the mirror directory `dir`
 * ("/n/selector"), calling fn for each (stopping at its first non-zero return, which is
 * returned). -1 (err says why), before any call, when the document is not a JSON object or
 * a member is neither an object nor an array of objects: the caller keeps its last good
 * document.
 */
int node_whole_explode(const char *dir, const char *doc, size_t len, node_item_fn fn, void *ctx,
                       struct gw_err *err);

#endif
