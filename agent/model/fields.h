/*
 * What each group's items look like to the plugin ABI: one table per typed struct of
 * <gwsync/subscriber.h> (JSON name, kind, offset), and the context and messages of
 * filling one item. Shared by the two fillers of an item, the direct decoder the agent
 * runs (itemdec.h) and the jansson one it is checked against (tests/unit/itemref.h), and
 * by the model's copying of unchanged items, so a field the admin grows later is one table
 * row and the two fillers can never disagree on what the fields are or how errors read.
 * Strictness: a field that is null or missing takes its "unset" value; a field of the
 * wrong type refuses the whole group version, naming group, item and field.
 */
#ifndef GW_MODEL_FIELDS_H
#define GW_MODEL_FIELDS_H

#include <gwsync/subscriber.h>
#include <jansson.h>
#include <stddef.h>

#include "core/arena.h"
#include "core/error.h"
#include "model/groupdata.h"
#include "model/intern.h"

enum field_kind { K_STR, K_STR_OR_NUM, K_INT, K_BOOL, K_CONDS, K_PARAMS, K_PATHS };

struct field {
	const char *json;
	size_t json_len;
	enum field_kind kind;
	size_t off;
	size_t count_off; /* lists only: where the element count goes */
};

/* The element shape of a nested list (conditions, params, paths). */
struct list_shape {
	const struct field *fields;
	size_t n, size;
};

/* How a group maps onto the ABI. Newer groups have no fields: key + raw JSON only. */
struct group_shape {
	const struct field *fields;
	size_t n_fields;
	size_t size;         /* of the typed struct */
	size_t item_ptr_off; /* where in struct gw_item the typed pointer goes */
	const char *name;    /* the display name field (the key is model/keys.c's) */
};

const struct group_shape *fields_group(enum gw_group g);
/* The element shape of a list kind (K_CONDS, K_PARAMS, K_PATHS). */
const struct list_shape *fields_list(enum field_kind k);
/* Index in g's fields of the display name field, or -1 (no typed fields). */
int fields_name_index(enum gw_group g);

/* Filling one item of one version. */
struct item_ctx {
	struct group_data *gd;
	struct arena *mem; /* where new item contents go: the version's own pool */
	int adopt;         /* items' raw JSON points into the reply's text (no copy) */
	struct gw_err *err;
	const char *group;
	size_t index;
	const char *key;       /* the item's key once known, for messages */
	int *syntax;           /* set to 1 when the failure is text that is not JSON */
	int untyped;           /* check the typed fields, do not make them (model/typed.h) */
	struct intern *intern; /* typed strings shared through it (NULL: each its own) */
};

/* it->group, it->json (copied or adopted), it->json_len and the version's byte count. */
int item_set_json(struct item_ctx *c, enum gw_group g, const char *raw, size_t len,
                  struct gw_item *it);

/* The refusals both fillers give, worded once. `got` is a JSON type name: "object",
 * "array", "string", "integer", "number" (a real), "boolean" or "null". All return -1. */
int item_err_field(struct item_ctx *c, const char *field, const char *want, const char *got);
int item_err_not_object(struct item_ctx *c, const char *got);
int item_err_missing_key(struct item_ctx *c, enum gw_group g, const char *missing);
int item_err_oom(struct item_ctx *c);
/* Text that is not JSON: where and why, as jansson says (`raw` is parsed again, on this
 * error path only), or that it holds a NUL byte. Sets *c->syntax. */
int item_err_not_json(struct item_ctx *c, const char *raw, size_t len);

/* The JSON type name (as above) of the value whose text begins at v (valid JSON), and of a
 * jansson value: the one wording of every "want X, got Y" message. */
const char *item_text_type(const char *v);
const char *item_json_type(const json_t *v);
/* A number at v is an integer to jansson: no fraction and no exponent. */
int item_text_is_int(const char *v);
/* The same for a value that may end the text: nothing at or past end is read (v < end). */
const char *item_text_type_at(const char *v, const char *end);
int item_text_is_int_at(const char *v, const char *end);

#endif
