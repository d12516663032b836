/*
 * Item keys: the one table of what each group's items are known by. Deltas, patches of
 * event sources, DELETE events and every subscriber's view (gw_item.key, the LMDB cache's
 * keys) go by it, so it must be the identity ShenYu's own gateway uses for the group;
 * docs/keys.md is the same table for readers, with the ShenYu source behind each row.
 */
#ifndef GW_MODEL_KEYS_H
#define GW_MODEL_KEYS_H

#include <gwsync/subscriber.h>
#include <jansson.h>

#include "core/arena.h"
#include "model/item.h"

/* Separator of a key made of two fields (ShenYu's AiProxyApiKeyCache uses the same). */
#define KEY_SEPARATOR "::"

/* The key's field names, e.g. "id" or "selectorId::proxyApiKey" (for messages and docs). */
const char *key_describe(enum gw_group g);

/* A key as messages may show it: an AI proxy API key's own part is a credential the
 * gateway's clients present, so only its first 4 characters are shown
 * ("sel-1::sk-s..."); every other key as it is. Returns buf. */
const char *key_display(enum gw_group g, const char *key, char *buf, size_t cap);

/* The one field a group's key is, or NULL when it is made of several (the caller then
 * cannot look a key up in raw text by one member). */
const char *key_single_field(enum gw_group g);

/* The i-th field (0 or 1) of g's key, or NULL when the key has fewer. */
const char *key_field(enum gw_group g, size_t i);

/* An item's second identity, for the one group whose key is not its id: a plugin is keyed
 * by name, but a plugin renamed in the admin keeps its id (it arrives as an update of that
 * id under the new name), so the id says which held plugin a new name replaces. PLUGIN's
 * `id` (a non-empty string), read from the item's JSON into arena a; NULL for every other
 * group, for a plugin without one, and on out of memory. */
const char *key_alias(enum gw_group g, const struct gd_item *it, struct arena *a);

/* The key of item `obj` of group `g`: every key field must be a non-empty string.
 * A single field's key points into `obj` (valid while obj lives); a composite key is
 * built in `a`. NULL when a field is missing or empty (*missing names it) or on out of
 * memory (*missing NULL). */
const char *key_of(enum gw_group g, const json_t *obj, struct arena *a, const char **missing);

#endif
