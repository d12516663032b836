/*
 * Secret fields kept out of GET /config/<GROUP>: the one list (docs/operations.md prints it)
 * of the item fields whose values are credentials. A field of that name, in any letter case,
 * anywhere in an item (nested objects and arrays included, and inside the JSON documents
 * ShenYu keeps in string fields such as a plugin's `config` or a rule's `handle`) has its
 * value replaced by "<redacted>".
 *
 * Items that hold none of the names and no escape sequence (a name spelled with \u escapes
 * must not slip through) are copied as they are, byte for byte: on a group of 100,000 items
 * the check is a substring search per item, and only the few that may hold a secret are
 * parsed.
 */
#ifndef GW_REDACT_H
#define GW_REDACT_H

#include <stddef.h>

#include "shared/strbuf.h"

#define REDACTED "<redacted>"

/* The field names, NULL-terminated. */
extern const char *const redact_fields[];

/* Append the item `json` (len bytes, NUL-terminated) to b with its secret fields' values
 * replaced; *redacted (may be NULL) counts the values replaced. -1 on out of memory. */
int redact_item(struct strbuf *b, const char *json, size_t len, size_t *redacted);

#endif
